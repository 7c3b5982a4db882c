"""The PostgreSQL checkpointer serves a worker's threads side by side: one thread's
statement in flight does not hold up another's (the saver's own lock, kept for a single
shared connection, would), and what they write concurrently is all there."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from groupmind.checkpoint import make_checkpointer
from groupmind.settings import Settings

pytestmark = pytest.mark.postgres


def config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


def test_a_statement_in_flight_does_not_hold_up_another_thread(pg_database: str) -> None:
    settings = Settings(_env_file=None, checkpointer="postgres", checkpoint_url=pg_database)  # type: ignore[call-arg]
    saver = make_checkpointer(settings)
    saver.put(config("t0"), empty_checkpoint(), {}, {})
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with saver._cursor() as cur:  # type: ignore[attr-defined]
            cur.execute("SELECT 1")
            holding.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(10)
        reader = ThreadPoolExecutor(1).submit(saver.get_tuple, config("t0"))
        got = reader.result(timeout=10)  # with the saver's lock: waits for the release
        assert got is not None and got.config["configurable"]["thread_id"] == "t0"
    finally:
        release.set()
        holder.join(10)


def test_concurrent_writes_are_all_kept(pg_database: str) -> None:
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, checkpointer="postgres", checkpoint_url=pg_database, worker_threads=8
    )
    saver = make_checkpointer(settings)
    threads = [f"t{i}" for i in range(40)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda t: saver.put(config(t), empty_checkpoint(), {}, {}), threads))
    assert all(saver.get_tuple(config(t)) is not None for t in threads)
