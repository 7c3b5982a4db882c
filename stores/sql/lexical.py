"""BM25 keyword search over events, in SQL.

Chroma's sparse/BM25 search exists only in Chroma Cloud ("Search is not implemented for
Local Chroma", chromadb 1.5), so the lexical half of hybrid retrieval lives here: postings
per event in ``event_terms`` (jieba for Chinese, Snowball for English), scored in Python
over the rows the scope and filters admit. Every process sees every write at once: a busy
scope's postings may be held in memory (``stores.scope_postings``), but they answer only at
the version SQL lists for the scope, as held vectors do.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from sqlalchemy import BindParameter, Engine, bindparam, delete, func, insert, select, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from domain.scope import ChatScope, ForgetTarget
from stores.base import EventHit, EventQuery, EventRecord
from stores.bm25 import gain, top_k
from stores.packed import pack, unpack_many
from stores.people import People, people_of
from stores.said import Said
from stores.scope_members import ScopeMembers, Sealed
from stores.scope_postings import ScopePostings
from stores.sql import ties
from stores.sql.blocks import VectorBlocks
from stores.sql.covered import BOT, chunks, covered, in_scope, mine, tenant
from stores.sql.engine import reads
from stores.sql.schema import EventDocRow, EventStrengthRow, EventTermRow
from stores.text import terms
from stores.ties import Circle

log = logging.getLogger(__name__)
K1 = 1.2
B = 0.75
MAX_QUERY_TERMS = 32
# In a large scope, a term in over a quarter of the events adds almost no idf but can pull
# tens of thousands of postings: leave it out (standard BM25 query pruning).
PRUNE_FROM_DOCS = 1000
PRUNE_ABOVE_SHARE = 0.25
SCOPE_CACHE_MAX = 256  # scopes whose member lists are kept
SQLITE_TERMS_KEY = "sqlite_autoindex_event_terms_1"  # event_terms' primary key, in SQLite


class SqlLexicalIndex:
    """One bot's keyword index: every read and write is this bot's only."""

    def __init__(self, engine: Engine, *, bot: str, held: ScopePostings | None = None) -> None:
        self.engine = engine
        self.reads = reads(engine)  # single reads: no transaction (stores/sql/engine.py)
        self.bot = tenant(bot)
        self.held = held  # postings of busy scopes in memory (None: SQL answers every search)
        self.blocks = VectorBlocks(engine, self.bot)
        self._scopes: dict[tuple[ChatScope, str | None], ScopeMembers] = {}
        self._people: dict[tuple[ChatScope, str | None], tuple[Any, People]] = {}
        self._lock = threading.Lock()

    def upsert(self, event: EventRecord) -> None:
        self.upsert_many([event])

    def upsert_many(
        self, events: Sequence[EventRecord], vectors: Sequence[Sequence[float]] | None = None
    ) -> None:
        """Replace these events' rows and postings in one transaction; without ``vectors``
        (their text is unchanged), each keeps the vector it had."""
        if not events:
            return
        ids = [e.id for e in events]
        packed: dict[str, bytes | None] | None = None
        if vectors is not None:
            packed = dict(zip(ids, map(pack, vectors), strict=True))
        docs, postings = [], []
        now = time.time()
        for event in events:
            counts = Counter(t[:64] for t in terms(index_text(event)))
            docs.append(
                {
                    "bot_id": self.bot,
                    "id": event.id,
                    "platform": event.platform,
                    "chat_type": event.chat_type,
                    "chat_id": event.chat_id,
                    "chat_name": event.chat_name,
                    "persona_id": event.persona_id,
                    "user_id": event.user_id,
                    "user_name": event.user_name,
                    "timestamp": event.timestamp,
                    "text": event.text,
                    "degraded": event.degraded,
                    "context": event.context,
                    "context_user_id": event.context_user_id,
                    "importance": event.importance,
                    "length": max(1, sum(counts.values())),
                    "indexed_at": now,
                }
            )
            postings += [
                {
                    "bot_id": self.bot,
                    "event_id": event.id,
                    "term": term,
                    "tf": tf,
                    "platform": event.platform,
                    "chat_type": event.chat_type,
                    "chat_id": event.chat_id,
                    "persona_id": event.persona_id,
                    "length": docs[-1]["length"],
                }
                for term, tf in counts.items()
            ]
        with self.engine.begin() as conn:
            # Deletes first: on SQLite the transaction takes the write lock at once.
            key = {"k_bot": self.bot, "k_ids": ids}
            conn.execute(_DROP_TERMS, key)
            if packed is None:
                packed = {event_id: blob for event_id, blob in conn.execute(_VECTORS, key)}
            conn.execute(_DROP_DOCS, key)
            rows_in = [{**d, "vector": packed.get(i)} for d, i in zip(docs, ids, strict=True)]
            conn.execute(_INSERT_DOCS, rows_in)
            if postings:
                conn.execute(_INSERT_TERMS, postings)
            ties.write(conn, self.bot, events)

    def search(self, query: EventQuery, members: ScopeMembers | None = None) -> list[EventHit]:
        """BM25 over the query's scope; ``members``, when the caller listed the same scope
        and filters just before, gives the count and average length without another scan."""
        wanted = list(dict.fromkeys(t[:64] for t in terms(query.text)))[:MAX_QUERY_TERMS]
        if not wanted:
            return []
        if members is not None and members.written and query.plain and self.held is not None:
            n_docs = len(members.written)
            best = self.held.search(
                (self.bot, query.scope, query.persona_id),
                members,
                wanted,
                query.top_k,
                lambda terms, df: pruned(terms, df, n_docs),
                (K1, B, members.length / n_docs or 1.0),
                lambda ids: self._scope_postings(query, ids),
            )
            if best is not None:
                return self._hits(best, query)
        with self.reads.connect() as conn:
            if members is not None:
                n_docs = len(members.written)
                avg_len = members.length / max(n_docs, 1)
            else:
                n_docs, avg_len = conn.execute(
                    select(func.count(), func.avg(EventDocRow.length)).where(
                        *_filters(query, self.bot)
                    )
                ).one()
            if not n_docs:
                return []
            if n_docs >= PRUNE_FROM_DOCS:
                wanted = self._prune(conn, query, wanted, n_docs)
            postings = conn.execute(_postings(query, wanted, self.bot)).all()
        if not postings:
            return []
        return self._hits(bm25_top(postings, n_docs, float(avg_len or 1.0), query.top_k), query)

    def _hits(self, best: list[tuple[str, float]], query: EventQuery) -> list[EventHit]:
        events = {e.id: e for e in self.get([event_id for event_id, _ in best])}
        return [
            EventHit(events[event_id], score)
            for event_id, score in best
            if event_id in events and query.admits(events[event_id])
        ]

    def _scope_postings(self, query: EventQuery, ids: Sequence[str] | None) -> list[Any]:
        """(event_id, term, tf, length) of the query's scope and persona, or of these events."""
        cols = (EventTermRow.event_id, EventTermRow.term, EventTermRow.tf, EventTermRow.length)
        with self.reads.connect() as conn:
            if ids is None:
                # The driver's tuples: SQLAlchemy's rows cost more than the read
                # (docs/benchmarks/constants.md).
                found = conn.execute(select(*cols).where(*_term_scope(query, self.bot)))
                return list(found.cursor.fetchall())
            listed = EventTermRow.event_id.in_(bindparam("ids", expanding=True))
            stmt: Any = select(*cols).where(mine(EventTermRow, self.bot), listed)
            if conn.dialect.name == "sqlite":
                # Without statistics SQLite reads these by the covering scope index, all of
                # the bot's postings (docs/benchmarks/constants.md); the primary key finds
                # each event's.
                keyed = text(
                    "SELECT event_id, term, tf, length FROM event_terms INDEXED BY "
                    f"{SQLITE_TERMS_KEY} WHERE bot_id = :bot AND event_id IN :ids"
                ).bindparams(bindparam("bot", self.bot), bindparam("ids", expanding=True))
                try:
                    return [
                        row
                        for part in chunks(list(ids))
                        for row in conn.execute(keyed, {"ids": part})
                    ]
                except OperationalError:  # a key built otherwise: SQLite's own plan, slower
                    conn.rollback()
                    log.warning("event_terms has no %s; reading postings by plan", SQLITE_TERMS_KEY)
            return [row for part in chunks(list(ids)) for row in conn.execute(stmt, {"ids": part})]

    def _prune(self, conn: Any, query: EventQuery, wanted: list[str], n_docs: int) -> list[str]:
        scope = _term_scope(query, self.bot)  # as the postings are read, and the held path counts
        df = dict(
            conn.execute(
                select(EventTermRow.term, func.count())
                .where(*scope, EventTermRow.term.in_(wanted))
                .group_by(EventTermRow.term)
            ).all()
        )
        return pruned(wanted, df, n_docs)

    def scope_members(self, query: EventQuery, limit: int) -> ScopeMembers | None:
        """Every event the query's scope and filters admit, or None when there are more
        than ``limit``. For a plain scope the list is kept and reused while the scope's
        version (count and last write, read from the index alone) is unchanged."""
        filters = _filters(query, self.bot)
        key = (query.scope, query.persona_id)
        with self.reads.connect() as conn:
            count, last, length = conn.execute(
                select(
                    func.count(), func.max(EventDocRow.indexed_at), func.sum(EventDocRow.length)
                ).where(*filters)
            ).one()
            version = (int(count), float(last or 0.0))
            cached = self._scopes.get(key) if query.plain else None
            if cached is not None and cached.version == version:
                return cached if count <= limit else None
            if count > limit:
                return None
            members = (
                _grown(conn, filters, cached, version, int(length or 0))
                if cached is not None
                else None
            )
            if members is None:
                rows = conn.execute(select(*MEMBER).where(*filters).limit(limit + 1)).all()
                written, said, said_at = _listed(rows)
                members = ScopeMembers(version, written, said, int(length or 0), said_at=said_at)
        if len(members.ids) > limit:
            return None
        if query.plain:
            with self._lock:
                self._scopes[key] = members
                while len(self._scopes) > SCOPE_CACHE_MAX:
                    self._scopes.pop(next(iter(self._scopes)))
        return members

    def known_people(self, query: EventQuery) -> People | None:
        """The scope's people as last read (any version: names rarely change), or None."""
        cached = self._people.get((query.scope, query.persona_id))
        return cached[1] if cached is not None else None

    def scope_people(self, query: EventQuery, members: ScopeMembers | None) -> People:
        """Everyone whose memories the scope holds, by each name they went by (group cards
        change), with their share of the memories; kept while the scope's version holds."""
        key = (query.scope, query.persona_id)
        version = members.version if members is not None else None
        cached = self._people.get(key)
        if cached is not None and version is not None and cached[0] == version:
            return cached[1]
        if members is not None and query.plain:
            # counted from the member list (its new rows read since): a busy chat's people
            # are not grouped again in SQL after every write (docs/benchmarks/constants.md)
            counts = Counter(members.said_by.values())
            rows: Iterable[tuple[str, str, int]] = [(u, n, c) for (u, n), c in counts.items()]
        else:
            where = in_scope(EventDocRow, self.bot, query.scope)
            if query.persona_id is not None:
                where.append(EventDocRow.persona_id == query.persona_id)
            with self.reads.connect() as conn:
                rows = conn.execute(
                    select(EventDocRow.user_id, EventDocRow.user_name, func.count())
                    .where(*where)
                    .group_by(EventDocRow.user_id, EventDocRow.user_name)
                ).all()
        index = people_of((str(uid), str(name), int(n)) for uid, name, n in rows)
        with self._lock:
            self._people[key] = (version, index)
            while len(self._people) > SCOPE_CACHE_MAX:
                self._people.pop(next(iter(self._people)))
        return index

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these events (those written with one)."""
        out: dict[str, np.ndarray] = {}
        with self.reads.connect() as conn:
            for part in chunks(list(ids)):
                rows = conn.execute(
                    select(EventDocRow.id, EventDocRow.vector).where(
                        mine(EventDocRow, self.bot),
                        EventDocRow.id.in_(part),
                        EventDocRow.vector.is_not(None),
                    )
                )
                found = [(event_id, blob) for event_id, blob in rows if blob]
                matrix = unpack_many([blob for _, blob in found])
                out.update(zip((event_id for event_id, _ in found), matrix, strict=True))
        return out

    def scope_vectors(self, query: EventQuery) -> dict[str, np.ndarray]:
        """The stored vectors of every event the query's scope and filters admit."""
        with self.reads.connect() as conn:
            found = conn.execute(
                select(EventDocRow.id, EventDocRow.vector).where(
                    *_filters(query, self.bot), EventDocRow.vector.is_not(None)
                )
            )
            rows = [(event_id, blob) for event_id, blob in found if blob]
        matrix = unpack_many([blob for _, blob in rows])
        return dict(zip((event_id for event_id, _ in rows), matrix, strict=True))

    def sealed_vectors(self, query: EventQuery, wanted: dict[str, float]) -> Sealed:
        """The vectors of ``wanted`` (id -> write time as listed) sealed in the query's
        scope's blocks, and which are not (``stores.sql.blocks``)."""
        return self.blocks.read(query.scope, query.persona_id, wanted)

    def seal(self, scope: ChatScope, persona_id: str) -> int:
        return self.blocks.seal(scope, persona_id)

    def get(self, ids: Sequence[str]) -> list[EventRecord]:
        if not ids:
            return []
        with self.reads.connect() as conn:
            rows = conn.execute(_DOCS, {"k_bot": self.bot, "k_ids": list(ids)})
            by_id = {row.id: _record(row) for row in rows}
        return [by_id[i] for i in ids if i in by_id]

    def latest(self, query: EventQuery, limit: int, excluding: str = "") -> list[EventRecord]:
        """The last ``limit`` events the query's scope and filters admit (its time range),
        newest first: by event time, then write time."""
        stmt = (
            select(*(getattr(EventDocRow, c) for c in _RECORD))
            .where(*_filters(query, self.bot), EventDocRow.id != excluding)
            .order_by(EventDocRow.timestamp.desc(), EventDocRow.indexed_at.desc())
            .limit(limit)
        )
        with self.reads.connect() as conn:
            return [_record(row) for row in conn.execute(stmt)]

    def count(self, scope: ChatScope | None = None) -> int:
        query = select(func.count()).select_from(EventDocRow).where(mine(EventDocRow, self.bot))
        if scope is not None:
            query = query.where(*in_scope(EventDocRow, self.bot, scope))
        with self.reads.connect() as conn:
            return int(conn.execute(query).scalar_one())

    def context_holders(self, target: ForgetTarget, said: Said) -> list[EventRecord]:
        """Events in the target's chats whose answered message is the person's."""
        chats = covered(EventDocRow, target, self.bot, everyone=True)
        where = [*chats, EventDocRow.context != ""]
        with Session(self.reads) as s:
            rows = [_record(row) for row in s.scalars(select(EventDocRow).where(*where))]
        return [e for e in rows if said.answered_in(e)]

    def scrub_context(self, target: ForgetTarget, said: Said) -> list[str]:
        found = [
            replace(e, context="", context_user_id="") for e in self.context_holders(target, said)
        ]
        self.upsert_many(found)
        return [e.id for e in found]

    def covered(self, target: ForgetTarget) -> list[str]:
        where = covered(EventDocRow, target, self.bot)
        with self.reads.connect() as conn:
            return list(conn.execute(select(EventDocRow.id).where(*where)).scalars())

    def forget(self, target: ForgetTarget) -> list[str]:
        """Delete the events (their postings, their ties) the target covers, and others'
        ties to the person; returns the events' ids."""
        ids = self.covered(target)
        self.remove(ids)
        with self.engine.begin() as conn:
            ties.drop_toward(conn, self.bot, target)
        return ids

    def exchanges(self, query: EventQuery, people: Collection[str]) -> list[str]:
        """The memories of ties between any two of ``people`` in the query's chat."""
        with self.reads.connect() as conn:
            return ties.exchanges(conn, self.bot, query, people)

    def circle(self, query: EventQuery, user_id: str) -> list[Circle]:
        with self.reads.connect() as conn:
            return ties.circle(conn, self.bot, query, user_id)

    def remove(self, ids: Sequence[str]) -> None:
        """Delete these events, their postings and how they were used, in one transaction."""
        with self.engine.begin() as conn:
            scopes = self.blocks.scopes_of(conn, ids)
            for chunk in chunks(list(ids)):
                conn.execute(
                    delete(EventStrengthRow).where(
                        mine(EventStrengthRow, self.bot), EventStrengthRow.id.in_(chunk)
                    )
                )
                conn.execute(
                    delete(EventTermRow).where(
                        mine(EventTermRow, self.bot), EventTermRow.event_id.in_(chunk)
                    )
                )
                conn.execute(
                    delete(EventDocRow).where(
                        mine(EventDocRow, self.bot), EventDocRow.id.in_(chunk)
                    )
                )
            ties.drop(conn, self.bot, ids)
            self.blocks.drop(conn, scopes)  # after the rows: see stores.sql.blocks
        with self._lock:
            self._scopes.clear()
            self._people.clear()
        if self.held is not None:
            self.held.discard(set(ids))


