"""Profile store, job queue and personas: one body per contract, over SQLite and PostgreSQL."""

from __future__ import annotations

import threading

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine

from domain.scope import ChatScope, ForgetTarget, Sharing
from stores.base import (
    GroupProfile,
    LearnedProfile,
    Persona,
    ProfileChange,
    ProfileConflict,
    ProfileView,
    Relationship,
    profile_view,
)
from stores.sql import SqlJobQueue, SqlPersonaStore, SqlProfileStore
from stores.sql.schema import Base


def test_migrations_create_exactly_the_models(engine: Engine) -> None:
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []


GROUP = ChatScope(platform="qq", chat_type="group", chat_id="g1")
DM = ChatScope(platform="qq", chat_type="private", chat_id="u1")


def change(
    request_id: str,
    version: int = 0,
    where: ChatScope = GROUP,
    rel_version: int | None = None,
    **learned: object,
) -> ProfileChange:
    """A change read at ``version`` (the relationship at ``rel_version``, default the same)."""
    relationship = Relationship(
        platform="qq",
        user_id="u1",
        user_name="小明",
        version=version if rel_version is None else rel_version,
    )
    profile = LearnedProfile(
        platform=where.platform, user_id="u1", chat_type=where.chat_type, chat_id=where.chat_id,
        version=version, **learned,  # type: ignore[arg-type]
    )  # fmt: skip
    return ProfileChange(request_id=request_id, relationship=relationship, learned=profile)


def test_profile_apply_round_trips_and_bumps_versions(engine: Engine) -> None:
    store = SqlProfileStore(engine, bot="bot-a")
    assert store.get_relationship("qq", "u1") is None
    facts = [{"type": "birthday", "value": "11月23日"}]
    assert store.apply(change("r1", key_facts=facts, summary="s")) is True
    rel = store.get_relationship("qq", "u1")
    assert rel is not None and rel.version == 1 and rel.user_name == "小明"
    learned = store.get_learned(GROUP, "u1")
    assert learned is not None and learned.key_facts == facts and learned.summary == "s"
    assert learned.version == 1 and learned.scope == GROUP
    assert store.was_applied("r1") and not store.was_applied("r2")


def test_people_and_their_profiles_are_per_platform_and_chat(engine: Engine) -> None:
    store = SqlProfileStore(engine, bot="bot-a")
    store.apply(change("r1", summary="learned in g1"))
    store.apply(change("r2", where=DM, rel_version=1, summary="learned in private"))
    assert store.get_relationship("lark", "u1") is None  # the same id elsewhere: someone else
    assert {lp.scope: lp.summary for lp in store.learned_about("qq", "u1")} == {
        GROUP: "learned in g1",
        DM: "learned in private",
    }
    assert store.learned_about("lark", "u1") == []


@pytest.mark.parametrize(
    ("sharing", "seen_in_g2"),
    [("chat", []), ("groups", ["learned in g1"]), ("all", ["learned in g1", "learned in private"])],
)
def test_a_chat_sees_what_the_sharing_policy_allows(
    engine: Engine, sharing: Sharing, seen_in_g2: list[str]
) -> None:
    store = SqlProfileStore(engine, bot="bot-a")
    store.apply(change("r1", summary="learned in g1"))
    store.apply(change("r2", where=DM, rel_version=1, summary="learned in private"))
    g2 = ChatScope(platform="qq", chat_type="group", chat_id="g2")
    view = profile_view(store, "u1", g2, sharing)
    assert sorted(lp.summary for lp in view.learned) == seen_in_g2
    assert view.relationship is not None  # the relationship itself is always shared
    here = profile_view(store, "u1", GROUP, sharing)
    assert here.learned[0].summary == "learned in g1"  # this chat's first, whatever the policy
    lark = ChatScope(platform="lark", chat_type="group", chat_id="g1")
    assert profile_view(store, "u1", lark, "all") == ProfileView(None, [])


def test_a_request_is_applied_once(engine: Engine) -> None:
    store = SqlProfileStore(engine, bot="bot-a")
    assert store.apply(change("r1")) is True
    assert store.apply(change("r1", version=1)) is False  # duplicate: nothing written
    rel = store.get_relationship("qq", "u1")
    assert rel is not None and rel.version == 1


def test_a_stale_write_is_refused_and_rolled_back(engine: Engine) -> None:
    store = SqlProfileStore(engine, bot="bot-a")
    store.apply(change("r1"))
    store.apply(change("r2", version=1, impression_text="newer"))
    with pytest.raises(ProfileConflict):
        store.apply(change("r3", version=1, impression_text="stale"))
    learned = store.get_learned(GROUP, "u1")
    assert learned is not None and learned.impression_text == "newer"
    assert not store.was_applied("r3")  # the request claim rolled back with it


