"""The durable memory-job queue in SQL.

Claiming is a compare-and-set on (status, attempts), so two workers never take the same
job, on SQLite or PostgreSQL, without holding a lock between the read and the write. A
running job whose lease ran out (its worker was killed) is claimable again.

Each bot's jobs are its own (``SqlJobQueue``, bound to a bot); the processes that run jobs
take them from every bot's (``SqlJobBoard``) and run each with its own bot's stores.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import (
    Engine,
    Float,
    Row,
    Select,
    and_,
    bindparam,
    delete,
    exists,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from domain.scope import ChatScope, ForgetTarget
from stores.base import Clock, JobRow, JobStatus
from stores.said import Said
from stores.sql.covered import BOT, covered, mine, tenant
from stores.sql.engine import reads
from stores.sql.schema import MemoryJobRow

_CLAIM_TRIES = 20


class SqlJobQueue:
    """One bot's memory jobs."""

    def __init__(
        self, engine: Engine, *, bot: str, clock: Clock = time.time, read: Engine | None = None
    ) -> None:
        self.engine = engine
        # single reads: no transaction (stores/sql/engine.py); a board hands out its own
        self.reads = read or reads(engine)
        self.bot = tenant(bot)
        self.clock = clock

    def queue(self, bot: str) -> SqlJobQueue:
        """This queue as a one-bot board (a worker that serves only this bot)."""
        if bot != self.bot:
            raise KeyError(f"bot {bot!r}: this queue holds bot {self.bot!r}'s jobs only")
        return self

    def _key(self, request_id: str) -> tuple[Any, Any]:
        return mine(MemoryJobRow, self.bot), MemoryJobRow.request_id == request_id

    def enqueue(
        self, request_id: str, payload: dict[str, Any], *, scope: ChatScope, user_id: str
    ) -> bool:
        now = self.clock()
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    _ENQUEUE,
                    {
                        "bot_id": self.bot,
                        "request_id": request_id,
                        "payload": payload,
                        "platform": scope.platform,
                        "chat_type": scope.chat_type,
                        "chat_id": scope.chat_id,
                        "user_id": user_id,
                        "status": "queued",
                        "attempts": 0,
                        "created_at": now,
                        "updated_at": now,
                        "next_attempt_at": now,
                    },
                )
            return True
        except IntegrityError:
            pass
        # Submitted again: queue it again (the graph's writes are idempotent), unless a
        # worker holds it right now.
        with self.engine.begin() as conn:
            result = conn.execute(
                update(MemoryJobRow)
                .where(
                    *self._key(request_id),
                    or_(MemoryJobRow.status != "running", MemoryJobRow.lease_until < now),
                )
                .values(
                    payload=payload,
                    status="queued",
                    attempts=0,
                    last_error=None,
                    result=None,
                    updated_at=now,
                    next_attempt_at=now,
                    locked_by=None,
                    lease_until=None,
                )
            )
        return bool(result.rowcount == 1)

    def claim(self, worker: str, *, lease_s: float, request_id: str | None = None) -> JobRow | None:
        if request_id is None:
            return claim(self.engine, self.reads, self.clock, worker, lease_s, self.bot)
        where = [mine(MemoryJobRow, self.bot), MemoryJobRow.request_id == request_id]
        return claim(self.engine, self.reads, self.clock, worker, lease_s, where)

    def claim_more(self, worker: str, *, lease_s: float, after: str, limit: int) -> list[JobRow]:
        """Up to ``limit`` more due jobs of the chat of ``after`` (a job this worker has
        just claimed), earliest first, claimed in one transaction. No other worker takes a
        queued one meanwhile: their chat has a job running. The guard the update repeats
        is the compare-and-set: a job another worker took first is left to it."""
        if limit < 1:
            return []
        now = self.clock()
        chat = (_JOBS.c.platform, _JOBS.c.chat_type, _JOBS.c.chat_id)
        # queued and due, or left running by a dead worker (a killed batch's jobs come
        # back in their order: they were queued before the chat's queued ones)
        claimable = or_(
            and_(_JOBS.c.status == "queued", _JOBS.c.next_attempt_at <= now),
            and_(_JOBS.c.status == "running", _JOBS.c.lease_until < now),
        )
        # Statement by statement, each on an index: as one, PostgreSQL planned the join on
        # a fresh table's statistics as a scan per queued job (docs/benchmarks/constants.md).
        with self.engine.begin() as conn:
            where = conn.execute(select(*chat).where(*self._key(after))).first()
            if where is None:
                return []
            ids = list(
                conn.execute(
                    select(_JOBS.c.request_id)
                    .where(
                        mine(_JOBS.c, self.bot),
                        *(col == value for col, value in zip(chat, where, strict=True)),
                        _JOBS.c.status.in_(["queued", "running"]),  # ix_memory_jobs_running
                        claimable,
                    )
                    .order_by(_JOBS.c.next_attempt_at)
                    .limit(limit)
                ).scalars()
            )
            if not ids:
                return []
            won = conn.execute(
                update(MemoryJobRow)
                .where(
                    mine(MemoryJobRow, self.bot),
                    MemoryJobRow.request_id.in_(ids),
                    claimable,
                )
                .values(
                    status="running",
                    attempts=MemoryJobRow.attempts + 1,
                    locked_by=worker,
                    lease_until=now + lease_s,
                    updated_at=now,
                )
                .returning(*_JOBS.c)
            ).all()
        return sorted((_to_job(row) for row in won), key=lambda j: j.next_attempt_at)

    def renew(self, request_id: str, worker: str, *, lease_s: float) -> bool:
        """Extend a running job's lease (a worker's heartbeat); False when it holds it no more."""
        now = self.clock()
        with self.engine.begin() as conn:
            renewed = conn.execute(
                update(MemoryJobRow)
                .where(
                    *self._key(request_id),
                    MemoryJobRow.locked_by == worker,
                    MemoryJobRow.status == "running",
                )
                .values(lease_until=now + lease_s, updated_at=now)
            ).rowcount
        return bool(renewed == 1)

    def complete(self, request_id: str, result: dict[str, Any]) -> None:
        self.complete_many({request_id: result})

    def complete_many(self, results: dict[str, dict[str, Any]]) -> None:
        """Each job done with its result, in one transaction (a batch's jobs: on SQLite
        every write transaction takes the database's one write lock)."""
        self._finish_all(
            {rid: {"status": "done", "result": r, "last_error": None} for rid, r in results.items()}
        )

    def fail(self, request_id: str, error: str, *, retry_at: float | None) -> None:
        if retry_at is None:
            self._finish(request_id, status="failed", last_error=error)
        else:
            self._finish(request_id, status="queued", last_error=error, next_attempt_at=retry_at)

    def defer(self, request_id: str, reason: str, *, until: float) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(MemoryJobRow)
                .where(*self._key(request_id))
                .values(
                    status="queued",
                    last_error=reason,
                    next_attempt_at=until,
                    attempts=MemoryJobRow.attempts - 1,
                    locked_by=None,
                    lease_until=None,
                    updated_at=self.clock(),
                )
            )

    def _finish(self, request_id: str, **values: Any) -> None:
        self._finish_all({request_id: values})

    def _finish_all(self, values: dict[str, dict[str, Any]]) -> None:
        """Set each job's columns (every job the same ones) and give its lease up."""
        if not values:
            return
        if unknown := set().union(*values.values()) - set(_JOBS.c.keys()):  # _SET: skipped
            raise ValueError(f"memory_jobs has no column {sorted(unknown)}")
        freed = {"locked_by": None, "lease_until": None, "updated_at": self.clock()}
        rows = [{**v, **freed, "k_bot": self.bot, "k_request": rid} for rid, v in values.items()]
        with self.engine.begin() as conn:
            conn.execute(_SET, rows)

    def get(self, request_id: str) -> JobRow | None:
        with Session(self.reads) as s:
            row = s.scalars(select(MemoryJobRow).where(*self._key(request_id))).first()
            return None if row is None else _to_job(row)

    def counts(self) -> dict[str, int]:
        return counts(self.reads, [mine(MemoryJobRow, self.bot)])

    def forget(self, target: ForgetTarget, *, running: bool = False) -> list[JobRow]:
        where = covered(MemoryJobRow, target, self.bot)
        if not running:
            where.append(~self._held())
        with Session(self.engine) as s, s.begin():
            rows = [_to_job(row) for row in s.scalars(select(MemoryJobRow).where(*where))]
            s.execute(delete(MemoryJobRow).where(*where))
        return rows

    def running(self, target: ForgetTarget, *, everyone: bool = False) -> list[str]:
        """Jobs the target covers (with ``everyone``: of anyone in its chats) that a live
        worker holds right now."""
        where = [*covered(MemoryJobRow, target, self.bot, everyone=everyone), self._held()]
        with self.reads.connect() as conn:
            return list(conn.execute(select(MemoryJobRow.request_id).where(*where)).scalars())

    def scrub(self, target: ForgetTarget, said: Said) -> list[str]:
        chats = covered(MemoryJobRow, target, self.bot, everyone=True)
        changed = []
        with Session(self.engine) as s, s.begin():
            for row in s.scalars(select(MemoryJobRow).where(*chats)):
                payload, result = dict(row.payload), dict(row.result or {})
                recent = list(payload.get("recent_messages") or [])
                kept = said.kept(recent, self.bot)  # the bot's user id is its id
                quoted = said.quotes(str(result.get("text", "")))
                if len(kept) == len(recent) and not quoted:
                    continue
                row.payload = {**payload, "recent_messages": kept}
                if quoted:
                    row.result = {**result, "text": ""}
                changed.append(row.request_id)
        return changed

    def _held(self) -> Any:
        return (MemoryJobRow.status == "running") & (MemoryJobRow.lease_until >= self.clock())

    def list(self, status: JobStatus | None = None, limit: int = 50) -> list[JobRow]:
        return listed(self.reads, [mine(MemoryJobRow, self.bot)], status, limit)


