"""BM25 inside one scope, over that scope's postings held in memory.

At 20k memories in a chat a keyword search reads ~7k posting rows from SQL per question
(~18 ms alone, ~29 ms beside the query's embedding on two cores: the reply's critical
path). Held as arrays per term, the same scores take ~1 ms. As with held vectors
(``stores.scope_vectors``) SQL stays the truth: each search brings the scope's member list
(read anyway), a held scope answers only at the list's version, new memories are appended
from what was written since, and anything else (a rewrite, a removal) rebuilds the scope in
the background while SQL answers.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from stores.bm25 import gain, top_k
from stores.held_scopes import HeldScopes
from stores.scope_members import ScopeMembers

log = logging.getLogger(__name__)
# (event_id, term, tf, length) rows: of the whole scope (None) or of these events
FetchPostings = Callable[[Sequence[str] | None], list[Any]]


@dataclass(frozen=True)
class _Held:
    version: tuple[int, float]
    ids: list[str]  # row -> event id
    written: dict[str, tuple[int, float]]  # event id -> (row, when written)
    length: np.ndarray  # per row
    terms: dict[str, tuple[np.ndarray, np.ndarray]]  # term -> (rows, tf)


class ScopePostings(HeldScopes[_Held]):
    """Held postings of any number of scopes (each key names its bot, scope and persona);
    one budget, in events, for all; the least recently searched go first."""

    def __init__(self, *, max_events: int = 100_000, background: bool = True) -> None:
        super().__init__(max_events, background=background, name="scope-postings")

    def search(
        self,
        key: Hashable,
        members: ScopeMembers,
        terms: Sequence[str],
        k: int,
        prune: Callable[[list[str], dict[str, int]], list[str]],
        params: tuple[float, float, float],
        fetch: FetchPostings,
    ) -> list[tuple[str, float]] | None:
        """BM25's best ``k`` (id, score), ties by id; None when the scope is not held at
        this version (yet): ask SQL. ``prune`` picks the terms to read from their document
        frequencies; ``params``: (k1, b, average length)."""
        if not members.ids or len(members.ids) > self.budget:
            return None
        with self._lock:
            held = self._held.get(key)
            if held is not None:
                self._held.move_to_end(key)
        if held is None or held.version != members.version:
            try:
                held = self._follow(key, members, held, fetch)
            except Exception:  # noqa: BLE001 - SQL answers; the next search tries again
                log.warning("could not follow the postings of scope %s", key, exc_info=True)
                return None
            if held is None:
                return None
        df = {t: len(held.terms[t][0]) for t in terms if t in held.terms}
        kept = [t for t in prune(list(terms), df) if t in held.terms]
        if not kept or k <= 0:
            return []
        return _top(held, kept, df, len(members.ids), params, k)

    def _follow(
        self, key: Hashable, members: ScopeMembers, held: _Held | None, fetch: FetchPostings
    ) -> _Held | None:
        """The held scope at the members' version: new memories appended now; else rebuilt
        (in the background when there is a loader) and None meanwhile."""
        if held is not None:
            new = _new(held, members)
            if new is not None:
                grown = _appended(held, members, new, fetch(new)) if new else held
                with self._lock:
                    return self._keep(key, replace(grown, version=members.version))
        if self._loader is None:
            return self._build(key, members, fetch)
        self._later(key, lambda: self._build(key, members, fetch))
        return None

    def _build(self, key: Hashable, members: ScopeMembers, fetch: FetchPostings) -> _Held:
        built = _appended(_EMPTY, members, list(members.ids), fetch(None))
        with self._lock:
            return self._keep(key, built)


def _new(held: _Held, members: ScopeMembers) -> list[str] | None:
    """The members ``held`` lacks, when nothing it holds was rewritten or removed since
    (else None: rebuild). From what was written since the held version when the member
    list says so (it starts at the last write's time, so it may repeat held rows), else
    from the whole list (a build that finished behind a busy chat's writes)."""
    candidates: Iterable[tuple[str, float]] = (
        members.since.items() if members.grown_from == held.version else members.written.items()
    )
    new = []
    for event_id, written in candidates:
        had = held.written.get(event_id)
        if had is None:
            new.append(event_id)
        elif had[1] != written:
            return None
    return new if len(held.ids) + len(new) == len(members.ids) else None


def _appended(held: _Held, members: ScopeMembers, new: list[str], rows: list[Any]) -> _Held:
    """``held`` and the new events (an empty ``held``: the scope built whole); only the
    terms the new events hold are copied. A row of an event the list does not name was
    written after the list was read: it belongs to the next version."""
    n = len(held.ids)
    at = {event_id: n + k for k, event_id in enumerate(new)}
    length = np.concatenate([held.length, np.ones(len(new))])
    added: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    for event_id, term, tf, doc_length in rows:
        row = at.get(event_id)
        if row is None:
            continue
        length[row] = doc_length
        added[term][0].append(row)
        added[term][1].append(tf)
    terms = dict(held.terms)
    for term, (r, f) in added.items():
        old = terms.get(term)
        new_rows, new_tf = np.asarray(r, dtype=np.int32), np.asarray(f, dtype=np.float64)
        terms[term] = (
            (new_rows, new_tf)
            if old is None
            else (np.concatenate([old[0], new_rows]), np.concatenate([old[1], new_tf]))
        )
    written = dict(held.written)
    written.update((i, (at[i], members.written[i])) for i in new)
    return _Held(members.version, held.ids + new, written, length, terms)


_EMPTY = _Held(version=(0, 0.0), ids=[], written={}, length=np.ones(0), terms={})


def _top(
    held: _Held,
    terms: list[str],
    df: dict[str, int],
    n_docs: int,
    params: tuple[float, float, float],
    k: int,
) -> list[tuple[str, float]]:
    rows = np.concatenate([held.terms[t][0] for t in terms])
    tf = np.concatenate([held.terms[t][1] for t in terms])
    freq = np.concatenate([np.full(df[t], float(df[t])) for t in terms])
    length = held.length[rows]
    found, index = np.unique(rows, return_inverse=True)
    scores = np.bincount(
        index, weights=gain(tf, length, freq, n_docs, params), minlength=len(found)
    )
    ids = held.ids
    top = top_k(scores, lambda i: ids[found[i]], k)
    return [(ids[found[i]], float(scores[i])) for i in top]
