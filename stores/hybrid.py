"""Hybrid retrieval: dense (e5 vectors) and BM25 (SQL) rankings fused by reciprocal rank,
or by their scores standardised over each side's candidates (``stores.fused``; e5 scores
are bunched, 0.84-0.88 for unrelated same-topic sentences, so raw similarities never
fuse), then spread to the memories said around each (``Weights.around``). A question is
read for its people (``stores.people``: a name or 我 lifts that person's memories and
leaves both queries) and its time (``stores.when``: 上周 lifts last week's). The weights
(``Fusion``) were tuned per script: Chinese on multi-party chat, where, once names leave
the query, the dense side is the stronger one (docs/benchmarks/memory.md); English on
LoCoMo (docs/benchmarks/locomo.md).

The dense side searches the scope's vectors in memory (``ScopeVectors``, exact) once they
are loaded (from SQL, int8: ``stores.packed``). A scope not held (loading, or over the
budget) of up to ``EXACT_MAX`` events is searched exactly over its vectors read from SQL,
as is a search with a user or time filter that admits that many: those sealed in blocks
(``stores.sql.blocks``) and up to ``LOOSE_MAX`` more read by row. A larger one, one of
over ``ANN_MIN`` that is enough of its Chroma shard to be searched there unnarrowed, or
one with more loose vectors (sealed in the background meanwhile), is answered by Chroma,
given the scope's ids from SQL (its metadata filter costs ~60 ms at 200k events).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from functools import partial
from typing import Protocol

import numpy as np

from domain.scope import ChatScope, ForgetTarget
from stores.background import Background
from stores.base import EventHit, EventQuery, EventRecord, EventStore
from stores.decay import Decay, Strength
from stores.fused import Timeline, answered, fuse, lift_unit, spread
from stores.fusion import Fusion, Weights
from stores.many import asks_for_many
from stores.people import Focus, People, focus_of
from stores.said import Said
from stores.scope_members import ScopeMembers, Sealed
from stores.scope_vectors import ScopeVectors, best, unit, unit_rows
from stores.text import asks, asks_what
from stores.ties import Circle

log = logging.getLogger(__name__)
SESSION_GAP_S = 1800  # memories this close in time are one session, for diversity
MANY_HEAD = 5  # for a question asking for many, the places spread by ``Weights.many``
# Above this a scope is searched with Chroma's own metadata filter, which is far slower
# than held vectors; listing its ids is paid once (docs/benchmarks/constants.md).
ID_LIST_MAX = 100_000
# A scope not held (over the budget, or loading) with up to this many members is searched
# over its vectors from SQL, not by Chroma: Chroma's HNSW, narrowed to a few ids among
# many, walks most of its graph; sealed in blocks (``stores.sql.blocks``), exact search
# over a chat's vectors is faster than Chroma narrowed up to this many among 1M
# (docs/benchmarks/scale.md, "A chat not held"; docs/benchmarks/constants.md).
EXACT_MAX = 50_000
# Unless Chroma searches the scope unnarrowed (it is enough of its shard): one HNSW query
# beats exact search over the sealed vectors of a large chat; below this many exact search
# is as fast, and exact (docs/benchmarks/scale.md, "The 1M run on a faster Xeon").
ANN_MIN = 5000
LOOSE_MAX = 5000  # loose vectors (not sealed yet) read by row for one search, at most
SPREAD_FROM = 50  # the best this many pass a share of their score to their neighbours
QUERY_VECTORS_HELD = 64  # recent query embeddings kept (a message's prefetch, its search)
# A store's upserts kept, not written, in a ``deferred`` block: a context variable, so the
# block covers the graph runs started in it (LangGraph runs a node in a copy of the caller's
# context) and nothing else (a reply's thread, another worker thread).
_DEFERRED: ContextVar[tuple[object, list[EventRecord]] | None] = ContextVar(
    "deferred_events", default=None
)


class DenseSide(Protocol):
    """Vectors and the keys that narrow them (Chroma's rows): ids and cosines out, the
    events themselves are SQL's."""

    def upsert_many(
        self, events: Sequence[EventRecord], vectors: Sequence[Sequence[float]] | None = None
    ) -> None: ...

    def embed_query(self, text: str) -> list[float]: ...

    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    def vectors(self, ids: list[str]) -> dict[str, np.ndarray]: ...

    def nearest(
        self, query: EventQuery, within: Sequence[str], vector: Sequence[float]
    ) -> list[tuple[str, float]] | None: ...

    def nearest_where(
        self, query: EventQuery, vector: Sequence[float]
    ) -> list[tuple[str, float]]: ...

    def unnarrowed(self, query: EventQuery, members: int) -> bool: ...

    def count(self, scope: ChatScope | None = None) -> int: ...

    def make_lean(self, events: Sequence[EventRecord] | None = None) -> int: ...

    def forget(self, target: ForgetTarget) -> list[str]: ...

    def remove(self, ids: Sequence[str]) -> None: ...


class KeywordSide(EventStore, Protocol):
    def upsert_many(
        self, events: Sequence[EventRecord], vectors: Sequence[Sequence[float]] | None = None
    ) -> None: ...

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]: ...

    def scope_vectors(self, query: EventQuery) -> dict[str, np.ndarray]: ...

    def sealed_vectors(self, query: EventQuery, wanted: dict[str, float]) -> Sealed: ...

    def seal(self, scope: ChatScope, persona_id: str) -> int: ...

    def latest(self, query: EventQuery, limit: int, excluding: str = "") -> list[EventRecord]: ...

    def search(  # told the scope's members, it reads no scope statistics of its own
        self, query: EventQuery, members: ScopeMembers | None = None
    ) -> list[EventHit]: ...

    def scope_members(self, query: EventQuery, limit: int) -> ScopeMembers | None: ...

    def context_holders(self, target: ForgetTarget, said: Said) -> list[EventRecord]: ...

    def scope_people(self, query: EventQuery, members: ScopeMembers | None) -> People: ...

    def known_people(self, query: EventQuery) -> People | None: ...

    def exchanges(self, query: EventQuery, people: Collection[str]) -> list[str]: ...

    def circle(self, query: EventQuery, user_id: str) -> list[Circle]: ...

    def remove(self, ids: Sequence[str]) -> None: ...


