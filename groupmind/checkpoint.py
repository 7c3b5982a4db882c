"""Checkpointers from settings: SQLite (default), PostgreSQL, or in memory."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from groupmind.settings import Settings

# The models kept in graph state (validated once, then carried): read back as themselves;
# anything else beyond LangGraph's safe types is refused rather than imported.
STATE_MODELS = [
    ("state.reply", "ChatMessage"),
    ("state.memory", "MemoryJob"),
    ("state.memory", "RecentMessage"),
    ("state.memory", "KeyFact"),
]


def serde() -> JsonPlusSerializer:
    return JsonPlusSerializer(allowed_msgpack_modules=STATE_MODELS)


def make_checkpointer(settings: Settings) -> BaseCheckpointSaver[str]:
    if settings.checkpointer == "memory":
        return InMemorySaver(serde=serde())
    if settings.checkpointer == "postgres":
        return _postgres(settings.resolved_checkpoint_url)
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = Path(settings.resolved_checkpoint_url)
    path.parent.mkdir(parents=True, exist_ok=True)
    sqlite_conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
    sqlite_conn.execute("PRAGMA journal_mode=WAL")
    saver = SqliteSaver(sqlite_conn, serde=serde())
    saver.setup()
    return saver


_SETUP_LOCK = 0x67636B70  # any constant: one process sets up the checkpoint tables at a time


def _postgres(url: str) -> BaseCheckpointSaver[str]:
    """A PostgreSQL checkpointer over a connection pool: a connection broken by a server
    restart is checked and replaced on its next use, so a long-lived process carries on.
    Its tables are set up under an advisory lock, so processes starting together on an
    empty database do not race on the checkpointer's own migrations."""
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    url = url.replace("postgresql+psycopg://", "postgresql://")
    pool: ConnectionPool[Any] = ConnectionPool(
        url,
        min_size=1,
        max_size=4,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        check=ConnectionPool.check_connection,
        open=True,
    )
    saver = PostgresSaver(pool, serde=serde())
    with pool.connection() as conn:
        # Polled, not waited on: a session blocked in pg_advisory_lock holds a snapshot,
        # and the setup's CREATE INDEX CONCURRENTLY would wait for it (a deadlock).
        while not _try_lock(conn):
            time.sleep(0.2)
        try:
            saver.setup()
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK,))
    return saver


def _try_lock(conn: Any) -> bool:
    row = conn.execute("SELECT pg_try_advisory_lock(%s) AS got", (_SETUP_LOCK,)).fetchone()
    return bool(row and row["got"])