def pruned(wanted: list[str], df: dict[str, int], n_docs: int) -> list[str]:
    """The query terms worth reading in a large scope: none in over a quarter of its events
    (the rarest kept if every term is that common)."""
    if n_docs < PRUNE_FROM_DOCS:
        return wanted
    kept = [t for t in wanted if 0 < df.get(t, 0) <= PRUNE_ABOVE_SHARE * n_docs]
    return kept or sorted(wanted, key=lambda t: df.get(t, 0))[:1]


def index_text(event: EventRecord) -> str:
    """What BM25 sees: who said it (a degraded text may only say "I"), the text, the words
    as said (``EventRecord.said``) and the message it answered."""
    return f"{event.user_name} {event.text} {event.said} {event.context}"


def bm25_top(
    postings: Sequence[Any], n_docs: int, avg_len: float, k: int
) -> list[tuple[str, float]]:
    """BM25 over (event_id, term, tf, length) rows, vectorised; the best ``k``, ties by id.
    Ids and terms are numbered by dict in one pass (np.unique on object arrays sorts every
    string: ~3 ms of a 4k-posting search); only the candidates for the top are sorted."""
    event_ids, term_of, tfs, lengths = zip(*postings, strict=True)
    numbered: dict[str, int] = {}
    id_index = np.fromiter((numbered.setdefault(i, len(numbered)) for i in event_ids), np.intp)
    term_numbers: dict[str, int] = {}
    term_index = np.fromiter(
        (term_numbers.setdefault(t, len(term_numbers)) for t in term_of), np.intp
    )
    tf = np.asarray(tfs, dtype=np.float64)
    length = np.asarray(lengths, dtype=np.float64)
    df = np.bincount(term_index, minlength=len(term_numbers))  # (event, term) rows are unique
    each = gain(tf, length, df[term_index], n_docs, (K1, B, avg_len))
    scores = np.bincount(id_index, weights=each, minlength=len(numbered))
    ids = list(numbered)
    top = top_k(scores, ids.__getitem__, k)
    return [(ids[i], float(scores[i])) for i in top]


