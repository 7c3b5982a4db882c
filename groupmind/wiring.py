"""Build the stores, models and graphs a deployment uses, from its settings.

One process serves any number of bots (tenants): what is costly or shared (the SQL engine,
the Chroma client, the embeddings, the chat model, the checkpointer, the
sticker library, the held vectors) is built once; each bot gets its own ``Deps`` over it,
stores bound to the bot (``deps_for``), so nothing a bot reads, writes or erases is
another's.
"""

from __future__ import annotations

import gc
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from sqlalchemy import Engine
from sqlalchemy.engine import make_url

from domain.scope import ForgetTarget
from graphs.memory import MemoryGraph, build_memory_graph
from groupmind.checkpoint import make_checkpointer, prune_threads, thread_ids
from groupmind.copies import reach
from groupmind.memory_thread import BackgroundWorker
from groupmind.providers import embedding_name, make_chat_model, make_embeddings
from groupmind.settings import Settings, process_settings
from groupmind.worker import MemoryWorker
from nodes.deps import ForgetDeps, Knobs, Model, Process, ReplyDeps, ReplyThreads, need
from nodes.model import Prices, StructuredOutput
from nodes.reply.emoji import StickerIndex, load_library
from state.context import Context
from stores.chroma import ChromaEventVectors, make_client
from stores.compact import compact_postgres, compact_sqlite, purge_chroma
from stores.hybrid import HybridEventStore
from stores.journal import JournalAt
from stores.personas_file import FilePersonaStore
from stores.said import Said
from stores.scope_postings import ScopePostings
from stores.scope_vectors import ScopeVectors
from stores.sql import (
    SqlChatStates,
    SqlContextUsage,
    SqlEventStrength,
    SqlJobBoard,
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
class Shared:
    """What every bot's stores of one process share (personas are each bot's own: one
    store per bot's file, made once)."""

    held: ScopeVectors
    postings: ScopePostings
    pool: ThreadPoolExecutor
    stickers: StickerIndex
    settings: Settings
    engine: Engine
    _personas: dict[str, FilePersonaStore] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def personas(self, bot: str) -> FilePersonaStore:
        """The bot's personas file; personas put in SQL before the file existed are the
        deployment's own bot's only."""
        with self._lock:
            if bot not in self._personas:
                own = bot == self.settings.bot_id
                self._personas[bot] = FilePersonaStore(
                    self.settings.personas_file_of(bot),
                    fallback=SqlPersonaStore(self.engine) if own else None,
                )
            return self._personas[bot]


@dataclass
class Deployment:
    """What one process serves its bots from: the settings, the SQL engine, the embeddings
    and Chroma client, the deployment's own bot's deps and every other bot's (made once
    each, ``deps_for``), their memory graphs and the memory job board."""

    settings: Settings
    engine: Engine
    embeddings: Embeddings
    deps: ReplyDeps  # the deployment's own bot's (``settings.bot_id``)
    board: SqlJobBoard  # every bot's memory jobs
    client: Any = None
    shared: Shared | None = None
    wake: threading.Event = field(default_factory=threading.Event)
    background: BackgroundWorker | None = None
    _tenants: dict[str, ReplyDeps] = field(default_factory=dict)
    _memory_graphs: dict[str, MemoryGraph] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def checkpoints(self) -> BaseCheckpointSaver[str]:
        """This process's checkpointer (memory jobs and in-process reply threads)."""
        return need(self.deps.process.checkpoints, "checkpoints")

    def deps_for(self, bot: str) -> ReplyDeps:
        """The bot's own stores over this process's shared clients (made once per bot)."""
        if bot == self.deps.limits.bot_id:
            return self.deps
        with self._lock:
            if bot not in self._tenants:
                self._tenants[bot] = tenant_deps(
                    self.settings, self.engine, self.client, self.embeddings, bot,
                    self.shared, model=self.deps.model, process=self.deps.process,
                )  # fmt: skip
            return self._tenants[bot]

    def memory_graph(self, bot: str) -> MemoryGraph:
        """The memory graph over the bot's stores, with this process's checkpointer."""
        with self._lock:
            graph = self._memory_graphs.get(bot)
        if graph is None:
            graph = build_memory_graph(
                self.deps_for(bot), checkpointer=self.deps.process.checkpoints
            )
            with self._lock:
                graph = self._memory_graphs.setdefault(bot, graph)
        return graph

    def memory_worker(
        self, *, variants: dict[str, str] | None = None, bot: str | None = None
    ) -> MemoryWorker:
        """A worker over every bot's durable queue; ``bot`` is whose jobs ``submit`` queues."""
        return MemoryWorker(
            self, self.board, self.settings, bot=bot or self.deps.limits.bot_id,
            context=Context(variants=variants or {}),
        )  # fmt: skip

    def forget_deps(
        self, bot: str, threads: ReplyThreads | None, *, compact: bool = True
    ) -> ForgetDeps:
        """The bot's stores as forget runs on them: the reply threads to scrub, the copies
        groupmind made of the bot's data, and (``compact``) the engines' compaction after."""

        def copies(target: ForgetTarget, said: Said) -> dict[str, Any]:
            return reach(self.settings.data_dir, bot, target, said)

        return ForgetDeps.over(
            self.deps_for(bot),
            reply_threads=threads,
            copies=copies,
            compact=self.compact if compact else None,
        )

    def compact(self, *, full: bool = False) -> dict[str, str]:
        """Have the engines let go of what they keep of deleted rows on disk (after a
        forget; ``groupmind compact``): a line per store (``stores.compact``). First every
        thread's checkpoint history goes, its latest kept (unless KEEP_CHECKPOINTS)."""
        done = {}
        saver = self.deps.process.checkpoints
        if saver is not None and not self.settings.keep_checkpoints:
            pruned = prune_threads(saver, thread_ids(saver))
            done["history"] = f"{pruned} threads pruned to their latest checkpoint"
        return done | compact_stores(self.settings, self.engine, full=full)

    def start_background_worker(self) -> BackgroundWorker:
        """Run hand-off's memory jobs in this process, as they are written."""
        if self.background is None:
            self.background = BackgroundWorker(self.memory_worker(), self.wake).start()
        return self.background


def build_runtime(settings: Settings, *, checkpoints: bool = True) -> Deployment:
    """``checkpoints=False``: no checkpointer (commands that only read the stores)."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    engine = make_engine(settings.resolved_sql_url)
    migrate(engine, default_platform=settings.default_platform, owner=settings.owner)
    embeddings = make_embeddings(settings)
    client = make_client(settings.resolved_chroma_path, settings.chroma_host, settings.chroma_port)
    wake = threading.Event()
    shared = shared_parts(settings, engine, client, embeddings)
    deps = tenant_deps(
        settings,
        engine,
        client,
        embeddings,
        settings.bot_id,
        shared,
        model=model_of(settings, make_chat_model(settings)),
        process=Process(
            background=ThreadPoolExecutor(max_workers=1, thread_name_prefix="groupmind-bg"),
            on_job=wake.set,
            checkpoints=make_checkpointer(settings) if checkpoints else None,
        ),
    )
    settle_heap()
    board = SqlJobBoard(engine)
    return Deployment(settings, engine, embeddings, deps, board, client, shared, wake)


def shared_parts(settings: Settings, engine: Engine, client: Any, embeddings: Embeddings) -> Shared:
    return Shared(
        held=ScopeVectors(max_vectors=settings.vectors_held),
        postings=ScopePostings(max_events=settings.vectors_held),
        pool=ThreadPoolExecutor(max_workers=3, thread_name_prefix="hybrid"),
        stickers=StickerIndex(
            client,
            embeddings,
            embedding_name(embeddings),
            load_library(settings.resolved_stickers_dir),
        ),
        settings=settings,
        engine=engine,
    )


def model_of(settings: Settings, chat: BaseChatModel | None = None) -> Model:
    """The chat model (None: offline) as the settings call it and price it."""
    return Model(
        chat=chat,
        structured=StructuredOutput(mode=settings.structured_output),
        prices=Prices(settings.chat_price_prompt_per_1k, settings.chat_price_completion_per_1k),
    )


def tenant_deps(
    settings: Settings,
    engine: Engine,
    client: Any,
    embeddings: Embeddings,
    bot: str,
    shared: Shared | None = None,
    *,
    model: Model | None = None,
    process: Process | None = None,
    **overrides: Any,
) -> ReplyDeps:
    """One bot's stores over one SQL engine and one Chroma client, with the bot's limits
    and the settings' knobs; the ``model`` and ``process`` given are shared as they are
    (a new one of each otherwise); ``overrides`` replace fields (tests)."""
    shared = shared or shared_parts(settings, engine, client, embeddings)
    fields: dict[str, Any] = {
        "events": HybridEventStore(
            ChromaEventVectors(
                client,
                embeddings,
                embedding_name(embeddings),
                bot=bot,
                owner=settings.owner,
                default_platform=settings.default_platform,
            ),
            SqlLexicalIndex(engine, bot=bot, held=shared.postings),
            bot=bot,
            held=shared.held,
            pool=shared.pool,
            fusion=settings.search,
            strength=SqlEventStrength(engine, bot=bot),
            decay=settings.decay,
        ),  # fmt: skip
        "profiles": SqlProfileStore(engine, bot=bot),
        "personas": shared.personas(bot),
        "messages": SqlMessageStore(engine, bot=bot),
        "chat_states": SqlChatStates(engine, bot=bot),
        "context_usage": SqlContextUsage(engine, bot=bot),
        "jobs": SqlJobBoard(engine).queue(bot),
        "run_inbox": SqlRunInbox(engine, bot=bot),
        "bridge_journal": JournalAt(settings.resolved_onebot_journal, bot),
        "stickers": shared.stickers,
        "limits": settings.limits_of(bot),
        "knobs": Knobs(
            rank=settings.rank,
            chat_rules=settings.chat_states,
            auto_top_k=settings.auto_top_k,
            reply_history=settings.reply_history,
            earlier_memories=settings.earlier_memories,
        ),
        "model": model or model_of(settings),
        "process": process or Process(),
    }
    return ReplyDeps(**{**fields, **overrides})


def build_deps(
    settings: Settings,
    engine: Engine,
    client: Any,
    embeddings: Embeddings,
    *,
    chat: BaseChatModel | None = None,
    **overrides: Any,
) -> ReplyDeps:
    """The deployment's own bot's stores over ``chat`` (tests and tools that need one bot)."""
    return tenant_deps(
        settings, engine, client, embeddings, settings.bot_id,
        model=model_of(settings, chat), **overrides,
    )  # fmt: skip


def compact_stores(settings: Settings, engine: Engine, *, full: bool = False) -> dict[str, str]:
    from stores.sql.schema import Base

    done: dict[str, str] = {}
    url = make_url(settings.resolved_sql_url)
    if url.get_backend_name() == "sqlite":
        done["sql"] = compact_sqlite(Path(url.database or ""))
    else:
        tables = [t.name for t in Base.metadata.sorted_tables]
        done["sql"] = compact_postgres(engine, tables, full=full)
    if settings.checkpointer == "sqlite":
        done["checkpoints"] = compact_sqlite(Path(settings.resolved_checkpoint_url))
    elif settings.checkpointer == "postgres":
        with_checkpoints = make_engine(settings.resolved_checkpoint_url)
        tables = ["checkpoints", "checkpoint_blobs", "checkpoint_writes"]
        done["checkpoints"] = compact_postgres(with_checkpoints, tables, full=full)
        with_checkpoints.dispose()
    if settings.server_checkpoints_path.exists():  # `langgraph dev`'s reply threads
        done["server_checkpoints"] = compact_sqlite(settings.server_checkpoints_path)
    if settings.resolved_onebot_journal.exists():
        done["bridge_journal"] = compact_sqlite(settings.resolved_onebot_journal)
    if settings.chroma_host:
        done["chroma"] = (
            "a Chroma server: run `groupmind compact --chroma-path PATH` on its host, with "
            "its data path"
        )
    else:
        done["chroma"] = purge_chroma(settings.resolved_chroma_path / "chroma.sqlite3")
    return done


def settle_heap() -> None:
    """Load jieba's dictionary now, then move everything alive out of the garbage
    collector's full scans (gc.freeze): with that heap (jieba's ~350k words, the library
    modules) a full collection took 100-600 ms at random points of a reply."""
    terms("预热 warm-up")
    gc.collect()
    gc.freeze()


_OPENING = threading.Lock()


@lru_cache(maxsize=1)
def _runtime() -> Deployment:
    return build_runtime(process_settings())


def open_runtime() -> Deployment:
    """The process-wide runtime for graph factories (langgraph.json), from the environment:
    built once, even when the server's first requests come in side by side."""
    with _OPENING:
        return _runtime()
