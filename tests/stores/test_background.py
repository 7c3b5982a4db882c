"""Background work (held scopes, sealing) runs in order, survives a failing item, and is
dropped when the process exits instead of holding the exit up."""

from __future__ import annotations

import subprocess
import sys
import threading

from stores.background import Background


def test_work_runs_in_order_and_a_failure_does_not_stop_the_thread() -> None:
    done: list[int] = []
    background = Background("test")
    background.submit(lambda: done.append(1))
    background.submit(lambda: 1 / 0)  # logged, and the next item runs
    background.submit(lambda: done.append(2))
    assert background.join(timeout=30)
    assert done == [1, 2]


def test_join_says_when_work_is_still_running() -> None:
    release = threading.Event()
    background = Background("test")
    background.submit(release.wait)
    assert not background.join(timeout=0.2)
    release.set()
    assert background.join(timeout=30)


def test_a_process_exits_with_work_still_queued() -> None:
    """A seal that never ends and others queued behind it: with a ThreadPoolExecutor the
    interpreter would wait for them at exit, for ever."""
    script = (
        "import threading\n"
        "from stores.background import Background\n"
        "b = Background('seal')\n"
        "for _ in range(3):\n"
        "    b.submit(threading.Event().wait)\n"
        "print('exiting')\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert out.returncode == 0 and out.stdout == "exiting\n", out.stderr


def test_work_under_a_key_already_pending_is_dropped_until_it_has_run() -> None:
    """One load or seal of a scope at a time, however many searches ask meanwhile; a
    failed one frees its key, so the next search asks again."""
    release, runs = threading.Event(), []
    background = Background("test")
    assert background.submit(lambda: (release.wait(30), runs.append("a")), key="g1")
    assert not background.submit(lambda: runs.append("again"), key="g1")  # queued: dropped
    assert background.submit(lambda: runs.append("b"), key="g2")
    release.set()
    assert background.join(timeout=30) and runs == ["a", "b"]
    assert background.submit(lambda: 1 / 0, key="g1")  # g1 done: asked again
    assert background.join(timeout=30)
    assert background.submit(lambda: runs.append("c"), key="g1")  # the failure freed it
    assert background.join(timeout=30) and runs == ["a", "b", "c"]
