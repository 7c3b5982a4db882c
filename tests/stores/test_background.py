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
