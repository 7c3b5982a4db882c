"""The worker over the durable queue: retries, backoff, giving up, and kill -9 recovery."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.exc import OperationalError

from domain.scope import ChatScope
from graphs.memory import build_memory_graph
from groupmind import memory_thread
from groupmind.checkpoint import make_checkpointer
from groupmind.session import open_session
from groupmind.settings import Settings
from groupmind.worker import MemoryWorker
from nodes.deps import Deps
from state.validation import InputError
from stores.base import job_thread_id
from stores.sql import SqlJobQueue
from tests.graphs.helpers import job
from tests.helpers.fakes import DownEvents, FakeChat

ROOT = Path(__file__).resolve().parents[2]


def make_worker(
    tmp_path: Path, deps: Deps, failures: int, **settings: Any
) -> tuple[MemoryWorker, list[float]]:
    now = [1000.0]
    s = Settings(data_dir=tmp_path / "data", **settings)
    engine = deps.profiles.engine  # type: ignore[attr-defined]
    queue = SqlJobQueue(engine, bot=deps.limits.bot_id, clock=lambda: now[0])
    flaky = replace(deps, events=DownEvents(deps.events, failures), jobs=queue)
    graph = build_memory_graph(flaky, checkpointer=make_checkpointer(s))
    return MemoryWorker.one_bot(graph, flaky, s, clock=lambda: now[0]), now


def test_an_outage_leaves_the_job_queued_then_it_is_stored(tmp_path: Path, deps: Deps) -> None:
    worker, now = make_worker(tmp_path, deps, failures=1)
    worker.submit(job())
    first = worker.run_next()
    assert first is not None and first.status == "failed" and first.retry_at is not None
    config: Any = {"configurable": {"thread_id": job_thread_id(deps.limits.bot_id, "r1")}}
    assert worker.graph.get_state(config).next == ("embed",)  # a rules job's failure: saved
    row = worker.jobs.get("r1")
    assert row is not None and row.status == "queued"
    assert row.last_error == "ConnectionError: chroma unavailable"
    assert worker.run_next() is None  # not due yet: backoff
    now[0] = first.retry_at + 0.01
    second = worker.run_next()
    assert second is not None and second.status == "stored" and second.attempts == 1
    assert deps.events.count(ChatScope(platform="qq", chat_type="group", chat_id="1001")) == 1
    done = worker.jobs.get("r1")
    assert done is not None and done.status == "done" and done.attempts == 2


def test_a_rules_job_writes_a_checkpoint_only_when_it_fails(tmp_path: Path, deps: Deps) -> None:
    """Its checkpoints would be pruned when it is done: a rules job that is done first time
    writes none; one that fails saves the state after its last finished step, resumes
    there, and is pruned when done."""
    worker, now = make_worker(tmp_path, deps, failures=1)
    saver: Any = worker.graph.checkpointer
    puts: list[str] = []
    put = saver.put

    def counted(config: Any, *args: Any, **kwargs: Any) -> Any:
        puts.append(config["configurable"]["thread_id"])
        return put(config, *args, **kwargs)

    saver.put = counted
    worker.submit(job(request_id="r1"))
    first = worker.run_next()
    assert first is not None and first.status == "failed" and first.retry_at is not None
    r1: Any = {"configurable": {"thread_id": job_thread_id(deps.limits.bot_id, "r1")}}
    saved = worker.graph.get_state(r1)
    assert saved.next == ("embed",) and saved.values["text"]  # rewritten before it failed
    assert puts == [job_thread_id(deps.limits.bot_id, "r1")]
    now[0] = first.retry_at + 0.01
    second = worker.run_next()
    assert second is not None and second.status == "stored"
    assert worker.graph.get_state(r1).values == {}  # pruned
    puts.clear()
    worker.submit(job(request_id="r2", new_info="小红下周去上海"))
    done = worker.run_next()
    assert done is not None and done.status == "stored" and done.text
    assert puts == []
    assert deps.events.count(ChatScope(platform="qq", chat_type="group", chat_id="1001")) == 2


def test_a_job_submitted_again_after_a_failure_leaves_no_checkpoint(
    tmp_path: Path, deps: Deps
) -> None:
    """Submitted again (a replayed message), its attempts start over; the thread its failed
    attempt saved is still found, and pruned when the job is done: no text stays behind."""
    worker, _ = make_worker(tmp_path, deps, failures=1)
    worker.submit(job(request_id="r1"))
    failed = worker.run_next()
    assert failed is not None and failed.status == "failed"
    config: Any = {"configurable": {"thread_id": job_thread_id(deps.limits.bot_id, "r1")}}
    assert worker.graph.get_state(config).values  # the resume point
    worker.submit(job(request_id="r1"))  # due at once, attempts 0
    done = worker.run_next()
    assert done is not None and done.status == "stored"
    assert worker.jobs.get("r1").attempts == 1  # type: ignore[union-attr]
    assert worker.graph.get_state(config).values == {}
    assert list(worker.graph.get_state_history(config)) == []


GROUP = ChatScope(platform="qq", chat_type="group", chat_id="1001")


def counted_vector_writes(deps: Deps, failures: int = 0) -> list[list[str]]:
    """The ids of each Chroma upsert the event store makes; the first ``failures`` fail."""
    vector: Any = deps.events.vector  # type: ignore[attr-defined]
    calls: list[list[str]] = []
    upsert_many = vector.upsert_many

    def counted(events: Any, vectors: Any = None) -> None:
        calls.append([e.id for e in events])
        if len(calls) <= failures:
            raise ConnectionError("chroma unavailable")
        upsert_many(events, vectors)

    vector.upsert_many = counted
    return calls


def backlog(worker: MemoryWorker, now: list[float]) -> list[str]:
    """Five jobs in one chat, two in another, queued in turn."""
    ids = []
    for i in range(7):
        chat = "1001" if i % 3 != 2 else "1002"
        now[0] += 0.01
        worker.submit(job(f"b{i}", chat_id=chat, new_info=f"我第{i}次说：周末去爬山"))
        ids.append(f"b{i}")
    return ids


@pytest.mark.parametrize("batch", [8, 1])
def test_a_chats_backlog_is_written_in_one_go(tmp_path: Path, deps: Deps, batch: int) -> None:
    worker, now = make_worker(tmp_path, deps, failures=0, job_batch=batch)
    calls = counted_vector_writes(deps)
    ids = backlog(worker, now)
    finishing: list[int] = []  # jobs marked done, per statement

    def seen(_c: Any, _cur: Any, sql: str, params: Any, _ctx: Any, many: bool) -> None:
        if sql.startswith("UPDATE memory_jobs") and "done" in str(params):
            finishing.append(len(params) if many else 1)

    event.listen(worker.jobs.engine, "before_cursor_execute", seen)  # type: ignore[attr-defined]
    done = worker.drain()
    assert sorted(o.request_id for o in done) == ids
    assert all(o.status == "stored" for o in done), done
    if batch == 8:  # each chat's jobs, in order, in one upsert (the chats side by side)
        assert sorted(calls) == [["b0", "b1", "b3", "b4", "b6"], ["b2", "b5"]]
        assert sorted(finishing) == [2, 5]  # and done in one statement
    else:
        assert sorted(calls) == [[i] for i in ids]
        assert finishing == [1] * 7
    assert deps.events.count(GROUP) == 5
    assert {e.id for e in deps.events.get(ids)} == set(ids)
    assert all(worker.jobs.get(i).status == "done" for i in ids)  # type: ignore[union-attr]


def test_a_batch_whose_memories_cannot_be_written_runs_again_whole(
    tmp_path: Path, deps: Deps
) -> None:
    """Chroma down when the batch is written: no job is done, nothing is stored on either
    side, no resume point is left (the retry runs each from its start); then all are."""
    worker, now = make_worker(tmp_path, deps, failures=0)
    calls = counted_vector_writes(deps, failures=1)
    for i in range(3):
        now[0] += 0.01
        worker.submit(job(f"c{i}", new_info=f"我第{i}次说：周末去爬山"))
    failed = worker.run_batch()
    assert [o.status for o in failed] == ["failed"] * 3
    assert all(o.error == "ConnectionError: chroma unavailable" for o in failed)
    assert calls == [["c0", "c1", "c2"]]
    assert deps.events.count(GROUP) == 0 and deps.events.get(["c0", "c1", "c2"]) == []
    for i in range(3):
        row = worker.jobs.get(f"c{i}")
        assert row is not None and row.status == "queued" and row.attempts == 1
        thread: Any = {"configurable": {"thread_id": job_thread_id(deps.limits.bot_id, f"c{i}")}}
        assert worker.graph.get_state(thread).values == {}
    now[0] = max(o.retry_at or 0 for o in failed) + 0.01
    assert [o.status for o in worker.drain()] == ["stored"] * 3
    assert deps.events.count(GROUP) == 3


def test_a_batch_not_marked_done_runs_again_and_stores_each_memory_once(
    tmp_path: Path, deps: Deps
) -> None:
    """SQL is lost as the batch is marked done, after its memories were written: the error
    reaches the poll loop (which waits and retries), the jobs stay running under their
    leases, and once those run out the batch runs again: each memory is stored once and
    each job is done, its profile change applied once (a real PostgreSQL stopped under a
    worker process: benchmarks/fault_suite.py, ``worker_postgres_restart``)."""
    worker, now = make_worker(tmp_path, deps, failures=0, job_lease_s=30)
    ids = [f"e{i}" for i in range(3)]
    for i, rid in enumerate(ids):
        now[0] += 0.01
        worker.submit(job(rid, new_info=f"我第{i}次说：周末去爬山"))
    complete_many = worker.jobs.complete_many

    def lost(results: dict[str, Any]) -> None:
        raise OperationalError("UPDATE memory_jobs", {}, ConnectionError("connection lost"))

    worker.jobs.complete_many = lost  # type: ignore[method-assign]
    with pytest.raises(OperationalError):
        worker.run_batch()
    assert [worker.jobs.get(i).status for i in ids] == ["running"] * 3  # type: ignore[union-attr]
    assert deps.events.count(GROUP) == 3
    bond = deps.profiles.get_relationship("qq", "10001")
    assert bond is not None and bond.relationship_score > 0  # their profile changes: kept
    assert worker.run_batch() == []  # their leases hold them
    worker.jobs.complete_many = complete_many  # type: ignore[method-assign]
    now[0] += 31
    assert [o.status for o in worker.drain()] == ["stored"] * 3
    assert deps.events.count(GROUP) == 3
    assert [worker.jobs.get(i).status for i in ids] == ["done"] * 3  # type: ignore[union-attr]
    again = deps.profiles.get_relationship("qq", "10001")  # each change applied once
    assert again is not None and again.relationship_score == bond.relationship_score


def test_a_job_that_fails_in_a_batch_resumes_and_the_others_are_done(
    tmp_path: Path, deps: Deps
) -> None:
    """The first job's write fails in its run (its embed step): the batch goes on, the
    others' memories are written and they are done; it gets its resume point and is
    stored on its retry."""
    worker, now = make_worker(tmp_path, deps, failures=1)
    for i in range(3):
        now[0] += 0.01
        worker.submit(job(f"d{i}", new_info=f"我第{i}次说：周末去爬山"))
    outcomes = {o.request_id: o for o in worker.run_batch()}
    assert {k: o.status for k, o in outcomes.items()} == {
        "d0": "failed", "d1": "stored", "d2": "stored"
    }  # fmt: skip
    assert {e.id for e in deps.events.get(["d0", "d1", "d2"])} == {"d1", "d2"}
    d0: Any = {"configurable": {"thread_id": job_thread_id(deps.limits.bot_id, "d0")}}
    assert worker.graph.get_state(d0).next == ("embed",)
    now[0] = (outcomes["d0"].retry_at or 0) + 0.01
    assert [o.status for o in worker.drain()] == ["stored"]
    assert deps.events.count(GROUP) == 3
    assert worker.graph.get_state(d0).values == {}


def test_a_checkpointer_that_cannot_be_read_leaves_the_job_queued_with_the_error(
    tmp_path: Path, deps: Deps
) -> None:
    worker, now = make_worker(tmp_path, deps, failures=0)
    graph: Any = worker.graph
    get_state = graph.get_state

    def down(config: Any) -> Any:
        graph.get_state = get_state  # down once
        raise ConnectionError("checkpointer unavailable")

    graph.get_state = down
    worker.submit(job())
    failed = worker.run_batch()
    assert [(o.status, o.error) for o in failed] == [
        ("failed", "ConnectionError: checkpointer unavailable")
    ]
    row = worker.jobs.get("r1")
    assert row is not None and row.status == "queued" and row.last_error == failed[0].error
    now[0] = (failed[0].retry_at or 0) + 0.01
    assert [o.status for o in worker.run_batch()] == ["stored"]


def test_backoff_doubles_and_the_job_is_kept_when_it_gives_up(tmp_path: Path, deps: Deps) -> None:
    worker, now = make_worker(tmp_path, deps, failures=99, job_max_attempts=3)
    worker.submit(job())
    delays = []
    for _ in range(3):
        outcome = worker.run_next()
        assert outcome is not None and outcome.status == "failed"
        if outcome.retry_at is not None:
            delays.append(outcome.retry_at - now[0])
            now[0] = outcome.retry_at + 0.01
    assert len(delays) == 2 and 1.6 <= delays[0] <= 2.4 and 3.2 <= delays[1] <= 4.8
    row = worker.jobs.get("r1")
    assert row is not None and row.status == "failed" and row.attempts == 3
    assert deps.events.count() == 0


def test_a_bad_job_is_refused_and_nothing_queued(tmp_path: Path, deps: Deps) -> None:
    worker, _ = make_worker(tmp_path, deps, failures=0)
    with pytest.raises(InputError, match="chat_type: unknown chat type"):
        worker.submit(job(chat_type="channel"))
    assert worker.jobs.counts() == {}


def killed_at_embed(data: Path, steps: str, jobs: int = 1) -> None:
    """A worker process runs ``job()`` with JOB_STEP_CHECKPOINTS=``steps`` and is killed
    (SIGKILL) as it reaches the embed step; with ``jobs``, as many in one batch, killed at
    the last one's."""
    child = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.helpers.crash_child",
            str(data),
            json.dumps(job()),
            steps,
            str(jobs),
        ],  # fmt: skip
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == -9, child.stderr  # SIGKILL at the embed step