class SqlJobBoard:
    """Every bot's memory jobs, for the processes that run them and for operators: a job
    is claimed from any bot's, then finished through its own bot's queue (``queue``)."""

    def __init__(self, engine: Engine, *, clock: Clock = time.time) -> None:
        self.engine = engine
        self.reads = reads(engine)
        self.clock = clock

    def queue(self, bot: str) -> SqlJobQueue:
        return SqlJobQueue(self.engine, bot=bot, clock=self.clock, read=self.reads)

    def claim(self, worker: str, *, lease_s: float) -> JobRow | None:
        return claim(self.engine, self.reads, self.clock, worker, lease_s, None)

    def counts(self) -> dict[str, int]:
        return counts(self.reads, [])

    def list(self, status: JobStatus | None = None, limit: int = 50) -> list[JobRow]:
        return listed(self.reads, [], status, limit)


def claim(
    engine: Engine,
    read: Engine,
    clock: Clock,
    worker: str,
    lease_s: float,
    among: str | list[Any] | None,
) -> JobRow | None:
    """Take the next due job (or a running one whose lease ran out) among every bot's
    (``among`` None), one bot's (its id) or those a filter admits: a compare-and-set, so
    two workers never take the same job. ``read``: the engine for its reads
    (``stores.sql.engine.reads``)."""
    for _ in range(_CLAIM_TRIES):
        now = clock()
        found = _next_due(read, now, among)
        if found is None:
            return None
        with engine.begin() as conn:  # the row as claimed comes back with the update
            won = conn.execute(
                _CLAIM,
                {
                    "k_bot": found.bot_id,
                    "k_request": found.request_id,
                    "k_status": found.status,
                    "k_attempts": found.attempts,
                    "status": "running",
                    "attempts": found.attempts + 1,
                    "locked_by": worker,
                    "lease_until": now + lease_s,
                    "updated_at": now,
                },
            ).first()
        if won is not None:
            return _to_job(won)
    return None


