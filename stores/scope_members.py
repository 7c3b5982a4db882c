"""What the SQL side hands the held layers of a scope (``stores.scope_vectors``,
``stores.scope_postings``): the events a scope admits, as columns, and the vectors its
sealed blocks hold."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np


@dataclass(frozen=True)
class ScopeMembers:
    """The events a query's scope admits, as the SQL side knows them: each id with when it
        was last written (``written``) and who said it (``said_by``, so the scope's people need
        no query of their own), a version (count, last write) that changes with any write, and
        the indexed text's total length (BM25's average, without another scan), and when each
    was said (``said_at``: what comes before and after it). A list grown
        from an earlier version says which (``grown_from``) and what was written since
        (``since``), so what is held of that version is brought up to date in the size of the
        change, not of the scope.

        Columns, not an object per memory: a held chat's list lives as long as the process,
        and 20k objects of a named-tuple class stayed in every full garbage collection (CPython
        stops tracking plain tuples of strings and floats, never a subclass's). ``said_by``
        shares one ``(user_id, user_name)`` tuple per speaker."""

    version: tuple[int, float]
    written: dict[str, float]
    said_by: dict[str, tuple[str, str]]
    length: int = 0
    grown_from: tuple[int, float] | None = None
    since: dict[str, float] = field(default_factory=dict)
    said_at: dict[str, float] = field(default_factory=dict)  # each id's event time

    @cached_property
    def ids(self) -> list[str]:
        return list(self.written)

    @cached_property
    def in_order(self) -> tuple[list[str], np.ndarray, dict[str, int]]:
        """The ids in the order they were said (event time, then write time), their event
        times, and each id's place: kept with the list, as long as the scope's version."""
        ids = list(self.said_at)
        times = np.fromiter(self.said_at.values(), np.float64, len(ids))
        writes = np.fromiter((self.written.get(i, 0.0) for i in ids), np.float64, len(ids))
        order = np.lexsort((writes, times))
        ordered = [ids[i] for i in order.tolist()]
        return ordered, times[order], {event_id: n for n, event_id in enumerate(ordered)}


@dataclass(frozen=True)
class Sealed:
    """A scope's wanted vectors as its sealed blocks hold them (``stores.sql.blocks``):
    for ``ids``, each vector's int8 codes (``codes``, a row each) and their norms (the
    scale cancels out of a cosine, so they are scored without unpacking); ``loose``, the
    wanted ids no block holds as last written; ``to_seal``, enough of them loose to seal."""

    ids: list[str] = field(default_factory=list)
    codes: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int8))
    norms: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    loose: list[str] = field(default_factory=list)
    to_seal: bool = False

    def cosines(self, query: np.ndarray) -> np.ndarray:
        """Each row's cosine with ``query`` (a unit vector)."""
        if not self.ids:
            return np.zeros(0, np.float32)
        scores: np.ndarray = np.einsum("ij,j->i", self.codes, query) / self.norms
        return scores

    def units(self) -> np.ndarray:
        """The rows as unit float32 vectors (what held vectors keep)."""
        rows: np.ndarray = self.codes.astype(np.float32) / self.norms[:, None]
        return rows
