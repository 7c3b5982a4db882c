"""The worker's heartbeat: held jobs keep their leases on one thread, and only while held."""

from __future__ import annotations

import logging
import time

import pytest
from sqlalchemy import Engine

from domain.scope import ChatScope
from groupmind.leases import LeaseKeeper
from stores.sql import SqlJobQueue

GROUP = ChatScope(platform="qq", chat_type="group", chat_id="1001")


def queue_with(engine: Engine, *ids: str) -> SqlJobQueue:
    """A job in each of ``len(ids)`` chats (a chat's jobs are claimed one at a time)."""
    queue = SqlJobQueue(engine, bot="bot-a")
    for i, request_id in enumerate(ids):
        scope = ChatScope(platform="qq", chat_type="group", chat_id=f"{1001 + i}")
        queue.enqueue(request_id, {}, scope=scope, user_id="u1")
    return queue


def test_a_held_job_outlives_its_lease_and_is_claimable_once_let_go(engine: Engine) -> None:
    queue = queue_with(engine, "j1")
    keeper = LeaseKeeper("w1", lease_s=1.0)
    assert queue.claim("w1", lease_s=1.0) is not None
    with keeper.hold(queue, "j1"):
        time.sleep(2.5)  # two and a half leases: renewed every 0.5 s
        assert queue.claim("w2", lease_s=1.0) is None
    time.sleep(1.2)  # no renewal after the hold: the lease runs out
    row = queue.claim("w2", lease_s=1.0)
    assert row is not None and row.request_id == "j1"


def test_one_thread_renews_every_held_job_and_ends_when_none_is(engine: Engine) -> None:
    queue = queue_with(engine, "j1", "j2")
    keeper = LeaseKeeper("w1", lease_s=1.0)
    assert queue.claim("w1", lease_s=1.0) and queue.claim("w1", lease_s=1.0)
    with keeper.hold(queue, "j1"), keeper.hold(queue, "j2"):
        thread = keeper._thread
        time.sleep(2.0)
        assert queue.claim("w2", lease_s=1.0) is None  # neither lease ran out
        assert keeper._thread is thread
    assert thread is not None
    thread.join(timeout=2)
    assert not thread.is_alive() and keeper._thread is None


def test_a_job_finished_right_after_its_hold_is_never_renewed(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    queue = queue_with(engine, *(f"j{i}" for i in range(8)))
    keeper = LeaseKeeper("w1", lease_s=0.3)  # a beat every 0.5 s, shorter jobs
    caplog.set_level(logging.WARNING, "groupmind.worker")
    for i in range(8):
        assert queue.claim("w1", lease_s=30) is not None
        with keeper.hold(queue, f"j{i}"):
            time.sleep(0.1 + 0.13 * i)  # some holds meet a beat
        queue.complete(f"j{i}", {})
    time.sleep(0.6)
    assert "lease lost" not in caplog.text
    assert queue.get("j7") is not None and queue.get("j7").status == "done"  # type: ignore[union-attr]


def test_a_lost_lease_is_named_and_renewed_no_more(
    engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    queue = queue_with(engine, "j1")
    keeper = LeaseKeeper("w1", lease_s=1.0)
    caplog.set_level(logging.WARNING, "groupmind.worker")
    assert queue.claim("w1", lease_s=1.0) is not None
    with keeper.hold(queue, "j1"):
        queue.complete("j1", {})  # as if another worker had taken and finished it
        time.sleep(1.2)
        assert caplog.text.count("memory job j1: lease lost to another worker") == 1
        assert "j1" not in keeper._held