# The two claims' queries, built once: building them (the alias above all) cost more than
# running them (docs/benchmarks/constants.md).
_JOBS = MemoryJobRow.__table__
_RUNNING = _JOBS.alias("running")
_NOW = bindparam("now", type_=Float)
_CHAT_BUSY = exists().where(
    *(_RUNNING.c[key] == _JOBS.c[key] for key in ("bot_id", "platform", "chat_type", "chat_id")),
    _RUNNING.c.status == "running",
    _RUNNING.c.lease_until >= _NOW,
)
_COLS = [_JOBS.c[k] for k in ("bot_id", "request_id", "status", "attempts", "next_attempt_at")]
_DUE = (
    select(*_COLS).where(_JOBS.c.status == "queued", _JOBS.c.next_attempt_at <= _NOW, ~_CHAT_BUSY),
    select(*_COLS).where(_JOBS.c.status == "running", _JOBS.c.lease_until < _NOW),
)


def _first(query: Select[Any]) -> Select[Any]:
    return query.order_by(_JOBS.c.next_attempt_at).limit(1)


_DUE_ANY = tuple(_first(due) for due in _DUE)
_DUE_BOT = tuple(_first(due.where(mine(_JOBS.c, BOT))) for due in _DUE)
_KEY = (mine(MemoryJobRow, BOT), MemoryJobRow.request_id == bindparam("k_request"))
_CLAIM = (
    update(MemoryJobRow)
    .where(
        *_KEY,
        MemoryJobRow.status == bindparam("k_status"),
        MemoryJobRow.attempts == bindparam("k_attempts"),
    )
    .returning(*_JOBS.c)
)
_SET = update(MemoryJobRow).where(*_KEY)  # SET: the columns the parameters name
_ENQUEUE = insert(MemoryJobRow)


