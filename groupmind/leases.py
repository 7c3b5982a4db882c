"""A memory worker's heartbeat: the leases of the jobs it runs, renewed on one thread.

One thread for the worker's life, not one a job: starting and joining a thread per job
cost ~0.6 ms of a ~50 ms job (py-spy, ``groupmind worker`` on rule jobs).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from stores.base import JobQueue

log = logging.getLogger("groupmind.worker")


class LeaseKeeper:
    """Renews every held job's lease each third of a lease (at least every 0.5 s), on a
    thread that ends at a beat with nothing held. A job
    whose lease was lost to another worker is renewed no more; a queue that cannot be
    reached is tried again at the next beat, and the job goes on meanwhile."""

    def __init__(self, worker_id: str, lease_s: float) -> None:
        self.worker_id, self.lease_s = worker_id, lease_s
        self._held: dict[str, JobQueue] = {}
        # Held while a lease is renewed: a job is let go only between renewals, so no
        # renewal of a finished job can follow (it would read as a lost lease).
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @contextmanager
    def hold(self, jobs: JobQueue, request_id: str) -> Iterator[None]:
        """The job's lease is renewed while the block runs."""
        with self._lock:
            self._held[request_id] = jobs
            if self._thread is None:
                self._thread = threading.Thread(target=self._beat, name="leases", daemon=True)
                self._thread.start()
        try:
            yield
        finally:
            with self._lock:
                self._held.pop(request_id, None)

    def _beat(self) -> None:
        wait = max(0.5, self.lease_s / 3)
        while True:
            time.sleep(wait)
            with self._lock:
                if not self._held:  # a worker with nothing to run keeps no thread
                    self._thread = None
                    return
                for request_id, jobs in list(self._held.items()):
                    self._renew(jobs, request_id)

    def _renew(self, jobs: JobQueue, request_id: str) -> None:
        try:
            if not jobs.renew(request_id, self.worker_id, lease_s=self.lease_s):
                log.warning("memory job %s: lease lost to another worker", request_id)
                del self._held[request_id]
        except Exception:  # noqa: BLE001 - the queue may be down; the job goes on
            log.warning("memory job %s: could not renew the lease", request_id)
