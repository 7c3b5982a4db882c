"""Work done off the request path that a process may drop when it exits.

A ``ThreadPoolExecutor``'s threads are joined when the interpreter exits, after everything
queued has run: a command that searched fifty chats not held would wait for fifty seals
(~1 s each) before it could exit. What runs here only makes later reads cheaper (a chat's
vectors held, or sealed in blocks); the next process does it again when it needs it, and
a seal cut short commits nothing (its block is written in one transaction).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Hashable

log = logging.getLogger(__name__)


class Background:
    """One daemon thread that runs the work it is given, in order, started on first use;
    work given under a key already queued or running is dropped (one load or seal of a
    scope at a time). A failure is logged; the next search asks again."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._queue: queue.SimpleQueue[tuple[Hashable, Callable[[], object]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._pending: set[Hashable] = set()
        self._lock = threading.Lock()

    def submit(self, work: Callable[[], object], key: Hashable | None = None) -> bool:
        """False when ``key``'s work is queued or running already (this one is dropped)."""
        with self._lock:
            if key is not None:
                if key in self._pending:
                    return False
                self._pending.add(key)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
        self._queue.put((key, work))
        return True

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the work given so far; False if it is still running after ``timeout``."""
        done = threading.Event()
        self.submit(done.set)
        return done.wait(timeout)

    def _run(self) -> None:
        while True:
            key, work = self._queue.get()
            try:
                work()
            except Exception:  # noqa: BLE001 - the thread stays for the next work
                log.warning("%s of %s failed", self.name, key, exc_info=True)
            finally:
                if key is not None:
                    with self._lock:
                        self._pending.discard(key)