def _postings(query: EventQuery, wanted: list[str], bot: str) -> Any:
    """The query terms' postings in scope: from the covering index alone, unless a user or
    time filter needs the documents."""
    stmt = select(
        EventTermRow.event_id, EventTermRow.term, EventTermRow.tf, EventTermRow.length
    ).where(*_term_scope(query, bot), EventTermRow.term.in_(wanted))
    if query.user_id is not None or query.time_from is not None or query.time_to is not None:
        joined = (EventDocRow.bot_id == EventTermRow.bot_id) & (
            EventDocRow.id == EventTermRow.event_id
        )
        stmt = stmt.join(EventDocRow, joined).where(*_filters(query, bot))
    return stmt


def _term_scope(query: EventQuery, bot: str) -> list[Any]:
    """The postings of the query's scope (and persona, when it names one)."""
    scope = [
        mine(EventTermRow, bot),
        EventTermRow.platform == query.platform,
        EventTermRow.chat_type == query.chat_type,
        EventTermRow.chat_id == query.chat_id,
    ]
    if query.persona_id is not None:
        scope.append(EventTermRow.persona_id == query.persona_id)
    return scope


def _filters(query: EventQuery, bot: str) -> list[Any]:
    filters = in_scope(EventDocRow, bot, query.scope, query.persona_id)
    if query.user_id is not None:
        filters.append(EventDocRow.user_id == query.user_id)
    if query.time_from is not None:
        filters.append(EventDocRow.timestamp >= query.time_from)
    if query.time_to is not None:
        filters.append(EventDocRow.timestamp <= query.time_to)
    return filters


