"""The machine a figure was measured on, printed beside every benchmark and experiment
(these machines are shared and noisy: a figure without its machine means little)."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{platform.node()} · {cpu} · {os.cpu_count()} cores · Python {platform.python_version()}"
        f" · OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}"
    )