@pytest.mark.slow
def test_kill_9_mid_run_resumes_at_the_unfinished_step(tmp_path: Path) -> None:
    """Every step checkpointed (as a job that calls a model is): the rerun starts there."""
    data = tmp_path / "data"
    killed_at_embed(data, "always")
    settings = Settings(data_dir=data, job_lease_s=1.0, keep_checkpoints=True,
                        job_step_checkpoints="always")  # fmt: skip
    session = open_session(settings)
    config: Any = {"configurable": {"thread_id": job_thread_id(session.bot, "r1")}}
    assert session.memory_graph.get_state(config).next == ("embed",)
    assert session.jobs.get("r1").status == "running"  # type: ignore[union-attr]
    time.sleep(1.1)  # the dead worker's lease runs out
    outcome = session.worker.run_next()
    assert outcome is not None and outcome.status == "stored"
    history = list(session.memory_graph.get_state_history(config))
    assert sum(1 for snap in history if snap.next == ("rewrite",)) == 1  # rewritten once
    assert (
        session.deps.events.count(ChatScope(platform="qq", chat_type="group", chat_id="1001")) == 1
    )
    assert session.jobs.get("r1").attempts == 2  # type: ignore[union-attr]
    graph = build_memory_graph(session.deps, checkpointer=make_checkpointer(settings))
    assert graph.get_state(config).values["status"] == "stored"


