"""Build the stores, models and graphs a deployment uses, from its settings."""

from __future__ import annotations

import gc
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, cast

from langchain_core.embeddings import Embeddings
from langgraph.checkpoint.base import BaseCheckpointSaver
from sqlalchemy import Engine

from graphs.memory import build_memory_graph
from groupmind.background import BackgroundWorker
from groupmind.checkpoint import make_checkpointer
from groupmind.providers import embedding_name, make_chat_model, make_embeddings
from groupmind.settings import Settings
from groupmind.worker import MemoryWorker
from nodes.deps import Deps, need
from nodes.model import Prices, StructuredOutput
from nodes.reply.emoji import StickerIndex, load_library
from state.context import Context
from stores.chroma import ChromaEventStore, make_client
from stores.hybrid import HybridEventStore
from stores.personas_file import FilePersonaStore
from stores.sql import (
    SqlChatStates,
    SqlContextUsage,
    SqlJobQueue,
    SqlLexicalIndex,
    SqlMessageStore,
    SqlPersonaStore,
    SqlProfileStore,
    SqlRunInbox,
    make_engine,
    migrate,
)
from stores.text import terms


@dataclass
class Runtime:
    settings: Settings
    engine: Engine
    embeddings: Embeddings
    deps: Deps
    jobs: SqlJobQueue
    wake: threading.Event = field(default_factory=threading.Event)
    background: BackgroundWorker | None = None

    @property
    def checkpoints(self) -> BaseCheckpointSaver[str]:
        """This process's checkpointer (memory jobs and in-process reply threads)."""
        return need(self.deps.checkpoints, "checkpoints")

    def memory_worker(self, *, variants: dict[str, str] | None = None) -> MemoryWorker:
        """A worker over the durable queue, with the configured checkpointer."""
        graph = build_memory_graph(self.deps, checkpointer=self.checkpoints)
        context = Context(variants=variants or {})
        return MemoryWorker(graph, self.jobs, self.deps, self.settings, context=context)

    def start_background_worker(self) -> BackgroundWorker:
        """Run hand-off's memory jobs in this process, as they are written."""
        if self.background is None:
            self.background = BackgroundWorker(self.memory_worker(), self.wake).start()
        return self.background


def build_runtime(settings: Settings) -> Runtime:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    engine = make_engine(settings.resolved_sql_url)
    migrate(engine, default_platform=settings.default_platform)
    embeddings = make_embeddings(settings)
    client = make_client(settings.resolved_chroma_path, settings.chroma_host, settings.chroma_port)
    wake = threading.Event()
    deps = build_deps(
        settings,
        engine,
        client,
        embeddings,
        chat=make_chat_model(settings),
        background=ThreadPoolExecutor(max_workers=1, thread_name_prefix="groupmind-bg"),
        on_job=wake.set,
        checkpoints=make_checkpointer(settings),
    )
    settle_heap()
    return Runtime(settings, engine, embeddings, deps, cast(SqlJobQueue, deps.jobs), wake)


def build_deps(
    settings: Settings, engine: Engine, client: Any, embeddings: Embeddings, **overrides: Any
) -> Deps:
    """Every store over one SQL engine and one Chroma client, with the settings' knobs;
    ``overrides`` replace Deps fields (the chat model, the background executor, ...)."""
    model = embedding_name(embeddings)
    fields: dict[str, Any] = {
        "events": HybridEventStore(
            ChromaEventStore(client, embeddings, model, default_platform=settings.default_platform),
            SqlLexicalIndex(engine),
            max_vectors_held=settings.vectors_held,
        ),
        "profiles": SqlProfileStore(engine),
        "personas": FilePersonaStore(
            settings.resolved_personas_file, fallback=SqlPersonaStore(engine)
        ),
        "tz": settings.tz,
        "default_platform": settings.default_platform,
        "profile_sharing": settings.profile_sharing,
        "max_text_chars": settings.max_text_chars,
        "max_gate_attempts": settings.max_gate_attempts,
        "messages": SqlMessageStore(engine),
        "chat_states": SqlChatStates(engine),
        "context_usage": SqlContextUsage(engine),
        "jobs": SqlJobQueue(engine),
        "run_inbox": SqlRunInbox(engine),
        "stickers": StickerIndex(
            client, embeddings, model, load_library(settings.resolved_stickers_dir)
        ),
        "bot_id": settings.bot_id,
        "rank": settings.rank,
        "chat_rules": settings.chat,
        "auto_top_k": settings.auto_top_k,
        "structured": StructuredOutput(mode=settings.structured_output),
        "prices": Prices(settings.chat_price_prompt_per_1k, settings.chat_price_completion_per_1k),
    }
    return Deps(**{**fields, **overrides})


def settle_heap() -> None:
    """Load jieba's dictionary now, then move everything alive out of the garbage
    collector's full scans (gc.freeze): with that heap (jieba's ~350k words, the library
    modules) a full collection took 100-600 ms at random points of a reply."""
    terms("预热 warm-up")
    gc.collect()
    gc.freeze()


_OPENING = threading.Lock()


@lru_cache(maxsize=1)
def _runtime() -> Runtime:
    return build_runtime(Settings())


def open_runtime() -> Runtime:
    """The process-wide runtime for graph factories (langgraph.json), from the environment:
    built once, even when the server's first requests come in side by side."""
    with _OPENING:
        return _runtime()
