"""Exact dense search inside one scope, over that scope's vectors held in memory.

Chroma's search narrowed to a chat costs ~13 ms at 4k ids among 200k events (its metadata
filter ~60 ms); the same vectors in one matrix answer in ~0.1 ms, and exactly. SQL says
who is in the scope and when each was last written (``ScopeMembers``), so the copy follows
every write from any process: new or rewritten events are fetched by id (from SQL, packed;
~2.5 ms per 500), gone ones dropped. A scope not held yet is loaded during the search when
it has up to ``INLINE_FETCH`` events to fetch; a larger one is answered by Chroma while it
loads in the background. Asking Chroma opens its index, which an embedded Chroma holds
whole in memory (2.2 GB at 1M events), so a bot process asks it only for scopes that big.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from stores.held_scopes import HeldScopes
from stores.scope_members import ScopeMembers

Fetch = Callable[[list[str]], dict[str, np.ndarray]]
INLINE_FETCH = 5000  # changed events fetched during a search; more: in the background


@dataclass(frozen=True)
class _Held:
    version: tuple[int, float] | None  # None: some member was not in Chroma yet
    rows: dict[str, tuple[int, float]]  # id -> (row, written)
    ids: list[str]
    matrix: np.ndarray  # one unit vector per row: the first len(ids) rows of buffer
    buffer: np.ndarray  # with spare rows, so a new memory is appended, not copied in


class ScopeVectors(HeldScopes[_Held]):
    """Held scopes of any number of event stores (one per bot): each search names the key
    (which includes the bot) and how to fetch that store's vectors; one budget for all."""

    def __init__(self, *, max_vectors: int = 100_000, background: bool = True):
        super().__init__(max_vectors, background=background, name="scope-vectors")

    def search(
        self, key: Hashable, members: ScopeMembers, vector: Sequence[float], k: int, fetch: Fetch
    ) -> list[tuple[str, float]] | None:
        """The ``k`` members nearest to ``vector`` by cosine, best first, as (id, similarity);
        None when the scope is not held (yet): ask Chroma instead."""
        if not members.ids or len(members.ids) > self.budget:
            with self._lock:
                self._held.pop(key, None)
            return None
        with self._lock:
            held = self._held.get(key)
        if held is None or held.version != members.version:
            changed = _changed(held, members)
            if len(changed) > INLINE_FETCH and self._loader is not None:
                self._load_later(key, members, fetch)
                return None
            held = self._update(key, members, held, changed, fetch)
        if not held.ids:
            return None
        return nearest(held.matrix, held.ids, vector, k)

    def held_bytes(self) -> int:
        """What the held vectors take in memory, their buffers' spare rows included."""
        with self._lock:
            return sum(held.buffer.nbytes for held in self._held.values())

    def _update(
        self,
        key: Hashable,
        members: ScopeMembers,
        held: _Held | None,
        changed: dict[str, float],
        fetch: Fetch,
    ) -> _Held:
        got = fetch(list(changed)) if changed else {}
        with self._lock:
            # rows added in place when only new or rewritten: no copy of a busy chat's matrix
            appended = (
                _appended(held, members, changed, got) if self._held.get(key) is held else None
            )
            if appended is not None:
                return self._keep(key, appended)
        rebuilt = _rebuilt(held, members, changed, got)
        with self._lock:
            return self._keep(key, rebuilt)

    def _load_later(self, key: Hashable, members: ScopeMembers, fetch: Fetch) -> None:
        def load() -> None:
            with self._lock:
                held = self._held.get(key)
            self._update(key, members, held, _changed(held, members), fetch)

        self._later(key, load)


def nearest(
    matrix: np.ndarray, ids: Sequence[str], vector: Sequence[float], k: int
) -> list[tuple[str, float]]:
    """The ``k`` rows of ``matrix`` (unit vectors) nearest to ``vector`` by cosine, best
    first, as (id, similarity)."""
    # einsum, not @: through OpenBLAS the product wakes its worker threads, which then
    # spin and slow the rest of the reply on a 2-core machine (docs/benchmarks/constants.md).
    return best(np.einsum("ij,j->i", matrix, unit(vector)), ids, k)


def unit(vector: Sequence[float]) -> np.ndarray:
    query = np.asarray(vector, dtype=np.float32)
    normed: np.ndarray = query / (np.linalg.norm(query) or 1.0)
    return normed


def best(scores: np.ndarray, ids: Sequence[str], k: int) -> list[tuple[str, float]]:
    """The ``k`` best scores, best first, as (id, score); ties by row, reproducibly."""
    top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
    top = top[np.lexsort((top, -scores[top]))]
    return [(ids[i], float(scores[i])) for i in top]


def _changed(held: _Held | None, members: ScopeMembers) -> dict[str, float]:
    """Members not held, or rewritten since they were, with their write times: from what
    was written since the held version when the list says so, else from the whole list."""
    if held is None:
        return dict(members.written)
    candidates: Iterable[tuple[str, float]] = (
        members.since.items()
        if held.version is not None and held.version == members.grown_from
        else members.written.items()
    )
    return {i: written for i, written in candidates if held.rows.get(i, (0, None))[1] != written}


def unit_rows(vectors: list[np.ndarray]) -> np.ndarray:
    new = np.stack([np.asarray(v, dtype=np.float32) for v in vectors])
    normed: np.ndarray = new / np.maximum(np.linalg.norm(new, axis=1, keepdims=True), 1e-12)
    return normed


def _rebuilt(
    held: _Held | None, members: ScopeMembers, changed: dict[str, float], got: dict[str, np.ndarray]
) -> _Held:
    """The scope's rows in a new buffer: those still held and unchanged, then the fetched."""
    kept = [i for i in members.ids if i not in changed]
    ids = kept + [i for i in changed if i in got]
    parts = []
    if kept and held is not None:
        parts.append(held.matrix[[held.rows[i][0] for i in kept]])
    if got:
        parts.append(unit_rows([got[i] for i in changed if i in got]))
    matrix = np.concatenate(parts) if parts else np.empty((0, 0), np.float32)
    return _Held(
        version=members.version if len(got) == len(changed) else None,
        rows={i: (row, members.written[i]) for row, i in enumerate(ids)},
        ids=ids,
        matrix=matrix,
        buffer=matrix,
    )


def _appended(
    held: _Held | None, members: ScopeMembers, changed: dict[str, float], got: dict[str, np.ndarray]
) -> _Held | None:
    """``held`` with the new members appended to its buffer's spare rows and the rewritten
    ones overwritten in place (a search still reading the old rows sees the newer vector of
    the same event); None when a member went or a vector is missing: rebuild instead.
    Called under the lock, so two searches never write the same spare rows."""
    if held is None or held.version is None or not held.ids or len(got) != len(changed):
        return None
    new = [i for i in changed if i not in held.rows]
    n = len(held.ids)
    if n + len(new) != len(members.ids) or not changed:
        return None
    buffer = held.buffer
    if n + len(new) > len(buffer):  # doubled: appends cost O(1) rows each, amortised
        buffer = np.empty((max(2 * len(buffer), n + len(new)), buffer.shape[1]), np.float32)
        buffer[:n] = held.matrix
    rows = dict(held.rows)
    rows.update((i, (n + k, changed[i])) for k, i in enumerate(new))
    for i in changed.keys() - set(new):
        rows[i] = (rows[i][0], changed[i])
    order = list(changed)
    buffer[[rows[i][0] for i in order]] = unit_rows([got[i] for i in order])
    ids = held.ids + new
    return _Held(members.version, rows, ids, buffer[: len(ids)], buffer)