class StrengthSide(Protocol):
    """Recalls, pins and what decay reads (``stores.sql.strength``)."""

    def of(self, ids: Sequence[str]) -> dict[str, Strength]: ...
    def in_chat(self, scope: ChatScope) -> dict[str, Strength]: ...
    def over(self, cap: int) -> list[tuple[ChatScope, int]]: ...
    def recalled(self, ids: Sequence[str], at: float) -> None: ...
    def pin(self, ids: Sequence[str], pinned: bool = True) -> list[str]: ...


class QueryVectors:
    """Query embeddings of the last few texts, as futures: a prefetch and the search that
    follows (or two slots of one message) embed a text once. A failed one is not kept."""

    def __init__(self, pool: ThreadPoolExecutor, embed: Callable[[str], list[float]]) -> None:
        self._pool, self._embed = pool, embed
        self._held: OrderedDict[str, Future[list[float]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> Future[list[float]]:
        with self._lock:
            future = self._held.get(text)
            if future is None or (future.done() and future.exception() is not None):
                future = self._held[text] = self._pool.submit(self._embed, text)
            self._held.move_to_end(text)
            while len(self._held) > QUERY_VECTORS_HELD:
                self._held.popitem(last=False)
        return future


def diverse(
    ranked: list[tuple[str, float]],
    records: dict[str, EventRecord],
    k: int,
    factor: float,
    tail: float | None = None,
) -> list[tuple[str, float]]:
    """The top ``k`` with sessions spread: greedily, a memory from a session already picked n
    times counts ``factor ** n`` of its score (five turns of one session do not crowd out
    the one other session that holds the rest of the answer); after the first ``MANY_HEAD``,
    ``tail ** n`` (the best answer keeps its place, the rest make room for other sessions)."""
    picked: list[tuple[str, float]] = []
    per_session: dict[int | str, int] = defaultdict(int)
    left = list(ranked)

    def session(event_id: str) -> int | str:
        event = records.get(event_id)  # unknown: a session of its own
        return int(event.timestamp // SESSION_GAP_S) if event is not None else event_id

    while left and len(picked) < k:
        by = factor if tail is None or len(picked) < MANY_HEAD else tail
        at = max(
            range(len(left)),
            key=lambda n: (left[n][1] * by ** per_session[session(left[n][0])], -n),
        )
        best, score = left.pop(at)
        picked.append((best, score))
        per_session[session(best)] += 1
    return picked


class HybridEventStore:
    """One bot's events (``bot`` names its held scopes). The held vectors and the thread
    pool may be shared by every bot's store of a process (``held``, ``pool``)."""

    def __init__(
        self,
        vector: DenseSide,
        lexical: KeywordSide,
        *,
        bot: str,
        depth: int = 50,
        fusion: Fusion | None = None,
        max_vectors_held: int = 100_000,
        exact_max: int = EXACT_MAX,
        ann_min: int = ANN_MIN,
        loose_max: int = LOOSE_MAX,
        load_in_background: bool = True,
        held: ScopeVectors | None = None,
        pool: ThreadPoolExecutor | None = None,
        strength: StrengthSide | None = None,
        decay: Decay | None = None,
        seal: bool = True,
    ) -> None:
        self.vector = vector
        self.lexical = lexical
        self.bot = bot
        self.depth = depth
        self.fusion = fusion or Fusion()
        self.exact_max = exact_max
        self.ann_min = ann_min
        self.loose_max = loose_max
        self.seal = seal  # loose vectors of a scope read whole are sealed, in the background
        self.strength = strength
        self.decay = decay or Decay()
        self.held = held or ScopeVectors(
            max_vectors=max_vectors_held, background=load_in_background
        )
        self._pool = pool or ThreadPoolExecutor(max_workers=3, thread_name_prefix="hybrid")
        self._embedded = QueryVectors(self._pool, self.vector.embed_query)
        # Its own thread: a seal (about a second) must not hold one of the pool's threads,
        # which a reply's keyword search and query embedding wait on.
        self._sealer = Background("sealing vectors")

    def upsert(self, event: EventRecord) -> None:
        self.upsert_many([event])

    def said_before(
        self, query: EventQuery, at: float, limit: int, excluding: str = ""
    ) -> list[EventRecord]:
        """Up to ``limit`` memories said just before ``at`` in the query's scope and talk (a
        pause longer than ``Fusion.talk_gap_s`` ends a talk), oldest first; this block's
        deferred writes count (a chat's backlog is written after its last job)."""
        gap = self.fusion.talk_gap_s
        window = replace(query, time_from=at - gap * limit, time_to=at)
        stored = self.lexical.latest(window, limit, excluding)  # newest first
        pending: list[EventRecord] = []
        if (deferred := _DEFERRED.get()) is not None and deferred[0] is self:
            pending = [e for e in deferred[1] if e.id != excluding and window.admits(e)]
        # newest first: by time, then the later write (a pending one is later than any stored)
        ranked = [((e.timestamp, 1, n), e) for n, e in enumerate(pending)]
        ranked += [((e.timestamp, 0, -n), e) for n, e in enumerate(stored)]
        talk: dict[str, EventRecord] = {}
        last = at
        for _, event in sorted(ranked, key=lambda r: r[0], reverse=True):
            if last - event.timestamp > gap or len(talk) == limit:
                break
            talk.setdefault(event.id, event)
            last = event.timestamp
        return list(reversed(talk.values()))

    @contextmanager
    def deferred(self) -> Iterator[list[EventRecord]]:
        """Upserts made in this block, by this thread and the graph runs it starts, are kept
        in the list it yields, not written: the caller writes them with one ``upsert_many``
        (one embedding call, one Chroma upsert a shard, one SQL transaction), after the
        block. A worker runs a chat's backlog of jobs so: one Chroma upsert of one event
        costs ~7 ms of the Chroma server's CPU and ~5 of the caller's, eight in one call
        about twice one (docs/benchmarks/scale.md, "A chat's backlog in one write")."""
        pending: list[EventRecord] = []
        token = _DEFERRED.set((self, pending))
        try:
            yield pending
        finally:
            _DEFERRED.reset(token)

    def upsert_many(
        self, events: Sequence[EventRecord], vectors: Sequence[Sequence[float]] | None = None
    ) -> None:
        """Embedded once, stored on both sides: SQL keeps each vector packed, so a chat's
        vectors are held without opening Chroma's index. Vector first: the dense side
        follows the ids SQL knows, so SQL must never run ahead of Chroma. Both writes are
        idempotent; if the second fails, the job is retried and the sides converge."""
        if (deferred := _DEFERRED.get()) is not None and deferred[0] is self:
            deferred[1].extend(events)
            return
        if vectors is None:
            vectors = self.vector.embed_documents([e.passage() for e in events])
        self.vector.upsert_many(events, vectors)
        self.lexical.upsert_many(events, vectors)

    def vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        """These events' vectors: from SQL, or from Chroma for events stored before SQL
        kept them."""
        found = self.lexical.vectors(ids)
        missing = [i for i in ids if i not in found]
        if missing:
            found.update(self.vector.vectors(missing))
        return found

    def prefetch(self, query: EventQuery) -> None:
        """Start embedding the query (C, no GIL) now, both ways the dense sides read it: the
        search that follows finds them done, or running, and embeds nothing again."""
        self._embed(self._guess(query)[1], self.fusion.weights_for(query.text))

    def _embed(
        self, focus: Focus, w: Weights
    ) -> tuple[Future[list[float]], Future[list[float]] | None]:
        """The embeddings of the focus's dense text and, when a member is named, of the
        question with their names (``Weights.named``)."""
        named = self._embedded.get(focus.named_text) if w.named and focus.named_text else None
        return self._embedded.get(focus.dense_text), named

    def _guess(self, query: EventQuery) -> tuple[People, Focus]:
        """The query as the people last seen in this scope read it (names rarely change)."""
        w = self.fusion.weights_for(query.text)
        known = (self.lexical.known_people(query) if w.person else None) or People()
        guess = focus_of(query.text, known.names, query.asker_id if w.person else None,
                         query.asker_name)  # fmt: skip
        return known, self._stepping_aside(guess, query)

    def _stepping_aside(self, focus: Focus, query: EventQuery) -> Focus:
        """No lift for a question naming more people than ``Fusion.most_people``: it asks
        what passed between them, and their names are words to find it by."""
        most = self.fusion.most_people
        if most and len(focus.user_ids) > most:
            return Focus(lexical_text=query.text, dense_text=query.text, between=focus.user_ids)
        return focus

    def search(self, query: EventQuery) -> list[EventHit]:
        wide = replace(query, top_k=max(self.depth, query.top_k))
        # The query's embedding (C, no GIL) runs while SQL lists the scope and its people,
        # unless a prefetch started it already; it is embedded again only if the scope's
        # people now read the query otherwise.
        w = self.fusion.weights_for(query.text)
        known, guess = self._guess(query)
        embedding, named = self._embed(guess, w)
        members = self.lexical.scope_members(query, ID_LIST_MAX)
        focus, people = guess, known
        if w.person and (members is None or members.ids):
            people = self.lexical.scope_people(query, members)
            if people is not known:
                focus = focus_of(query.text, people.names, query.asker_id, query.asker_name)
                focus = self._stepping_aside(focus, query)
        if focus != guess:  # the scope's people read it otherwise: cached if the same text
            embedding, named = self._embed(focus, w)
        lexical = self._pool.submit(
            self.lexical.search, replace(wide, text=focus.lexical_text), members
        )
        records: dict[str, EventRecord] = {}
        dense = self._dense(wide, members, embedding.result(), records)
        as_named = self._dense(wide, members, named.result(), records) if named else []
        keyword = lexical.result()
        for hit in keyword:
            records.setdefault(hit.event.id, hit.event)
        f = self.fusion
        scored = [(hit.event.id, hit.score) for hit in keyword]
        fused = fuse(((w.dense, dense), (w.lexical, scored), (w.named, as_named)), w.by, f.rrf_k)
        # two people named among more: what passed between them is said to each other, not
        # next to it (the turn before or after is often someone else's, to a third)
        apart = bool(focus.between) and self._narrowed(focus.between, people)
        if (w.around or w.answers) and members is not None and query.plain and not apart:
            timeline = Timeline.of(members, f.talk_gap_s)
            if w.answers:
                self._to_answers(fused, timeline, members, records, w)
            spread(fused, timeline, w.around, SPREAD_FROM)
        if (focus.user_ids and w.person) or (query.about and w.time):
            self._fetch(fused, records)
            self._lift(fused, records, focus, people, query.about, w)
        if apart and w.between:
            self._between(fused, query, focus.between, w)
        ranked = sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))
        if self.strength is not None and self.decay.weight:
            ranked = self._fade(ranked[: query.top_k * 4], query.now, w) + ranked[query.top_k * 4 :]
        # the question's grammar is read only where a setting would act on it (English)
        many = (w.many < 1 or w.many_after < 1) and asks_for_many(query.text)
        head = min(f.diversity, w.many if many else 1.0)
        tail = min(f.diversity, w.many_after if many else 1.0)
        if min(head, tail) < 1:
            pool = ranked[: query.top_k * 4]
            self._fetch([i for i, _ in pool], records)
            best = diverse(pool, records, query.top_k, head, tail)
        else:
            best = ranked[: query.top_k]
        self._fetch([i for i, _ in best], records)
        return [
            EventHit(records[i], score)
            for i, score in best
            if i in records and query.admits(records[i])  # never trust a side blindly
        ]

    def _to_answers(
        self,
        fused: dict[str, float],
        timeline: Timeline,
        members: ScopeMembers,
        records: dict[str, EventRecord],
        w: Weights,
    ) -> None:
        """The best memories that ask pass their score on to what answered them: the memory
        said next in their talk, by someone else (``Weights.answers``). One who goes on
        talking answers nothing (a user talking to the bot: its replies are kept with the
        messages they answer). One asking whether rather than what passes and loses less
        (``Weights.closed``): it says what it asks about."""
        top = [i for i, _ in sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[:SPREAD_FROM]]
        self._fetch(top, records)  # their texts; who said what the scope's list knows

        def speaker(event_id: str) -> str:
            return members.said_by.get(event_id, ("", ""))[0]

        whether = (w.closed * w.answers, 1 - w.closed * (1 - w.asking))
        answered(
            fused,
            [
                (q, a, *((w.answers, w.asking) if asks_what(records[q].text) else whether))
                for q in top
                if q in records
                and asks(records[q].text)
                and (a := timeline.after(q)) is not None
                and speaker(a) != speaker(q)
            ],
        )

    def _lift(
        self,
        fused: dict[str, float],
        records: dict[str, EventRecord],
        focus: Focus,
        people: People,
        about: tuple[float, float] | None,
        w: Weights,
    ) -> None:
        """The question's people and span, as two more sides: the memories of the people
        and those from the span, each side ranking its memories as the fused sides did
        (``ranked``), or lifting each as if it ranked first (``flat``)."""
        f = self.fusion
        # a person's lift is worth what their name narrows: (1 - their share)
        share = max((people.share.get(u, 0.0) for u in focus.user_ids), default=0.0)
        person = w.person * (1 - self.fusion.share * share) if focus.user_ids else 0.0
        start, end = about or (0.0, 0.0)
        order = sorted(fused, key=lambda i: (-fused[i], i))  # as the other sides ranked them
        ranked = f.lift == "ranked"
        theirs = spanned = 0
        for event_id in order:
            event = records.get(event_id)
            if event is None:
                continue
            if person and focus.about(event.user_id, event.text):
                fused[event_id] += person * lift_unit(w.by, f.rrf_k, theirs if ranked else 0)
                theirs += 1
            if w.time and start <= event.timestamp < end:
                fused[event_id] += w.time * lift_unit(w.by, f.rrf_k, spanned if ranked else 0)
                spanned += 1

    def _narrowed(self, user_ids: Collection[str], people: People) -> bool:
        """Whether people named said less than ``Fusion.whole_chat`` of the chat's memories:
        naming both of a chat of two names nobody in particular."""
        return sum(people.share.get(u, 0.0) for u in user_ids) < self.fusion.whole_chat

    def _between(
        self, fused: dict[str, float], query: EventQuery, people: frozenset[str], w: Weights
    ) -> None:
        """The memories of ties between the people a question names, as one more side:
        those the other sides found, in their order, then the rest, newest first."""
        theirs = self.lexical.exchanges(query, people)
        if not theirs:
            return
        held = set(theirs)
        order = [i for i in sorted(fused, key=lambda i: (-fused[i], i)) if i in held]
        order += [i for i in theirs if i not in fused]
        for rank, event_id in enumerate(order):
            fused[event_id] += w.between * lift_unit(w.by, self.fusion.rrf_k, rank)

    def circle(self, query: EventQuery, user_id: str) -> list[Circle]:
        return self.lexical.circle(query, user_id)

    def _fade(
        self, ranked: list[tuple[str, float]], now: float | None, w: Weights
    ) -> list[tuple[str, float]]:
        """The best few again, each lifted by ``weight × retention`` first ranks: between
        memories about as relevant, the fresh, important or recalled one comes first."""
        assert self.strength is not None
        strengths = self.strength.of([i for i, _ in ranked])
        at = time.time() if now is None else now
        top = self.decay.weight * lift_unit(w.by, self.fusion.rrf_k)
        faded = [
            (i, score + top * self.decay.retention(strengths[i], at) if i in strengths else score)
            for i, score in ranked
        ]
        return sorted(faded, key=lambda kv: (-kv[1], kv[0]))

    def _fetch(self, ids: Iterable[str], records: dict[str, EventRecord]) -> None:
        if missing := [i for i in ids if i not in records]:
            records.update({e.id: e for e in self.lexical.get(missing)})

    def _dense(
        self,
        query: EventQuery,
        members: ScopeMembers | None,
        vector: list[float],
        records: dict[str, EventRecord] | None = None,
    ) -> list[tuple[str, float]]:
        """The dense ranking (ids and cosines, best first), from memory when the scope is
        held; the records it read from SQL on the way go into ``records``."""
        if members is not None and not members.ids:
            return []
        if members is not None:
            held = None
            if query.plain:  # the held copy is the whole scope's
                key = (self.bot, query.scope, query.persona_id)
                fetch = partial(self._changed_vectors, query, members)
                held = self.held.search(key, members, vector, query.top_k, fetch)
            if held is None and len(members.ids) <= self.exact_max:
                held = self._unnarrowed(query, members, vector)
                if held is None:
                    # a user or time filter too: Chroma's HNSW narrowed to a few ids walks
                    # most of its graph; SQL reads them far faster (docs/benchmarks/constants.md)
                    held = self.search_exact(query, members, vector)
            if held is not None:
                return held
        nearest = None  # ids only, here and below: SQL gives the records of those fused
        if members is not None:
            nearest = self.vector.nearest(query, members.ids, vector)
        if nearest is None:
            # a scope SQL does not list: an id Chroma holds and SQL not yet (its write in
            # flight) has no record to show, and would take a place of the top k
            found = self.vector.nearest_where(query, vector)
            records = {} if records is None else records
            self._fetch([event_id for event_id, _ in found], records)  # read once
            nearest = [hit for hit in found if hit[0] in records]
        return nearest

    def exact_first(self, query: EventQuery, members: int) -> bool:
        """A scope not held is searched exactly over its vectors from SQL, not by Chroma:
        up to ``exact_max`` members, unless more than ``ann_min`` that Chroma searches
        unnarrowed (one HNSW query, whatever the scope's size)."""
        if members > self.exact_max:
            return False
        return members <= self.ann_min or not self.vector.unnarrowed(query, members)

    def _unnarrowed(
        self, query: EventQuery, members: ScopeMembers, vector: Sequence[float]
    ) -> list[tuple[str, float]] | None:
        """Chroma's answer for a scope it searches faster than SQL exactly (``exact_first``);
        None for any other, and when Chroma is down or lacks an id: exact search needs no
        Chroma, so a chat SQL can answer is answered through an outage."""
        try:
            if self.exact_first(query, len(members.ids)):
                return None
            return self.vector.nearest(query, members.ids, vector)
        except Exception as exc:  # noqa: BLE001 - any Chroma failure: SQL answers
            log.warning("Chroma search failed, searched exactly in SQL: %s: %s",
                        type(exc).__name__, exc)  # fmt: skip
            return None

    def _changed_vectors(
        self, query: EventQuery, members: ScopeMembers, ids: list[str]
    ) -> dict[str, np.ndarray]:
        """The vectors a held scope lacks: sealed ones, then the loose rest."""
        sealed = self._sealed(query, members, ids)
        found = self._loose(query, members, sealed.loose)
        found.update(zip(sealed.ids, sealed.units(), strict=True))
        return found

    def _sealed(self, query: EventQuery, members: ScopeMembers, ids: Sequence[str]) -> Sealed:
        """``ids``' vectors the scope's sealed blocks hold, and which they do not; many of
        those: the scope is sealed in the background, for the next read."""
        written = members.written
        wanted = written if ids is members.ids else {i: written[i] for i in ids if i in written}
        sealed = self.lexical.sealed_vectors(query, wanted)
        if sealed.to_seal and self.seal and query.persona_id is not None:
            self._seal_later(query.scope, query.persona_id)
        return sealed

    def _loose(
        self, query: EventQuery, members: ScopeMembers, loose: list[str]
    ) -> dict[str, np.ndarray]:
        """Vectors no block holds: by id when few, else read with the whole scope's rows
        (a chat's first load: 5,000 interleaved among 1M, ~76 → ~31 ms); Chroma's for those
        SQL lacks; left out when neither has one."""
        if not loose:
            return {}
        if 2 * len(loose) < len(members.ids):
            return self.vectors(loose)
        return self._scope_vectors(query, loose)

    def _scope_vectors(self, query: EventQuery, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """``ids``' vectors, read with the whole scope from SQL; Chroma's for those SQL
        lacks (stored before SQL kept vectors); absent when neither has one."""
        found = self.lexical.scope_vectors(query)
        wanted = {i: found[i] for i in ids if i in found}
        missing = [i for i in ids if i not in wanted]
        if missing:
            wanted.update(self.vector.vectors(missing))
        return wanted

    def _seal_later(self, scope: ChatScope, persona_id: str) -> None:
        """One seal of a scope at a time; a failed one leaves the vectors loose, read by
        row (slower, never wrong), and the next read asks again."""
        self._sealer.submit(lambda: self.lexical.seal(scope, persona_id), (scope, persona_id))

    def search_exact(
        self, query: EventQuery, members: ScopeMembers, vector: Sequence[float]
    ) -> list[tuple[str, float]] | None:
        """Exact search over the scope's vectors, read now and not kept: sealed ones scored
        as int8 codes, up to ``loose_max`` loose ones read by row. None when more are loose
        or one is missing (a write in flight): Chroma answers then."""
        sealed = self._sealed(query, members, members.ids)
        if len(sealed.loose) > self.loose_max:  # Chroma answers while they are sealed
            return None
        rest = self._loose(query, members, sealed.loose)
        if len(sealed.ids) + len(rest) < len(members.ids):
            return None
        q = unit(vector)
        scores, ids = sealed.cosines(q), sealed.ids
        if rest:
            loose = np.einsum("ij,j->i", unit_rows(list(rest.values())), q)
            scores, ids = np.concatenate([scores, loose]), ids + list(rest)
        return best(scores, ids, query.top_k)

    def get(self, ids: Sequence[str]) -> list[EventRecord]:
        # SQL alone holds events' text; an id only Chroma has yet is a write in flight
        return self.lexical.get(ids)

    def count(self, scope: ChatScope | None = None) -> int:
        return self.vector.count(scope)

    def scrub_context(self, target: ForgetTarget, said: Said) -> list[str]:
        """Found by SQL and blanked there; their Chroma rows, if written before rows were
        lean (text and every field), made lean (vectors kept: the text is unchanged)."""
        found = [
            replace(e, context="", context_user_id="")
            for e in self.lexical.context_holders(target, said)
        ]
        self.vector.make_lean(found)
        self.lexical.upsert_many(found)
        return [e.id for e in found]

    def covered(self, target: ForgetTarget) -> list[str]:
        return self.lexical.covered(target)  # SQL holds every event's text

    def forget(self, target: ForgetTarget) -> list[str]:
        """Both sides, SQL first (the dense side follows the ids SQL lists, so a search in
        between finds nothing it should not); this process's held vectors drop them now,
        other processes' on their next search of the scope."""
        ids = set(self.lexical.forget(target)) | set(self.vector.forget(target))
        self.held.discard(ids)
        return sorted(ids)

    # --- reinforcement, pins, pruning (stores/decay.py) ------------------------------------

    def recalled(self, ids: Sequence[str], at: float | None = None) -> None:
        """These memories were recalled into a reply (or a tool's answer): each one's
        half-life grows, and its clock starts again."""
        if self.strength is not None and ids:
            self.strength.recalled(ids, time.time() if at is None else at)

    def pin(self, ids: Sequence[str], pinned: bool = True) -> list[str]:
        """Pin (or unpin) memories: a pinned one never fades nor is pruned. Returns the ids
        found."""
        if self.strength is None:
            return []
        return self.strength.pin(ids, pinned)

    def prune(self, now: float | None = None, cap: int | None = None) -> dict[str, int]:
        """Each chat holding more than ``cap`` memories (the setting's by default; 0: none)
        loses its weakest prunable ones, down to the cap where it can; per chat key, how many
        went. SQL first, as in forget."""
        cap = self.decay.cap if cap is None else cap
        if self.strength is None or cap <= 0:
            return {}
        at = time.time() if now is None else now
        removed: dict[str, int] = {}
        for scope, count in self.strength.over(cap):
            strengths = self.strength.in_chat(scope)
            weak = sorted(
                (i for i, s in strengths.items() if self.decay.prunable(s, at)),
                key=lambda i: (self.decay.retention(strengths[i], at), i),
            )[: count - cap]
            if weak:
                self.remove(weak)
                removed[scope.key] = len(weak)
        return removed

    def stored(self, ids: Sequence[str]) -> set[str]:
        return {e.id for e in self.lexical.get(ids)}  # SQL is written second

    def strengths(self, ids: Sequence[str]) -> dict[str, Strength]:
        return self.strength.of(ids) if self.strength is not None else {}

    def remove(self, ids: Sequence[str]) -> None:
        """Erase these memories (an operator's forget of one, a prune): SQL first, with
        their strength rows, as in forget."""
        self.lexical.remove(ids)
        self.vector.remove(ids)
        self.held.discard(set(ids))