def _grown(
    conn: Any,
    filters: list[Any],
    cached: ScopeMembers,
    version: tuple[int, float],
    length: int,
) -> ScopeMembers | None:
    """The cached list with what was written since (a busy chat's list is read once, then
    its new and rewritten events only); None when events also went, so it is read whole."""
    rows = conn.execute(
        select(*MEMBER).where(*filters, EventDocRow.indexed_at >= cached.version[1])
    ).all()
    since, said, said_at = _listed(rows)
    known = cached.written | since  # C-level copies: cheap at a busy chat's size
    if len(known) != version[0]:
        return None
    return ScopeMembers(version, known, cached.said_by | said, length, cached.version, since,
                        cached.said_at | said_at)  # fmt: skip


# A scope's members as the covering index holds them (no table row is read).
MEMBER = (EventDocRow.id, EventDocRow.indexed_at, EventDocRow.user_id, EventDocRow.user_name,
          EventDocRow.timestamp)  # fmt: skip


def _listed(
    rows: Sequence[Any],
) -> tuple[dict[str, float], dict[str, tuple[str, str]], dict[str, float]]:
    """``MEMBER`` rows as a list's three columns: each id's write time, who said it (one
    tuple per speaker, shared by all their rows), and when."""
    speakers: dict[tuple[str, str], tuple[str, str]] = {}
    said = {}
    for r in rows:
        who = (str(r[2]), str(r[3]))
        said[str(r[0])] = speakers.setdefault(who, who)
    return {str(r[0]): float(r[1]) for r in rows}, said, {str(r[0]): float(r[4]) for r in rows}


