"""Checkpointers from settings: SQLite (default), PostgreSQL, or in memory."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver

from groupmind.settings import Settings

log = logging.getLogger(__name__)

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
        # one connection for each of a worker's threads, and at least four
        return _postgres(settings.resolved_checkpoint_url, max(4, settings.worker_threads))
    path = Path(settings.resolved_checkpoint_url)
    path.parent.mkdir(parents=True, exist_ok=True)
    sqlite_conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
    sqlite_conn.execute("PRAGMA journal_mode=WAL")
    # As the SQL store: a commit survives kill -9 (WAL), and a step no longer waits for an
    # fsync (a dozen a memory job: docs/benchmarks/constants.md); only a power cut can lose
    # the last steps.
    sqlite_conn.execute("PRAGMA synchronous=NORMAL")
    saver = PrunableSqliteSaver(sqlite_conn, serde=serde())
    saver.setup()
    return saver


# A thread's checkpoints but the newest of each namespace (what the next run loads).
NOT_LATEST = (
    "thread_id = ? AND checkpoint_id NOT IN (SELECT MAX(checkpoint_id) FROM "
    "checkpoints WHERE thread_id = ? GROUP BY checkpoint_ns)"
)


class PrunableSqliteSaver(SqliteSaver):
    """SQLite's saver with the ``prune`` PostgreSQL's has: a reply thread gains a
    checkpoint of ~30 KB per message, forever (8 MB per 300 messages, measured), unless
    its history is pruned to the latest."""

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        for thread_id in map(str, thread_ids):
            if strategy == "delete":
                self.delete_thread(thread_id)
                continue
            with self.lock, self.conn:
                self.conn.execute(f"DELETE FROM writes WHERE {NOT_LATEST}", (thread_id, thread_id))
                self.conn.execute(
                    f"DELETE FROM checkpoints WHERE {NOT_LATEST}", (thread_id, thread_id)
                )


class ThreadPruner:
    """Every ``every`` runs of a thread in this process, its history goes (``prune``, in
    the background, off the reply's path). 0: keep every checkpoint (time travel)."""

    def __init__(
        self, saver: BaseCheckpointSaver[str], every: int, run: Callable[[Callable[[], Any]], Any]
    ) -> None:
        self.saver, self.every, self.run = saver, every, run
        self._runs: dict[str, int] = {}
        self._lock = threading.Lock()

    def ran(self, thread_id: str) -> None:
        if not self.every:
            return
        with self._lock:
            n = self._runs[thread_id] = self._runs.get(thread_id, 0) + 1
            if n % self.every:
                return
        self.run(partial(prune_threads, self.saver, [thread_id]))


def thread_ids(saver: BaseCheckpointSaver[str]) -> list[str]:
    """Every thread the saver holds (SQLite and PostgreSQL by a query; others by a scan)."""
    distinct = "SELECT DISTINCT thread_id FROM checkpoints"
    if isinstance(saver, SqliteSaver):
        with saver.cursor(transaction=False) as cur:
            return [row[0] for row in cur.execute(distinct)]
    pool = getattr(saver, "conn", None)
    if pool is not None and hasattr(pool, "connection"):  # PostgresSaver over a pool
        with pool.connection() as conn:
            return [row["thread_id"] for row in conn.execute(distinct)]
    return sorted({c.config["configurable"]["thread_id"] for c in saver.list(None)})


def prune_threads(saver: BaseCheckpointSaver[str], thread_ids: Sequence[str]) -> int:
    """Keep each thread's latest checkpoint; how many threads were pruned. Never raises:
    a thread left unpruned is pruned next time."""
    try:
        saver.prune(list(thread_ids), strategy="keep_latest")
    except NotImplementedError:
        return 0
    except Exception:  # noqa: BLE001 - disk space, never the reply, is at stake
        log.warning("could not prune checkpoints of %d threads", len(thread_ids), exc_info=True)
        return 0
    return len(thread_ids)


_SETUP_LOCK = 0x67636B70  # any constant: one process sets up the checkpoint tables at a time


def _postgres(url: str, size: int) -> BaseCheckpointSaver[str]:
    """A PostgreSQL checkpointer over a connection pool: a connection broken by a server
    restart is checked and replaced on its next use, so a long-lived process carries on.
    Its tables are set up under an advisory lock, so processes starting together on an
    empty database do not race on the checkpointer's own migrations."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    from stores.sql.ping import CheckWhenIdle

    url = url.replace("postgresql+psycopg://", "postgresql://")
    pool: ConnectionPool[Any] = ConnectionPool(
        url,
        min_size=1,
        max_size=size,
        kwargs={
            "autocommit": True,
            "prepare_threshold": 0,
            "row_factory": dict_row,
            # Commits wait for the disk: with synchronous_commit=off (tried: ~5 % more jobs
            # a second), a crash of the server could bring back a thread forget had deleted.
        },
        check=CheckWhenIdle(),
        open=True,
    )
    # The tables are made over a connection of their own, with the lock held on it: a
    # crash right after the setup must not lose its last migrations (a column every write
    # needs): the setup does not run again (tests/groupmind/test_checkpoint_setup.py).
    with psycopg.Connection.connect(
        url, autocommit=True, prepare_threshold=0, row_factory=dict_row
    ) as conn:
        # Polled, not waited on: a session blocked in pg_advisory_lock holds a snapshot,
        # and the setup's CREATE INDEX CONCURRENTLY would wait for it (a deadlock).
        while not _try_lock(conn):
            time.sleep(0.2)
        try:
            PostgresSaver(conn, serde=serde()).setup()
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK,))
    saver = PostgresSaver(pool, serde=serde())
    # The saver holds one lock around every statement, which a single shared connection
    # needs; over a pool each caller has its own connection, so a worker's threads would
    # only queue behind each other's commits. As many holders as the pool has connections.
    saver.lock = threading.BoundedSemaphore(size)  # type: ignore[assignment]
    return saver


def _try_lock(conn: Any) -> bool:
    row = conn.execute("SELECT pg_try_advisory_lock(%s) AS got", (_SETUP_LOCK,)).fetchone()
    return bool(row and row["got"])
