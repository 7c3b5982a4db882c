"""Hybrid retrieval: dense (Chroma) and BM25 (SQL) rankings fused by reciprocal rank.

GOTCHAS: e5 scores are bunched, so ranks fuse better than raw similarities. The defaults
(k=10, dense weight 0.5) were chosen on LoCoMo conversations 0-4 and checked on 5-9
(README, "Benchmarks"): on chat memories the keyword side is the stronger one.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from stores.base import ChatType, EventHit, EventQuery, EventRecord, EventStore

RRF_K = 10
NARROW_FROM = 20_000  # events in the collection before the dense side is narrowed by ids
ID_LIST_MAX = 20_000  # above this a scope is searched with Chroma's own metadata filter
DENSE_WEIGHT = 0.5
LEXICAL_WEIGHT = 1.0


class HybridEventStore:
    def __init__(
        self,
        vector: EventStore,
        lexical: EventStore,
        *,
        depth: int = 50,
        rrf_k: int = RRF_K,
        dense_weight: float = DENSE_WEIGHT,
        lexical_weight: float = LEXICAL_WEIGHT,
    ) -> None:
        self.vector = vector
        self.lexical = lexical
        self.depth = depth
        self.rrf_k = rrf_k
        self.weights = (dense_weight, lexical_weight)
        self._pool = ThreadPoolExecutor(max_workers=3, thread_name_prefix="hybrid")
        self._size, self._sized_at = 0, float("-inf")

    def upsert(self, event: EventRecord) -> None:
        # Vector first: the dense search is narrowed to ids the SQL side knows, and Chroma
        # refuses ids it does not have, so SQL must never run ahead of Chroma. Both writes
        # are idempotent; if the second fails, the job is retried and the sides converge.
        self.vector.upsert(event)
        self.lexical.upsert(event)

    def upsert_many(
        self, events: Sequence[EventRecord], vectors: Sequence[Sequence[float]] | None = None
    ) -> None:
        self.vector.upsert_many(events, vectors)  # type: ignore[attr-defined]
        self.lexical.upsert_many(events)  # type: ignore[attr-defined]

    def search(self, query: EventQuery) -> list[EventHit]:
        wide = replace(query, top_k=max(self.depth, query.top_k))
        lexical = self._pool.submit(self.lexical.search, wide)
        if self._large():
            # Chroma's metadata filter costs ~48 ms at 200k events: narrow the dense side
            # to the scope's ids from SQL instead, embedding the query (C, no GIL) meanwhile.
            vector = self._pool.submit(self.vector.embed_query, query.text)  # type: ignore[attr-defined]
            within = self.lexical.scope_ids(query, ID_LIST_MAX)  # type: ignore[attr-defined]
            dense = self.vector.search(wide, within=within, vector=vector.result())  # type: ignore[call-arg]
        else:
            dense = self.vector.search(wide)  # small: Chroma's single-key filter is cheap
        fused: dict[str, float] = defaultdict(float)
        events: dict[str, EventRecord] = {}
        for weight, ranking in zip(self.weights, (dense, lexical.result()), strict=True):
            for rank, hit in enumerate(ranking):
                fused[hit.event.id] += weight / (self.rrf_k + rank + 1)
                events.setdefault(hit.event.id, hit.event)
        best = sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[: query.top_k]
        return [EventHit(events[i], score) for i, score in best if query.admits(events[i])]

    def _large(self) -> bool:
        """Whether the collection is big enough for id narrowing (its size read at most
        every 30 s); only when both sides support it."""
        if not (hasattr(self.lexical, "scope_ids") and hasattr(self.vector, "embed_query")):
            return False
        now = time.monotonic()
        if now - self._sized_at > 30:
            self._size, self._sized_at = self.vector.count(), now
        return self._size >= NARROW_FROM

    def get(self, ids: Sequence[str]) -> list[EventRecord]:
        found = {e.id: e for e in self.vector.get(ids)}
        missing = [i for i in ids if i not in found]
        found.update({e.id: e for e in self.lexical.get(missing)})
        return [found[i] for i in ids if i in found]

    def count(self, chat_type: ChatType | None = None, chat_id: str | None = None) -> int:
        return self.vector.count(chat_type, chat_id)
