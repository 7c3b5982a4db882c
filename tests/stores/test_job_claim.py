"""Claiming a job stays cheap as finished jobs pile up, and still takes the earliest due."""

from __future__ import annotations

import threading
import time
from typing import Any

from sqlalchemy import Engine, event, insert

from domain.scope import ChatScope
from stores.sql import SqlJobQueue
from stores.sql.jobs import SqlJobBoard
from stores.sql.schema import MemoryJobRow

GROUP = ChatScope(platform="qq", chat_type="group", chat_id="1001")
OTHER = ChatScope(platform="qq", chat_type="group", chat_id="1002")


def finished(engine: Engine, n: int, start: int = 0) -> None:
    """``n`` done jobs, older than any queued one (as months of a bot's history are)."""
    rows = [
        {"bot_id": "bot-a", "request_id": f"done-{i}", "payload": {}, "platform": "qq",
         "chat_type": "group", "chat_id": "1001", "user_id": "u1", "status": "done",
         "attempts": 1, "created_at": float(i), "updated_at": float(i),
         "next_attempt_at": float(i)}
        for i in range(start, start + n)
    ]  # fmt: skip
    with engine.begin() as conn:
        conn.execute(insert(MemoryJobRow), rows)


def sqlite_steps(engine: Engine, work: Any) -> int:
    """SQLite virtual-machine steps (in thousands) ``work`` costs: rows read, not time."""
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    def on_checkout(dbapi: Any, _record: Any, _proxy: Any) -> None:
        dbapi.set_progress_handler(count, 1000)

    event.listen(engine, "checkout", on_checkout)
    try:
        work()
    finally:
        event.remove(engine, "checkout", on_checkout)
    return steps[0]


def test_a_claim_reads_no_finished_job(sqlite_engine: Engine) -> None:
    queue = SqlJobQueue(sqlite_engine, bot="bot-a")
    finished(sqlite_engine, 200)
    queue.enqueue("j1", {}, scope=GROUP, user_id="u1")
    queue.enqueue("j2", {}, scope=OTHER, user_id="u1")
    queue.enqueue("j3", {}, scope=GROUP, user_id="u1")  # waits behind j1: read, not taken
    claimed = []
    few = sqlite_steps(sqlite_engine, lambda: claimed.append(queue.claim("w", lease_s=60)))
    finished(sqlite_engine, 50_000, start=200)
    many = sqlite_steps(sqlite_engine, lambda: claimed.append(queue.claim("w", lease_s=60)))
    assert [r.request_id if r else None for r in claimed] == ["j1", "j2"]
    # One OR over both statuses read the due index through all 50k finished jobs
    # (hundreds of thousands of steps); two range scans read none of them.
    assert many <= few + 5, (few, many)


def test_the_earliest_due_is_taken_whether_queued_or_left_by_a_dead_worker(
    engine: Engine,
) -> None:
    now = [1000.0]
    queue = SqlJobQueue(engine, bot="bot-a", clock=lambda: now[0])
    board = SqlJobBoard(engine, clock=lambda: now[0])
    finished(engine, 50)
    queue.enqueue("early", {}, scope=GROUP, user_id="u1")
    now[0] = 1001.0
    queue.enqueue("late", {}, scope=OTHER, user_id="u1")
    row = queue.claim("dead", lease_s=30)
    assert row is not None and row.request_id == "early"
    now[0] = 1002.0
    assert board.claim("w2", lease_s=30).request_id == "late"  # type: ignore[union-attr]
    now[0] = 1040.0  # both leases ran out: "early" is due first again
    taken = [board.claim("w3", lease_s=30) for _ in range(3)]
    assert [r.request_id if r else None for r in taken] == ["early", "late", None]
    assert taken[0] is not None and taken[0].attempts == 2