@pytest.mark.slow
def test_kill_9_mid_run_of_a_rules_job_runs_it_again_whole_and_stores_once(
    tmp_path: Path,
) -> None:
    """A job on the rules writes no checkpoint before it stops: killed, it leaves none, and
    the next worker runs it from its first step; its memory and profile are stored once."""
    data = tmp_path / "data"
    killed_at_embed(data, "model")
    session = open_session(Settings(data_dir=data, job_lease_s=1.0, keep_checkpoints=True))
    config: Any = {"configurable": {"thread_id": job_thread_id(session.bot, "r1")}}
    assert session.memory_graph.get_state(config).next == ()  # nothing saved
    assert not list(session.memory_graph.get_state_history(config))
    assert session.jobs.get("r1").status == "running"  # type: ignore[union-attr]
    time.sleep(1.1)  # the dead worker's lease runs out
    outcome = session.worker.run_next()
    assert outcome is not None and outcome.status == "stored" and outcome.profile == "updated"
    scope = ChatScope(platform="qq", chat_type="group", chat_id="1001")
    assert session.deps.events.count(scope) == 1
    assert session.jobs.get("r1").attempts == 2  # type: ignore[union-attr]
    assert session.worker.run_next() is None


@pytest.mark.slow
def test_kill_9_mid_batch_stores_nothing_then_every_job_once_in_order(tmp_path: Path) -> None:
    """Killed at a batch's third job, the first two's memories were not written yet: none
    is stored, no job is done; once the leases run out the next worker runs them again,
    in their order, and stores each once."""
    data = tmp_path / "data"
    killed_at_embed(data, "model", jobs=3)
    session = open_session(Settings(data_dir=data, job_lease_s=1.0))
    scope = ChatScope(platform="qq", chat_type="group", chat_id="1001")
    assert session.deps.events.count(scope) == 0
    assert [session.jobs.get(f"r{i}").status for i in (1, 2, 3)] == ["running"] * 3  # type: ignore[union-attr]
    time.sleep(1.1)  # the dead worker's leases run out
    calls = counted_vector_writes(session.deps)
    outcomes = session.worker.run_batch()
    assert [(o.request_id, o.status) for o in outcomes] == [
        ("r1", "stored"), ("r2", "stored"), ("r3", "stored")
    ]  # fmt: skip
    assert calls == [["r1", "r2", "r3"]]
    assert session.deps.events.count(scope) == 3
    assert [session.jobs.get(f"r{i}").attempts for i in (1, 2, 3)] == [2, 2, 2]  # type: ignore[union-attr]


