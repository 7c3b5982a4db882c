"""The EventStore contract, run over every backend: SQL BM25 (SQLite, PostgreSQL) and the
hybrid store over either, with a persistent Chroma or a Chroma server."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from domain.scope import ChatScope, ForgetTarget
from stores.base import EventQuery, EventRecord, EventStore
from stores.chroma import ChromaEventVectors
from stores.hybrid import HybridEventStore
from stores.sql import SqlLexicalIndex

G1 = ChatScope(platform="qq", chat_type="group", chat_id="g1")
G2 = ChatScope(platform="qq", chat_type="group", chat_id="g2")
BACKENDS = [
    "lexical-sqlite",
    pytest.param("lexical-postgres", marks=pytest.mark.postgres),
    "hybrid-sqlite",  # dense side: Chroma narrowed to the scope's ids
    "hybrid-exact-sqlite",  # dense side: the scope's vectors read from SQL for each search
    "hybrid-held-sqlite",  # dense side: the scope's vectors held in memory
    pytest.param("hybrid-postgres", marks=pytest.mark.postgres),
    pytest.param("hybrid-exact-postgres", marks=pytest.mark.postgres),
    pytest.param("hybrid-held-postgres", marks=pytest.mark.postgres),
    pytest.param("hybrid-server-sqlite", marks=pytest.mark.chroma_server),
]


@pytest.fixture(params=BACKENDS)
def make_store(request: pytest.FixtureRequest, embeddings: object) -> Callable[[str], EventStore]:
    """A backend's store for any bot, all bots' stores over the same engine and client."""
    kind = request.param
    client = request.getfixturevalue(
        "chroma_http_client" if "-server-" in kind else "chroma_client"
    )
    engine = request.getfixturevalue("pg_engine" if kind.endswith("postgres") else "sqlite_engine")

    def make(bot: str) -> EventStore:
        if kind.startswith("lexical"):
            return SqlLexicalIndex(engine, bot=bot)
        return HybridEventStore(
            ChromaEventVectors(client, embeddings, embeddings.name, bot=bot),  # type: ignore[arg-type, attr-defined]
            SqlLexicalIndex(engine, bot=bot),
            bot=bot,
            max_vectors_held=100_000 if "-held-" in kind else 0,
            exact_max=5000 if "-exact-" in kind else 0,
            load_in_background=False,  # held: loaded during the search, so every search uses it
        )

    return make


@pytest.fixture
def store(make_store: Callable[[str], EventStore]) -> EventStore:
    return make_store("bot-a")


def event(i: str, text: str, **kw: object) -> EventRecord:
    base: dict[str, object] = {
        "id": i,
        "text": text,
        "timestamp": 1_763_258_700.0,
        "user_id": "u1",
        "user_name": "小明",
        "platform": "qq",
        "chat_type": "group",
        "chat_id": "g1",
        "chat_name": "技术交流群",
        "persona_id": "default",
    }
    return EventRecord(**{**base, **kw})  # type: ignore[arg-type]


def q(text: str, **kw: object) -> EventQuery:
    base: dict[str, object] = {
        "text": text,
        "platform": "qq",
        "chat_type": "group",
        "chat_id": "g1",
    }
    return EventQuery(**{**base, **kw})  # type: ignore[arg-type]


def test_round_trip_keeps_every_field(store: EventStore) -> None:
    e = event(
        "e1", "小明2026年11月25日要去北京出差", degraded=True, context="小爱: 你什么时候出差？"
    )
    store.upsert(e)
    assert store.get(["e1"]) == [e]
    assert store.get(["missing"]) == []


def test_upsert_is_idempotent_by_id(store: EventStore) -> None:
    store.upsert(event("e1", "小明喜欢爬山"))
    assert [h.event.text for h in store.search(q("爬山"))] == ["小明喜欢爬山"]
    store.upsert(event("e1", "小明喜欢游泳"))
    assert store.count(G1) == 1
    assert store.get(["e1"])[0].text == "小明喜欢游泳"
    assert [h.event.text for h in store.search(q("游泳"))] == ["小明喜欢游泳"]


def test_search_ranks_the_relevant_event_first(store: EventStore) -> None:
    store.upsert(event("a", "小明2026年11月25日要去北京出差"))
    store.upsert(event("b", "莉莉养了一只橘猫叫橘子"))
    store.upsert(event("c", "Caroline went to a LGBTQ support group on 7 May 2023"))
    assert store.search(q("北京出差", top_k=1))[0].event.id == "a"
    assert store.search(q("橘猫", top_k=1))[0].event.id == "b"
    assert store.search(q("support group", top_k=1))[0].event.id == "c"


def test_filters_persona_user_and_time(store: EventStore) -> None:
    store.upsert(
        event("a", "小明在腾讯工作", persona_id="default", user_id="u1", timestamp=100.0 + 1e9)
    )
    store.upsert(
        event("b", "阿强在腾讯工作", persona_id="meow", user_id="u2", timestamp=200.0 + 1e9)
    )
    ids = lambda hits: sorted(h.event.id for h in hits)  # noqa: E731
    assert ids(store.search(q("腾讯工作"))) == ["a", "b"]
    assert ids(store.search(q("腾讯工作", persona_id="meow"))) == ["b"]
    assert ids(store.search(q("腾讯工作", user_id="u1"))) == ["a"]
    assert ids(store.search(q("腾讯工作", time_from=150.0 + 1e9))) == ["b"]
    assert ids(store.search(q("腾讯工作", time_to=150.0 + 1e9))) == ["a"]


def test_a_group_never_sees_another_groups_events(store: EventStore) -> None:
    store.upsert(event("mine", "群一的秘密：下周三发布新版本", chat_id="g1"))
    store.upsert(event("theirs", "群二的秘密：下周三发布新版本", chat_id="g2"))
    store.upsert(event("dm", "私聊的秘密：下周三发布新版本", chat_type="private", chat_id="u1"))
    for query in ("秘密 发布 新版本", "群二", "私聊"):
        hits = store.search(q(query, top_k=10))
        assert {h.event.id for h in hits} <= {"mine"}
        assert all(h.event.chat_id == "g1" and h.event.chat_type == "group" for h in hits)
    private = store.search(q("秘密", chat_type="private", chat_id="u1", top_k=10))
    assert [h.event.id for h in private] == ["dm"]


def test_the_same_chat_id_on_another_platform_is_another_scope(store: EventStore) -> None:
    store.upsert(event("qq", "qq 群的秘密：下周三发布新版本"))
    store.upsert(event("lark", "lark 群的秘密：下周三发布新版本", platform="lark"))
    for platform in ("qq", "lark"):
        hits = store.search(q("秘密 发布 新版本", platform=platform, top_k=10))
        assert [h.event.id for h in hits] == [platform]
    assert store.search(q("秘密", platform="discord")) == []
    assert store.count(ChatScope(platform="lark", chat_type="group", chat_id="g1")) == 1


def test_forget_removes_a_persons_events_in_a_chat_or_everywhere(store: EventStore) -> None:
    store.upsert(event("a", "小明在 g1 说的", user_id="u1"))
    store.upsert(event("b", "阿强在 g1 说的", user_id="u2"))
    store.upsert(event("c", "小明在 g2 说的", user_id="u1", chat_id="g2"))
    store.upsert(event("d", "小明在 lark 说的", user_id="u1", platform="lark"))
    assert store.forget(ForgetTarget(platform="qq", user_id="u1", chat=G1)) == ["a"]
    assert store.get(["a", "b", "c", "d"]) == store.get(["b", "c", "d"])
    assert sorted(store.forget(ForgetTarget(platform="qq", chat=G2))) == ["c"]
    assert [h.event.id for h in store.search(q("说的", top_k=10))] == ["b"]
    assert store.count() == 2  # b, and lark's d


def test_count_per_scope(store: EventStore) -> None:
    for i in range(3):
        store.upsert(event(f"g1-{i}", f"第{i}条", chat_id="g1"))
    store.upsert(event("g2-0", "另一个群", chat_id="g2"))
    assert store.count(G1) == 3
    assert store.count(G2) == 1
    assert store.count() == 4


def test_top_k_is_respected(store: EventStore) -> None:
    for i in range(8):
        store.upsert(event(f"e{i}", f"小明第{i}次去北京出差"))
    assert len(store.search(q("北京出差", top_k=3))) == 3


def test_an_unscoped_query_cannot_be_built() -> None:
    with pytest.raises(ValueError, match="chat_id"):
        EventQuery(text="x", platform="qq", chat_type="group", chat_id="")
    with pytest.raises(ValueError, match="chat_type"):
        EventQuery(text="x", platform="qq", chat_type="channel", chat_id="g1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="platform"):
        EventQuery(text="x", platform="", chat_type="group", chat_id="g1")


def test_a_bot_never_reads_writes_or_erases_another_bots_events(
    make_store: Callable[[str], EventStore],
) -> None:
    a, b = make_store("bot-a"), make_store("bot-b")
    a.upsert(event("e1", "A的用户的秘密：银行卡密码是 K7Q2X"))
    b.upsert(event("e2", "B的用户说下周三发布新版本"))
    seen = b.search(q("银行卡密码 秘密 K7Q2X", top_k=10))
    assert {h.event.id for h in seen} <= {"e2"} and all("K7Q2X" not in h.event.text for h in seen)
    assert b.get(["e1"]) == [] and b.count(G1) == 1 and b.count() == 1
    # The same request id in both bots: two events, neither overwrites the other.
    b.upsert(event("e1", "B的同号事件"))
    assert a.get(["e1"])[0].text.startswith("A的用户") and b.get(["e1"])[0].text == "B的同号事件"
    assert sorted(b.forget(ForgetTarget(platform="qq", chat=G1))) == ["e1", "e2"]
    assert [h.event.id for h in a.search(q("秘密 银行卡", top_k=10))] == ["e1"]
    assert a.count() == 1 and b.count() == 0


def test_the_memories_said_before_a_time_are_the_scopes_and_the_bots_own(
    make_store: Callable[[str], EventStore],
) -> None:
    """What a job with no recent messages reads as the talk before it: newest first from
    SQL (``latest``), oldest first in one talk from the hybrid store (``said_before``)."""
    store, other_bot = make_store("bot-a"), make_store("bot-b")
    t = 1_763_258_700.0
    for i, at, where in (("a", t - 120, {}), ("b", t - 60, {}), ("later", t + 60, {}),
                         ("g2", t - 30, {"chat_id": "g2"}), ("meow", t - 30, {"persona_id": "meow"})):  # fmt: skip
        store.upsert(event(i, f"{i}的话", timestamp=at, **where))
    other_bot.upsert(event("theirs", "另一个机器人的", timestamp=t - 10))
    scope = q("", persona_id="default")
    if isinstance(store, HybridEventStore):
        assert [e.id for e in store.said_before(scope, t, 5)] == ["a", "b"]
        assert [e.id for e in store.said_before(scope, t, 5, excluding="b")] == ["a"]
    else:
        assert isinstance(store, SqlLexicalIndex)
        window = replace(scope, time_to=t)
        assert [e.id for e in store.latest(window, 5)] == ["b", "a"]
        assert [e.id for e in store.latest(window, 1, excluding="b")] == ["a"]
