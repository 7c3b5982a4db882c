"""Profile store, job queue and personas: one body per contract, over SQLite and PostgreSQL."""

from __future__ import annotations

import threading

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine

from stores.base import Persona, Profile, ProfileChange, ProfileConflict, Relationship
from stores.sql import SqlJobQueue, SqlPersonaStore, SqlProfileStore
from stores.sql.schema import Base


def test_migrations_create_exactly_the_models(engine: Engine) -> None:
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []


def change(request_id: str, version: int = 0, **rel: object) -> ProfileChange:
    relationship = Relationship(user_id="u1", user_name="小明", version=version, **rel)  # type: ignore[arg-type]
    user = Profile(kind="user", target_id="u1", name="小明", summary="s", version=version)
    return ProfileChange(request_id=request_id, relationship=relationship, user_profile=user)


def test_profile_apply_round_trips_and_bumps_versions(engine: Engine) -> None:
    store = SqlProfileStore(engine)
    assert store.get_relationship("u1") is None
    facts = [{"type": "birthday", "value": "11月23日"}]
    assert store.apply(change("r1", key_facts=facts, relationship_score=0.01)) is True
    rel = store.get_relationship("u1")
    assert rel is not None and rel.key_facts == facts and rel.version == 1
    assert rel.relationship_score == 0.01
    profile = store.get_profile("user", "u1")
    assert profile is not None and profile.summary == "s" and profile.version == 1
    assert store.was_applied("r1") and not store.was_applied("r2")


def test_a_request_is_applied_once(engine: Engine) -> None:
    store = SqlProfileStore(engine)
    assert store.apply(change("r1")) is True
    assert store.apply(change("r1", version=1)) is False  # duplicate: nothing written
    rel = store.get_relationship("u1")
    assert rel is not None and rel.version == 1


def test_a_stale_write_is_refused_and_rolled_back(engine: Engine) -> None:
    store = SqlProfileStore(engine)
    store.apply(change("r1"))
    store.apply(change("r2", version=1, impression_text="newer"))
    with pytest.raises(ProfileConflict):
        store.apply(change("r3", version=1, impression_text="stale"))
    rel = store.get_relationship("u1")
    assert rel is not None and rel.impression_text == "newer"
    assert not store.was_applied("r3")  # the request claim rolled back with it


def test_group_profiles(engine: Engine) -> None:
    store = SqlProfileStore(engine)
    c = change("r1")
    c.group_profile = Profile(kind="group", target_id="g1", name="技术交流群", summary="聊 Python")
    store.apply(c)
    group = store.get_profile("group", "g1")
    assert group is not None and group.summary == "聊 Python" and group.name == "技术交流群"


def test_queue_claims_each_job_once(engine: Engine) -> None:
    queue = SqlJobQueue(engine)
    for i in range(20):
        assert queue.enqueue(f"j{i}", {"n": i}) is True
    claimed: list[str] = []
    lock = threading.Lock()

    def take() -> None:
        while (row := queue.claim("w", lease_s=60)) is not None:
            with lock:
                claimed.append(row.request_id)

    threads = [threading.Thread(target=take) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(claimed) == sorted(f"j{i}" for i in range(20))
    assert queue.counts() == {"running": 20}


def test_queue_failure_backoff_and_completion(engine: Engine) -> None:
    now = [1000.0]
    queue = SqlJobQueue(engine, clock=lambda: now[0])
    queue.enqueue("j1", {"x": 1})
    row = queue.claim("w", lease_s=60)
    assert row is not None and row.attempts == 1 and row.status == "running"
    queue.fail("j1", "ChromaError: down", retry_at=1010.0)
    job = queue.get("j1")
    assert job is not None and job.status == "queued" and job.last_error == "ChromaError: down"
    assert queue.claim("w", lease_s=60) is None  # not due yet
    now[0] = 1011.0
    row = queue.claim("w", lease_s=60)
    assert row is not None and row.attempts == 2
    queue.complete("j1", {"status": "stored"})
    done = queue.get("j1")
    assert done is not None and done.status == "done" and done.result == {"status": "stored"}


def test_queue_gives_up_and_keeps_the_job(engine: Engine) -> None:
    queue = SqlJobQueue(engine)
    queue.enqueue("j1", {})
    queue.claim("w", lease_s=60)
    queue.fail("j1", "boom", retry_at=None)
    job = queue.get("j1")
    assert job is not None and job.status == "failed" and job.last_error == "boom"
    assert queue.list("failed")[0].request_id == "j1"


def test_a_crashed_workers_job_is_claimable_after_its_lease(engine: Engine) -> None:
    now = [1000.0]
    queue = SqlJobQueue(engine, clock=lambda: now[0])
    queue.enqueue("j1", {})
    assert queue.claim("dead-worker", lease_s=30) is not None
    assert queue.claim("w2", lease_s=30) is None
    now[0] = 1031.0
    row = queue.claim("w2", lease_s=30)
    assert row is not None and row.attempts == 2


def test_resubmitting_requeues_unless_running(engine: Engine) -> None:
    queue = SqlJobQueue(engine)
    queue.enqueue("j1", {"v": 1})
    row = queue.claim("w", lease_s=60)
    assert row is not None
    assert queue.enqueue("j1", {"v": 2}) is False  # a worker holds it
    queue.complete("j1", {})
    assert queue.enqueue("j1", {"v": 3}) is True
    job = queue.get("j1")
    assert job is not None and job.status == "queued" and job.payload == {"v": 3}


def test_personas(engine: Engine) -> None:
    store = SqlPersonaStore(engine)
    assert store.get_persona("meow") is None
    store.put_persona(Persona(persona_id="meow", name="阿喵", begin_dialogs=["喵~"]))
    store.put_persona(Persona(persona_id="meow", name="阿喵2", system_prompt="猫娘"))
    persona = store.get_persona("meow")
    assert persona is not None and (persona.name, persona.system_prompt) == ("阿喵2", "猫娘")
