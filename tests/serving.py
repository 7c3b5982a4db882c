"""Waiting for a server process the tests or benchmarks started."""

from __future__ import annotations

import subprocess
import time
import urllib.request
from pathlib import Path


def wait_ok(
    url: str, proc: subprocess.Popen[bytes], log: Path | None = None, timeout: float = 120
) -> None:
    """Until ``url/ok`` answers 200; a process that exits, or no answer in time, raises
    with the end of its log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.3)
    tail = log.read_text()[-2000:] if log is not None and log.exists() else ""
    state = "exited" if proc.poll() is not None else f"gave no /ok within {timeout:.0f} s"
    if proc.poll() is None:
        proc.kill()
    raise RuntimeError(f"{url}: the server {state}: {tail}")
