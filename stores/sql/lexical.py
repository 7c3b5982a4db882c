"""BM25 keyword search over events, in SQL.

Chroma's sparse/BM25 search exists only in Chroma Cloud ("Search is not implemented for
Local Chroma", chromadb 1.5), so the lexical half of hybrid retrieval lives here: postings
per event in ``event_terms`` (jieba for Chinese, Snowball for English), scored in Python
over the rows the scope and filters admit. Every process sees every write at once; there
is no in-memory index to go stale.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine, delete, func, insert, select
from sqlalchemy.orm import Session

from groupmind.text import terms
from stores.base import ChatType, EventHit, EventQuery, EventRecord
from stores.sql.schema import EventDocRow, EventTermRow

K1 = 1.2
B = 0.75
MAX_QUERY_TERMS = 32


class SqlLexicalIndex:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def upsert(self, event: EventRecord) -> None:
        counts = Counter(t[:64] for t in terms(index_text(event)))
        with self.engine.begin() as conn:
            # Deletes first: on SQLite the transaction takes the write lock at once.
            conn.execute(delete(EventTermRow).where(EventTermRow.event_id == event.id))
            conn.execute(delete(EventDocRow).where(EventDocRow.id == event.id))
            conn.execute(
                insert(EventDocRow).values(
                    id=event.id,
                    chat_type=event.chat_type,
                    chat_id=event.chat_id,
                    chat_name=event.chat_name,
                    persona_id=event.persona_id,
                    user_id=event.user_id,
                    user_name=event.user_name,
                    timestamp=event.timestamp,
                    text=event.text,
                    degraded=event.degraded,
                    context=event.context,
                    length=max(1, sum(counts.values())),
                )
            )
            if counts:
                conn.execute(
                    insert(EventTermRow),
                    [
                        {
                            "event_id": event.id,
                            "term": term,
                            "tf": tf,
                            "chat_type": event.chat_type,
                            "chat_id": event.chat_id,
                        }
                        for term, tf in counts.items()
                    ],
                )

    def search(self, query: EventQuery) -> list[EventHit]:
        wanted = list(dict.fromkeys(t[:64] for t in terms(query.text)))[:MAX_QUERY_TERMS]
        if not wanted:
            return []
        filters = _filters(query)
        with self.engine.connect() as conn:
            n_docs, avg_len = conn.execute(
                select(func.count(), func.avg(EventDocRow.length)).where(*filters)
            ).one()
            if not n_docs:
                return []
            postings = conn.execute(
                select(
                    EventTermRow.event_id, EventTermRow.term, EventTermRow.tf, EventDocRow.length
                )
                .join(EventDocRow, EventDocRow.id == EventTermRow.event_id)
                .where(
                    EventTermRow.chat_type == query.chat_type,
                    EventTermRow.chat_id == query.chat_id,
                    EventTermRow.term.in_(wanted),
                    *filters,
                )
            ).all()
        df: Counter[str] = Counter(p.term for p in postings)
        scores: dict[str, float] = defaultdict(float)
        avg = float(avg_len or 1.0)
        for p in postings:
            idf = math.log(1.0 + (n_docs - df[p.term] + 0.5) / (df[p.term] + 0.5))
            norm = p.tf + K1 * (1.0 - B + B * p.length / avg)
            scores[p.event_id] += idf * p.tf * (K1 + 1.0) / norm
        best = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[: query.top_k]
        events = {e.id: e for e in self.get([event_id for event_id, _ in best])}
        return [
            EventHit(events[event_id], score)
            for event_id, score in best
            if event_id in events and query.admits(events[event_id])
        ]

    def get(self, ids: Sequence[str]) -> list[EventRecord]:
        if not ids:
            return []
        with Session(self.engine) as s:
            rows = s.scalars(select(EventDocRow).where(EventDocRow.id.in_(list(ids))))
            by_id = {row.id: _record(row) for row in rows}
        return [by_id[i] for i in ids if i in by_id]

    def count(self, chat_type: ChatType | None = None, chat_id: str | None = None) -> int:
        query = select(func.count()).select_from(EventDocRow)
        if chat_type is not None:
            query = query.where(EventDocRow.chat_type == chat_type)
        if chat_id is not None:
            query = query.where(EventDocRow.chat_id == chat_id)
        with self.engine.connect() as conn:
            return int(conn.execute(query).scalar_one())


def index_text(event: EventRecord) -> str:
    """What BM25 sees: who said it (a degraded text may only say "I"), the text, and the
    message it answered."""
    return f"{event.user_name} {event.text} {event.context}"


def _filters(query: EventQuery) -> list[Any]:
    filters: list[Any] = [
        EventDocRow.chat_type == query.chat_type,
        EventDocRow.chat_id == query.chat_id,
    ]
    if query.persona_id is not None:
        filters.append(EventDocRow.persona_id == query.persona_id)
    if query.user_id is not None:
        filters.append(EventDocRow.user_id == query.user_id)
    if query.time_from is not None:
        filters.append(EventDocRow.timestamp >= query.time_from)
    if query.time_to is not None:
        filters.append(EventDocRow.timestamp <= query.time_to)
    return filters


def _record(row: EventDocRow) -> EventRecord:
    return EventRecord(
        id=row.id,
        text=row.text,
        timestamp=row.timestamp,
        user_id=row.user_id,
        user_name=row.user_name,
        chat_type=row.chat_type,  # type: ignore[arg-type]
        chat_id=row.chat_id,
        chat_name=row.chat_name,
        persona_id=row.persona_id,
        degraded=row.degraded,
        context=row.context,
    )
