"""Chroma rows as groupmind wrote them before they carried only the keys Chroma filters by:
the event's text as the document, and every field of the event in the metadata."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stores.base import EventRecord
from stores.chroma import ChromaEventVectors, filter_keys


def write_old_rows(
    store: ChromaEventVectors,
    events: Sequence[EventRecord],
    vectors: Sequence[Sequence[float]] | None = None,
) -> None:
    if vectors is None:
        vectors = store.embed_documents([e.text for e in events])
    for event, vector in zip(events, vectors, strict=True):
        store._for(event.scope)._collection.upsert(
            ids=[event.id],
            embeddings=np.asarray([vector], dtype=np.float32),
            documents=[event.text],
            metadatas=[{**event.metadata(), **filter_keys(event)}],
        )
