"""Build the stores, models and graphs a deployment uses, from its settings."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from langchain_core.embeddings import Embeddings
from sqlalchemy import Engine

from groupmind.providers import embedding_name, make_chat_model, make_embeddings
from groupmind.settings import Settings
from nodes.deps import Deps
from stores.chroma import ChromaEventStore, ChromaProfileIndex, make_client
from stores.hybrid import HybridEventStore
from stores.sql import (
    SqlJobQueue,
    SqlLexicalIndex,
    SqlPersonaStore,
    SqlProfileStore,
    make_engine,
    migrate,
)


@dataclass(frozen=True)
class Runtime:
    settings: Settings
    engine: Engine
    embeddings: Embeddings
    deps: Deps
    jobs: SqlJobQueue


def build_runtime(settings: Settings) -> Runtime:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    engine = make_engine(settings.resolved_sql_url)
    migrate(engine)
    embeddings = make_embeddings(settings)
    model = embedding_name(embeddings)
    client = make_client(settings.resolved_chroma_path, settings.chroma_host, settings.chroma_port)
    deps = Deps(
        events=HybridEventStore(
            ChromaEventStore(client, embeddings, model), SqlLexicalIndex(engine)
        ),
        profiles=SqlProfileStore(engine),
        personas=SqlPersonaStore(engine),
        profile_index=ChromaProfileIndex(client, embeddings, model),
        chat=make_chat_model(settings),
        tz=settings.tz,
        max_text_chars=settings.max_text_chars,
    )
    return Runtime(settings, engine, embeddings, deps, SqlJobQueue(engine))


@lru_cache(maxsize=1)
def open_runtime() -> Runtime:
    """The process-wide runtime for graph factories (langgraph.json), from the environment."""
    return build_runtime(Settings())
