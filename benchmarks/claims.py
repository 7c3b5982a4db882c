"""The memory queue's claim as a bot's history grows: finished jobs stay in ``memory_jobs``
(their outcome is the record), so a claim must not read them. For each size, that many
done jobs (older than any queued one, as months of history are) and 100 queued; then 100
claims, each completed, timed one by one. Part of ``make bench-scale``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, insert, text

from domain.scope import ChatScope
from stores.sql import SqlJobQueue, make_engine, migrate
from stores.sql.schema import MemoryJobRow

GROUP = ChatScope(platform="qq", chat_type="group", chat_id="1001")
QUEUED = 100


def claim_cost(work: Path, history: list[int], backends: list[str]) -> list[dict[str, Any]]:
    """Per backend and number of done jobs: each claim's milliseconds."""
    out = []
    for backend in backends:
        for done in history:
            with _engine(work, backend, done) as engine:
                _fill(engine, done)
                out.append({"backend": backend, "done": done, "claim_ms": _claims(engine)})
    return out


@contextmanager
def _engine(work: Path, backend: str, done: int) -> Iterator[Engine]:
    if backend == "postgresql":
        from standins.langhost import databases

        with databases("gm_claims") as urls:
            engine = make_engine(urls["gm_claims"])
            migrate(engine)
            yield engine
            engine.dispose()
        return
    path = work / f"claims-{done}.db"
    for stale in work.glob(f"{path.name}*"):
        stale.unlink()
    work.mkdir(parents=True, exist_ok=True)
    engine = make_engine(f"sqlite:///{path}")
    migrate(engine)
    yield engine
    engine.dispose()


def _fill(engine: Engine, done: int) -> None:
    for start in range(0, done, 10_000):
        rows = [
            {"bot_id": "bot-a", "request_id": f"done-{i}", "payload": {}, "platform": "qq",
             "chat_type": "group", "chat_id": "1001", "user_id": "u1", "status": "done",
             "attempts": 1, "created_at": float(i), "updated_at": float(i),
             "next_attempt_at": float(i)}
            for i in range(start, min(done, start + 10_000))
        ]  # fmt: skip
        with engine.begin() as conn:
            conn.execute(insert(MemoryJobRow), rows)
    queue = SqlJobQueue(engine, bot="bot-a")
    for i in range(QUEUED):
        queue.enqueue(f"job-{i}", {}, scope=GROUP, user_id="u1")
    if engine.dialect.name == "postgresql":  # as autovacuum would have, months on
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("ANALYZE memory_jobs"))


def _claims(engine: Engine) -> list[float]:
    queue, times = SqlJobQueue(engine, bot="bot-a"), []
    for _ in range(QUEUED):
        t0 = time.perf_counter()
        row = queue.claim("bench", lease_s=60)
        times.append((time.perf_counter() - t0) * 1000)
        if row is None:
            raise RuntimeError("a queued job could not be claimed")
        queue.complete(row.request_id, {})
    return times
