"""`groupmind worker` lowers its own CPU priority (``WORKER_NICE``) at start: every thread
of the running process (leases, embedding, jobs, numpy's pool started at import) has it,
and so has its session's group when the kernel groups by session and the worker leads its
own, as honcho starts each process. It never raises a priority an operator lowered further."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from benchmarks.fault_suite import env_for, start_worker, stop

pytestmark = pytest.mark.timeout(120)
AUTOGROUP = Path("/proc/sys/kernel/sched_autogroup_enabled")
BASE = os.getpriority(os.PRIO_PROCESS, 0)  # the worker starts at the test runner's


def niced(by: int) -> int:
    """What ``nice -n by`` makes of the test runner's niceness."""
    return min(19, BASE + by)


def thread_nices(pid: int) -> set[int]:
    """The niceness of each thread of a process (/proc/PID/task/TID/stat, field 19)."""
    nices = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        nices.add(int(fields[16]))
    return nices


@contextmanager
def serving(tmp_path: Path, prefix: list[str], **settings: str) -> Iterator[int]:
    """A worker, once it polls (its threads started); yields its pid."""
    log = tmp_path / "worker.log"
    proc = start_worker(env_for(tmp_path / "data", **settings), log, prefix=prefix)
    try:
        deadline = time.monotonic() + 90
        while "polling every" not in log.read_text(errors="replace"):
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield proc.pid
    finally:
        stop(proc)


def test_every_thread_of_a_worker_runs_at_its_nice(tmp_path: Path) -> None:
    with serving(tmp_path, [], worker_nice="7") as pid:
        assert len(list(Path(f"/proc/{pid}/task").iterdir())) > 1  # the lease keeper at least
        assert thread_nices(pid) == {max(BASE, 7)}


def test_a_worker_started_nicer_stays_as_nice(tmp_path: Path) -> None:
    with serving(tmp_path, ["nice", "-n", "12"], worker_nice="7") as pid:
        assert thread_nices(pid) == {max(niced(12), 7)}


def test_nice_zero_leaves_the_priority_alone(tmp_path: Path) -> None:
    with serving(tmp_path, ["nice", "-n", "3"], worker_nice="0") as pid:
        assert thread_nices(pid) == {niced(3)}


@pytest.mark.skipif(
    not AUTOGROUP.exists() or AUTOGROUP.read_text().strip() != "1",
    reason="the kernel does not group by session (autogroup)",
)
def test_a_worker_leading_its_session_lowers_the_session_group(tmp_path: Path) -> None:
    """The kernel weighs a session's group against the others; a thread's nice only orders
    it within its group, so the group gets the nice too."""
    with serving(tmp_path, ["setsid"], worker_nice="6") as pid:
        assert Path(f"/proc/{pid}/autogroup").read_text().split()[-1] == "6"
        assert thread_nices(pid) == {max(BASE, 6)}