def test_a_job_that_calls_a_model_is_checkpointed_at_every_step_one_on_rules_at_its_end(
    tmp_path: Path, deps: Deps
) -> None:
    chat = FakeChat(script=["小明2026年11月16日去了北京"])
    with_model, _ = make_worker(tmp_path, deps.with_chat(chat), failures=0,
                                keep_checkpoints=True)  # fmt: skip
    _pinned_to_llm(with_model)
    rules, _ = make_worker(tmp_path / "rules", deps, failures=0, keep_checkpoints=True)
    rules.submit(job(request_id="r2"))
    saved = {}
    for worker, request_id in ((with_model, "r1"), (rules, "r2")):
        outcome = worker.run_next(request_id)
        assert outcome is not None and outcome.status in {"stored", "degraded"}, outcome
        config: Any = {"configurable": {"thread_id": job_thread_id(deps.limits.bot_id, request_id)}}
        saved[request_id] = len(list(worker.graph.get_state_history(config)))
    assert chat.prompts  # r1 called the model
    assert saved["r1"] >= 6  # its input and each of its five steps
    assert saved["r2"] == 1  # the run's end only


def _pinned_to_llm(worker: MemoryWorker) -> None:
    """Queued as hand_off queues a job of a reply run whose memory arm is ``rewrite=llm``."""
    payload = {**job(new_info=""), "variants": {"rewrite": "llm"}}
    scope = ChatScope(platform="qq", chat_type="group", chat_id="1001")
    worker.jobs.enqueue("r1", payload, scope=scope, user_id="u1")


