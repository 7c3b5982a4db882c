"""The in-process memory worker: a daemon thread that runs memory jobs as hand_off writes
them (woken at once, and polling as a fallback), so a reply never waits for memory."""

from __future__ import annotations

import logging
import threading
import time

from groupmind.worker import MemoryWorker

log = logging.getLogger("groupmind.worker")
REPLY_GAP_S = 0.001  # "no reply in flight": the last one ended at least this long ago
STEP_YIELD_S = 0.2


class BackgroundWorker:
    def __init__(
        self, worker: MemoryWorker, wake: threading.Event, poll_s: float = 1.0, yield_s: float = 1.0
    ) -> None:
        self.worker, self.wake, self.poll_s, self.yield_s = worker, wake, poll_s, yield_s
        worker.between_steps = self._between_steps
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._thread = threading.Thread(target=self._run, name="groupmind-memory", daemon=True)

    def start(self) -> BackgroundWorker:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.wake.clear()
            # Replies first: wait for a pause in replies, never more than yield_s per job.
            self.worker.deps.process.foreground.wait_quiet(0.1, self.yield_s)
            try:
                ran = self.worker.run_next() is not None
            except Exception:  # noqa: BLE001 - keep serving; the job keeps its error
                log.exception("memory worker: unexpected error")
                ran = False
            if not ran:
                self._idle.set()
                self.wake.wait(self.poll_s)
                self._idle.clear()

    def _between_steps(self) -> None:
        # Within a job: wait out the reply in flight (a step is milliseconds; replies come
        # first), never more than STEP_YIELD_S a step, so a busy chat cannot starve memory.
        self.worker.deps.process.foreground.wait_quiet(REPLY_GAP_S, STEP_YIELD_S)

    def drain(self, timeout_s: float = 120.0, *, retries: bool = False) -> bool:
        """Wait until no job is due or running (a CLI run that must finish its memory);
        with ``retries``, also until jobs waiting out a backoff have run again."""
        deadline = time.monotonic() + timeout_s
        self.wake.set()
        while time.monotonic() < deadline:
            if self._idle.is_set() and not self.wake.is_set() and not self._due(retries):
                return True
            time.sleep(0.02)
        return False

    def _due(self, retries: bool = False) -> bool:
        jobs = self.worker.board  # every bot's: this process runs them all
        now = time.time()
        waiting = jobs.list("queued", 1000)
        queued = any(retries or row.next_attempt_at <= now for row in waiting)
        return queued or bool(jobs.counts().get("running", 0))

    def stop(self) -> None:
        self._stop.set()
        self.wake.set()
        self._thread.join(timeout=10)