def test_a_chats_jobs_run_one_at_a_time_in_order_chats_side_by_side(engine: Engine) -> None:
    now = [1000.0]
    queue = SqlJobQueue(engine, bot="bot-a", clock=lambda: now[0])
    other_bot = SqlJobQueue(engine, bot="bot-b", clock=lambda: now[0])
    board = SqlJobBoard(engine, clock=lambda: now[0])
    for i, (q, scope) in enumerate(
        [(queue, GROUP), (queue, GROUP), (queue, OTHER), (other_bot, GROUP), (queue, GROUP)]
    ):
        now[0] = 1000.0 + i
        q.enqueue(f"j{i}", {}, scope=scope, user_id="u1")
    now[0] = 1010.0

    def ids(n: int) -> list[str | None]:
        return [r.request_id if (r := board.claim("w", lease_s=30)) else None for _ in range(n)]

    # j1 and j4 wait for j0 (same bot and chat); another chat, or another bot's, does not.
    assert ids(4) == ["j0", "j2", "j3", None]
    queue.complete("j0", {})
    assert ids(2) == ["j1", None]
    queue.fail("j1", "boom", retry_at=1100.0)  # a job waiting to retry holds nothing up
    assert ids(2) == ["j4", None]
    queue.complete("j2", {})
    other_bot.complete("j3", {})
    now[0] = 1050.0  # j4's worker died: its lease ran out, so it is taken up again
    assert ids(1) == ["j4"]


def test_a_worker_takes_more_of_its_chats_due_jobs_earliest_first(engine: Engine) -> None:
    """Only queued, due jobs of the claimed job's chat and bot, up to the limit, in order;
    none another worker holds; and then the chat is busy for everyone else."""
    now = [1000.0]
    queue = SqlJobQueue(engine, bot="bot-a", clock=lambda: now[0])
    other_bot = SqlJobQueue(engine, bot="bot-b", clock=lambda: now[0])
    board = SqlJobBoard(engine, clock=lambda: now[0])
    for i, (q, scope) in enumerate(
        [(queue, GROUP), (queue, OTHER), (other_bot, GROUP), (queue, GROUP), (queue, GROUP),
         (queue, GROUP), (queue, GROUP)]
    ):  # fmt: skip
        now[0] = 1000.0 + i
        q.enqueue(f"j{i}", {}, scope=scope, user_id="u1")
    now[0] = 1010.0
    first = board.claim("w1", lease_s=30)
    assert first is not None and first.request_id == "j0"
    queue.fail("j4", "boom", retry_at=2000.0)  # not due
    taken = queue.claim_more("w1", lease_s=30, after="j0", limit=2)
    assert [(r.request_id, r.status, r.attempts) for r in taken] == [
        ("j3", "running", 1), ("j5", "running", 1)
    ]  # fmt: skip
    assert queue.claim_more("w1", lease_s=30, after="j0", limit=0) == []
    # j6 waits: its chat is busy; another chat's job and another bot's are taken
    claimed = [board.claim("w2", lease_s=30) for _ in range(3)]
    assert [r.request_id if r else None for r in claimed] == ["j1", "j2", None]
    assert {r.request_id for r in queue.list("running")} == {"j0", "j1", "j3", "j5"}
    assert queue.get("j6").status == "queued"  # type: ignore[union-attr]
    assert [r.request_id for r in queue.claim_more("w1", lease_s=30, after="j0", limit=8)] == ["j6"]
    assert other_bot.claim_more("w1", lease_s=30, after="j0", limit=8) == []


def test_a_dead_workers_batch_comes_back_in_order_before_the_chats_queued_jobs(
    engine: Engine,
) -> None:
    now = [1000.0]
    queue = SqlJobQueue(engine, bot="bot-a", clock=lambda: now[0])
    for i in range(5):
        now[0] = 1000.0 + i
        queue.enqueue(f"j{i}", {}, scope=GROUP, user_id="u1")
    queue.claim("w1", lease_s=30)
    assert [r.request_id for r in queue.claim_more("w1", lease_s=30, after="j0", limit=2)] == [
        "j1", "j2"
    ]  # fmt: skip
    now[0] = 1100.0  # w1 was killed: its leases ran out
    first = queue.claim("w2", lease_s=30)
    assert first is not None and first.request_id == "j0"
    more = queue.claim_more("w2", lease_s=30, after="j0", limit=8)
    assert [(r.request_id, r.attempts) for r in more] == [
        ("j1", 2), ("j2", 2), ("j3", 1), ("j4", 1)
    ]  # fmt: skip
    assert queue.claim_more("w3", lease_s=30, after="j0", limit=8) == []  # w2's now