def test_a_job_pinned_to_a_model_waits_for_a_worker_that_has_one(
    tmp_path: Path, deps: Deps
) -> None:
    worker, now = make_worker(tmp_path, deps, failures=0, job_max_attempts=2)
    _pinned_to_llm(worker)
    for _ in range(4):  # more offers than attempts: waiting spends none
        outcome = worker.run_next()
        assert outcome is not None and outcome.status == "failed"
        assert outcome.retry_at == now[0] + 60.0
        assert "rewrite" in (outcome.error or "") and "chat model" in (outcome.error or "")
        assert worker.run_next() is None  # not offered again before its time
        now[0] = outcome.retry_at + 0.01
    row = worker.jobs.get("r1")
    assert row is not None and row.status == "queued" and row.attempts == 0
    assert "this worker cannot run it" in (row.last_error or "")
    # A worker with a model takes it up and runs it as pinned.
    chat = FakeChat(script=["小明2026年11月16日去了北京"])
    able, clock = make_worker(tmp_path / "able", deps.with_chat(chat), failures=0)
    clock[0] = now[0]
    done = able.run_next()
    assert done is not None and done.status in {"stored", "degraded"}, done  # it ran
    assert done.variants is not None and done.variants["rewrite"] == "llm" and chat.prompts
    stored = worker.jobs.get("r1")
    assert stored is not None and stored.status == "done" and stored.attempts == 1