def test_group_profiles(engine: Engine) -> None:
    store = SqlProfileStore(engine, bot="bot-a")
    c = change("r1")
    c.group = GroupProfile(platform="qq", group_id="g1", name="技术交流群", summary="聊 Python")
    store.apply(c)
    group = store.get_group("qq", "g1")
    assert group is not None and group.summary == "聊 Python" and group.name == "技术交流群"
    assert store.get_group("lark", "g1") is None


def test_forget_a_person_in_one_chat_or_everywhere(engine: Engine) -> None:
    store = SqlProfileStore(engine, bot="bot-a")
    store.apply(change("r1", summary="g1"))
    store.apply(change("r2", where=DM, rel_version=1, summary="dm"))
    removed = store.forget(ForgetTarget(platform="qq", user_id="u1", chat=GROUP))
    assert removed["learned_profiles"] == 1
    assert [lp.summary for lp in store.learned_about("qq", "u1")] == ["dm"]
    assert store.get_relationship("qq", "u1") is not None  # no content: kept
    store.forget(ForgetTarget(platform="qq", user_id="u1"))
    assert store.get_relationship("qq", "u1") is None and store.learned_about("qq", "u1") == []


def test_queue_claims_each_job_once(engine: Engine) -> None:
    queue = SqlJobQueue(engine, bot="bot-a")
    for i in range(20):  # each in its own chat: a chat's jobs are claimed one at a time
        scope = ChatScope(platform="qq", chat_type="group", chat_id=f"{2000 + i}")
        assert queue.enqueue(f"j{i}", {"n": i}, scope=scope, user_id="u1") is True
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
    queue = SqlJobQueue(engine, bot="bot-a", clock=lambda: now[0])
    queue.enqueue("j1", {"x": 1}, scope=GROUP, user_id="u1")
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
    queue = SqlJobQueue(engine, bot="bot-a")
    queue.enqueue("j1", {}, scope=GROUP, user_id="u1")
    queue.claim("w", lease_s=60)
    queue.fail("j1", "boom", retry_at=None)
    job = queue.get("j1")
    assert job is not None and job.status == "failed" and job.last_error == "boom"
    assert queue.list("failed")[0].request_id == "j1"


def test_a_crashed_workers_job_is_claimable_after_its_lease(engine: Engine) -> None:
    now = [1000.0]
    queue = SqlJobQueue(engine, bot="bot-a", clock=lambda: now[0])
    queue.enqueue("j1", {}, scope=GROUP, user_id="u1")
    assert queue.claim("dead-worker", lease_s=30) is not None
    assert queue.claim("w2", lease_s=30) is None
    now[0] = 1031.0
    row = queue.claim("w2", lease_s=30)
    assert row is not None and row.attempts == 2


def test_resubmitting_requeues_unless_running(engine: Engine) -> None:
    queue = SqlJobQueue(engine, bot="bot-a")
    queue.enqueue("j1", {"v": 1}, scope=GROUP, user_id="u1")
    row = queue.claim("w", lease_s=60)
    assert row is not None
    assert queue.enqueue("j1", {"v": 2}, scope=GROUP, user_id="u1") is False  # a worker holds it
    queue.complete("j1", {})
    assert queue.enqueue("j1", {"v": 3}, scope=GROUP, user_id="u1") is True
    job = queue.get("j1")
    assert job is not None and job.status == "queued" and job.payload == {"v": 3}


def test_forget_removes_a_persons_or_a_chats_jobs_whatever_their_status(engine: Engine) -> None:
    queue = SqlJobQueue(engine, bot="bot-a")
    queue.enqueue("a", {}, scope=GROUP, user_id="u1")
    queue.enqueue("b", {}, scope=DM, user_id="u1")
    queue.enqueue("c", {}, scope=GROUP, user_id="u2")
    queue.claim("w", lease_s=60, request_id="a")
    assert queue.running(ForgetTarget(platform="qq", user_id="u1")) == ["a"]
    in_g1 = ForgetTarget(platform="qq", user_id="u1", chat=GROUP)
    assert queue.forget(in_g1) == []  # a live worker holds it: left until it is done
    assert [row.request_id for row in queue.forget(in_g1, running=True)] == ["a"]
    assert [row.request_id for row in queue.forget(ForgetTarget(platform="qq", chat=GROUP))] == [
        "c"
    ]
    assert queue.forget(ForgetTarget(platform="lark", user_id="u1")) == []
    assert queue.get("b") is not None