def _next_due(read: Engine, now: float, among: str | list[Any] | None) -> Any:
    """The due job with the earliest ``next_attempt_at``: a queued one of a chat with no
    job running (a chat's jobs run in order, chats side by side, however many workers and
    threads), or a running one whose lease ran out. Two range scans of
    ``ix_memory_jobs_due``, one per status: with one ``OR``, SQLite read the index in time
    order through every finished job (5 ms a claim at 50k done jobs, growing with the
    table). No lock is needed for the order: a chat's earliest job is the only one of its
    chat offered, and a claim that loses the compare-and-set reads again, by then seeing the
    chat busy. A job waiting out a retry lets its chat's later jobs go first."""
    if among is None or isinstance(among, str):
        queries, params = (_DUE_ANY, {}) if among is None else (_DUE_BOT, {"k_bot": among})
    else:
        queries, params = tuple(_first(due.where(*among)) for due in _DUE), {}
    found = []
    with read.connect() as conn:
        for query in queries:
            row = conn.execute(query, {"now": now, **params}).first()
            if row is not None:
                found.append(row)
    return min(found, key=lambda r: r.next_attempt_at, default=None)


def counts(read: Engine, where: list[Any]) -> dict[str, int]:
    query = select(MemoryJobRow.status, func.count()).where(*where).group_by(MemoryJobRow.status)
    with read.connect() as conn:
        return {status: int(n) for status, n in conn.execute(query)}


def listed(read: Engine, where: list[Any], status: JobStatus | None, limit: int) -> list[JobRow]:
    query = select(MemoryJobRow).where(*where)
    if status is not None:
        query = query.where(MemoryJobRow.status == status)
    query = query.order_by(MemoryJobRow.updated_at.desc()).limit(limit)
    with Session(read) as s:
        return [_to_job(row) for row in s.scalars(query)]


def _to_job(row: MemoryJobRow | Row[Any]) -> JobRow:
    return JobRow(
        request_id=row.request_id,
        bot_id=row.bot_id,
        payload=dict(row.payload),
        status=row.status,  # type: ignore[arg-type]
        attempts=row.attempts,
        last_error=row.last_error,
        result=None if row.result is None else dict(row.result),
        created_at=row.created_at,
        updated_at=row.updated_at,
        next_attempt_at=row.next_attempt_at,
    )