def _record(row: Any) -> EventRecord:
    return EventRecord(
        id=row.id,
        text=row.text,
        timestamp=row.timestamp,
        user_id=row.user_id,
        user_name=row.user_name,
        platform=row.platform,
        chat_type=row.chat_type,
        chat_id=row.chat_id,
        chat_name=row.chat_name,
        persona_id=row.persona_id,
        degraded=row.degraded,
        context=row.context,
        context_user_id=row.context_user_id,
        importance=row.importance,
    )


# Run for every memory stored and every reply's hits: built once, bound per call
# (stores/sql/covered.py: BOT).
_IDS: BindParameter[Any] = bindparam("k_ids", expanding=True)
_DROP_TERMS = delete(EventTermRow).where(mine(EventTermRow, BOT), EventTermRow.event_id.in_(_IDS))
_DROP_DOCS = delete(EventDocRow).where(mine(EventDocRow, BOT), EventDocRow.id.in_(_IDS))
_VECTORS = select(EventDocRow.id, EventDocRow.vector).where(
    mine(EventDocRow, BOT), EventDocRow.id.in_(_IDS)
)
_INSERT_DOCS = insert(EventDocRow)
_INSERT_TERMS = insert(EventTermRow)
_RECORD = ("id", "text", "timestamp", "user_id", "user_name", "platform", "chat_type",
           "chat_id", "chat_name", "persona_id", "degraded", "context", "context_user_id",
           "importance")  # fmt: skip
_DOCS = select(*(getattr(EventDocRow, c) for c in _RECORD)).where(
    mine(EventDocRow, BOT), EventDocRow.id.in_(_IDS)
)
