"""What held vectors (``stores.scope_vectors``) and held postings (``stores.scope_postings``)
share: scopes held in memory by key (the key names the bot), the least recently searched
first, within one budget of events; and one background thread that builds a scope while
the search is answered from the store (dropped when the process exits: ``stores.background``)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

from stores.background import Background


class _Sized(Protocol):
    @property
    def ids(self) -> list[str]: ...


H = TypeVar("H", bound=_Sized)


class HeldScopes(Generic[H]):
    def __init__(self, budget: int, *, background: bool, name: str) -> None:
        self.budget = budget  # events held, over every scope
        self._held: OrderedDict[Hashable, H] = OrderedDict()  # least recently used first
        self._lock = threading.Lock()
        self._loader = Background(f"holding {name}") if background else None

    def holds(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._held

    def held_ids(self) -> set[str]:
        with self._lock:
            return {i for held in self._held.values() for i in held.ids}

    def discard(self, ids: set[str]) -> None:
        """Drop every held scope with one of these (erased) events: built again when next
        searched, from what the store still lists."""
        with self._lock:
            for key in [k for k, held in self._held.items() if not ids.isdisjoint(held.ids)]:
                del self._held[key]

    def _keep(self, key: Hashable, updated: H) -> H:
        """Hold ``updated`` as the most recently used (under the lock); the least recently
        used go while the events held exceed the budget (the last one stays)."""
        self._held[key] = updated
        self._held.move_to_end(key)
        total = sum(len(h.ids) for h in self._held.values())
        while total > self.budget and len(self._held) > 1:
            _, evicted = self._held.popitem(last=False)
            total -= len(evicted.ids)
        return updated

    def _later(self, key: Hashable, work: Callable[[], object]) -> None:
        """``work`` on the background thread, once at a time per scope; meanwhile (and
        after a failure, which is logged) the store answers."""
        assert self._loader is not None
        self._loader.submit(work, key)