def test_personas(engine: Engine) -> None:
    store = SqlPersonaStore(engine)
    assert store.get_persona("meow") is None
    store.put_persona(Persona(persona_id="meow", name="阿喵", begin_dialogs=["喵~"]))
    store.put_persona(Persona(persona_id="meow", name="阿喵2", system_prompt="猫娘"))
    persona = store.get_persona("meow")
    assert persona is not None and (persona.name, persona.system_prompt) == ("阿喵2", "猫娘")


def test_two_bots_on_one_database_never_meet(engine: Engine) -> None:
    """Every SQL store of one bot over the same tables as another's: nothing read, counted,
    written over or erased across them, whatever ids they share."""
    from stores.base import ContextUsage, StoredMessage
    from stores.sql import SqlChatStates, SqlContextUsage, SqlJobBoard, SqlMessageStore, SqlRunInbox

    stores = {
        bot: (
            SqlProfileStore(engine, bot=bot),
            SqlJobQueue(engine, bot=bot),
            SqlMessageStore(engine, bot=bot),
            SqlRunInbox(engine, bot=bot),
            SqlChatStates(engine, bot=bot),
            SqlContextUsage(engine, bot=bot),
        )
        for bot in ("bot-a", "bot-b")
    }
    for bot, (profiles, jobs, messages, inbox, states, usage) in stores.items():
        secret = f"{bot} 的秘密"
        profiles.apply(change(f"r-{bot}", summary=secret))
        jobs.enqueue("mem-1", {"secret": secret}, scope=GROUP, user_id="u1")  # the same id
        messages.add(StoredMessage(stream=GROUP.key, message_id="m1", platform="qq",
                                   chat_type="group", chat_id="g1", user_id="u1",
                                   user_name="小明", content=secret, timestamp=1e9))  # fmt: skip
        inbox.put("t1", {"message_id": "m1", "content": secret, "user_id": "u1"}, scope=GROUP)
        states.set_state(GROUP.key, "FOCUSED" if bot == "bot-a" else "CHAT")
        usage.record(ContextUsage(context_id="c1", platform="qq", chat_type="group",
                                  chat_id="g1", persona_id="default", user_id="u1",
                                  trigger_message_id="m1", context_message_ids=[],
                                  relevance_scores={}, llm_response=secret))  # fmt: skip
    for bot, (profiles, jobs, messages, inbox, states, usage) in stores.items():
        secret = f"{bot} 的秘密"
        assert [lp.summary for lp in profiles.learned_about("qq", "u1")] == [secret]
        assert profiles.was_applied(f"r-{bot}") and not profiles.was_applied("r-bot-x")
        job = jobs.get("mem-1")
        assert job is not None and job.payload == {"secret": secret} and job.bot_id == bot
        assert [m.content for m in messages.window(GROUP.key, "default", before=2e9, since=0,
                                                    limit=10)] == [secret]  # fmt: skip
        assert [p["content"] for p in inbox.waiting("t1")] == [secret]
        assert states.count("FOCUSED") == (1 if bot == "bot-a" else 0)
        record = usage.get("c1")
        assert record is not None and record.llm_response == secret
    # bot-b erases the whole chat: bot-a's copy of everything stays
    profiles_b, jobs_b, messages_b, inbox_b, states_b, usage_b = stores["bot-b"]
    chat = ForgetTarget(platform="qq", chat=GROUP)
    profiles_b.forget(chat), jobs_b.forget(chat, running=True), messages_b.forget(chat)
    inbox_b.forget(chat), states_b.forget(GROUP.key), usage_b.forget(chat)
    profiles_a, jobs_a, messages_a, inbox_a, states_a, usage_a = stores["bot-a"]
    assert profiles_a.learned_about("qq", "u1") and jobs_a.get("mem-1") is not None
    assert messages_a.members(GROUP.key) == {"u1": "小明"} and inbox_a.waiting("t1")
    assert states_a.count("FOCUSED") == 1 and usage_a.get("c1") is not None
    assert jobs_b.get("mem-1") is None and messages_b.members(GROUP.key) == {}
    # A bot's own queue neither takes nor finishes another's job of the same id.
    assert jobs_b.claim("w", lease_s=60) is None
    jobs_b.complete("mem-1", {"by": "bot-b"})
    job_a = jobs_a.get("mem-1")
    assert job_a is not None and (job_a.status, job_a.result) == ("queued", None)
    # A worker takes jobs of any bot, each with its bot named.
    board = SqlJobBoard(engine)
    row = board.claim("w", lease_s=60)
    assert row is not None and (row.bot_id, row.request_id) == ("bot-a", "mem-1")
    assert board.claim("w", lease_s=60) is None
    with pytest.raises(KeyError):
        jobs_a.queue("bot-b")
