"""Checkpointers from settings: SQLite (default), PostgreSQL, or in memory."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from groupmind.settings import Settings


def make_checkpointer(settings: Settings) -> BaseCheckpointSaver[str]:
    if settings.checkpointer == "memory":
        return InMemorySaver()
    if settings.checkpointer == "postgres":
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg import Connection
        from psycopg.rows import dict_row

        url = settings.resolved_checkpoint_url.replace("postgresql+psycopg://", "postgresql://")
        pg_conn = Connection.connect(
            url, autocommit=True, prepare_threshold=0, row_factory=dict_row
        )
        pg = PostgresSaver(pg_conn)
        pg.setup()
        return pg
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = Path(settings.resolved_checkpoint_url)
    path.parent.mkdir(parents=True, exist_ok=True)
    sqlite_conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
    sqlite_conn.execute("PRAGMA journal_mode=WAL")
    saver = SqliteSaver(sqlite_conn)
    saver.setup()
    return saver