def test_job_unrunnable_fail_fails_it_once_with_the_reason(tmp_path: Path, deps: Deps) -> None:
    worker, _ = make_worker(tmp_path, deps, failures=0, job_unrunnable="fail")
    _pinned_to_llm(worker)
    outcome = worker.run_next()
    assert outcome is not None and outcome.status == "failed" and outcome.retry_at is None
    row = worker.jobs.get("r1")
    assert row is not None and row.status == "failed" and row.attempts == 1
    assert "needs a chat model" in (row.last_error or "")
    assert worker.run_next() is None


def test_the_in_process_worker_waits_out_a_reply_between_steps(
    tmp_path: Path, deps: Deps, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job that meets a reply in flight stops at its next step until the reply is done."""
    monkeypatch.setattr(memory_thread, "STEP_YIELD_S", 30.0)
    worker, _ = make_worker(tmp_path, deps, failures=0)
    foreground = worker.deps.process.foreground
    foreground.stale_s = 60.0
    foreground.enter("qq:group:1001")  # a reply in flight for the whole first part
    bg = memory_thread.BackgroundWorker(worker, threading.Event(), poll_s=0.05, yield_s=0.0)
    reached: list[float] = []
    pause = worker.between_steps
    assert pause is not None

    def counted() -> None:
        reached.append(time.monotonic())
        pause()

    worker.between_steps = counted
    worker.submit(job())
    bg.start()
    try:
        deadline = time.monotonic() + 30
        while not reached and time.monotonic() < deadline:
            time.sleep(0.01)
        assert reached, "the job never reached a step boundary"
        time.sleep(0.3)
        assert len(reached) == 1  # held at its first boundary while the reply runs
        row = worker.jobs.get("r1")
        assert row is not None and row.status == "running"
        foreground.leave("qq:group:1001")
        assert bg.drain(30)
        row = worker.jobs.get("r1")
        assert row is not None and row.status == "done"
        assert len(reached) > 1  # the rest of the steps ran once the reply was done
    finally:
        bg.stop()


class Timed:
    """A real event store that records when each upsert ran, and makes it last."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.spans, self._lock = inner, [], threading.Lock()

    def upsert(self, event: Any) -> None:
        start = time.monotonic()
        time.sleep(0.05)
        self.inner.upsert(event)
        with self._lock:
            self.spans.append((event.chat_id, event.id, start, time.monotonic()))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_threads_run_every_job_once_a_chats_jobs_in_order_chats_side_by_side(
    tmp_path: Path, deps: Deps
) -> None:
    # one job a claim: each of a chat's jobs is claimed on its own, by any thread (a batch
    # would take the chat's three at once, on one thread, and prove nothing of the claims)
    s = Settings(data_dir=tmp_path / "data", worker_threads=3, job_batch=1)
    timed = Timed(deps.events)
    engine = deps.profiles.engine  # type: ignore[attr-defined]
    mine = replace(deps, events=timed, jobs=SqlJobQueue(engine, bot=deps.limits.bot_id))
    graph = build_memory_graph(mine, checkpointer=make_checkpointer(s))
    worker = MemoryWorker.one_bot(graph, mine, s)
    ids = []
    for i in range(9):  # three chats, each one's jobs queued one after another
        request_id = f"j{i}"
        worker.submit(job(request_id, chat_id=f"{1001 + i // 3}", new_info=f"我第{i}次说话"))
        ids.append(request_id)
    done = worker.drain()
    assert sorted(o.request_id for o in done) == sorted(ids)
    assert all(o.status == "stored" for o in done), done
    for chat in ("1001", "1002", "1003"):
        spans = sorted((s for s in timed.spans if s[0] == chat), key=lambda s: s[2])
        assert [s[1] for s in spans] == [f"j{i}" for i in range(9) if f"{1001 + i // 3}" == chat]
        assert all(a[3] <= b[2] for a, b in zip(spans, spans[1:], strict=False)), spans
    spans = sorted(timed.spans, key=lambda s: s[2])  # and some chats' jobs did overlap
    assert any(a[3] > b[2] for a, b in zip(spans, spans[1:], strict=False)), spans