def test_taking_more_of_a_chat_reads_no_finished_job(sqlite_engine: Engine) -> None:
    queue = SqlJobQueue(sqlite_engine, bot="bot-a")
    finished(sqlite_engine, 200)
    for i in range(3):
        queue.enqueue(f"j{i}", {}, scope=GROUP, user_id="u1")
    queue.claim("w", lease_s=60)
    few = sqlite_steps(
        sqlite_engine, lambda: queue.claim_more("w", lease_s=60, after="j0", limit=1)
    )
    finished(sqlite_engine, 50_000, start=200)
    many = sqlite_steps(
        sqlite_engine, lambda: queue.claim_more("w", lease_s=60, after="j0", limit=1)
    )
    assert many <= few + 1, (few, many)
    assert {r.request_id for r in queue.list("running")} == {"j0", "j1", "j2"}


def test_racing_claims_never_run_two_jobs_of_a_chat_at_once(engine: Engine) -> None:
    """Six threads claim at once, with no lock: each chat's jobs still run one at a time,
    in the order they were queued."""
    queue = SqlJobQueue(engine, bot="bot-a")
    chats = [ChatScope(platform="qq", chat_type="group", chat_id=f"{3000 + c}") for c in range(4)]
    for i in range(24):
        queue.enqueue(f"j{i:02d}", {}, scope=chats[i % 4], user_id="u1")
    log: list[tuple[str, str, str]] = []  # (chat, job, "start" | "end")
    lock = threading.Lock()

    def work() -> None:
        while (row := queue.claim("w", lease_s=60)) is not None:
            chat = chats[int(row.request_id[1:]) % 4].chat_id
            with lock:
                log.append((chat, row.request_id, "start"))
            time.sleep(0.05)
            with lock:
                log.append((chat, row.request_id, "end"))
            queue.complete(row.request_id, {})

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for chat in chats:
        mine = [(job, what) for c, job, what in log if c == chat.chat_id]
        starts = [job for job, what in mine if what == "start"]
        assert starts == sorted(starts) and len(starts) == 6, mine
        # start, end, start, end...: never two of one chat running together
        assert [what for _, what in mine] == ["start", "end"] * 6, mine


def test_a_batchs_jobs_are_done_in_one_transaction_each_with_its_result(engine: Engine) -> None:
    """One write transaction for the batch (on SQLite each takes the one write lock); each
    job gets its own result and gives its lease up; another bot's job of the same request
    id is not touched."""
    queue = SqlJobQueue(engine, bot="bot-a")
    other_bot = SqlJobQueue(engine, bot="bot-b")
    for i in range(3):
        queue.enqueue(f"j{i}", {}, scope=GROUP, user_id="u1")
    other_bot.enqueue("j1", {}, scope=GROUP, user_id="u1")
    queue.claim("w", lease_s=60)
    queue.claim_more("w", lease_s=60, after="j0", limit=8)
    commits = [0]

    def count(_conn: Any) -> None:
        commits[0] += 1

    event.listen(engine, "commit", count)
    try:
        queue.complete_many({f"j{i}": {"text": f"t{i}"} for i in range(3)})
        queue.complete_many({})
    finally:
        event.remove(engine, "commit", count)
    assert commits[0] == 1
    rows = [queue.get(f"j{i}") for i in range(3)]
    assert [(r.status, r.result) for r in rows if r] == [
        ("done", {"text": f"t{i}"}) for i in range(3)
    ]
    assert queue.list("running") == []
    assert other_bot.get("j1").status == "queued"  # type: ignore[union-attr]
