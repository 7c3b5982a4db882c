"""What every benchmark prints: the machine, medians and percentiles."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import numpy as np

SHARED_DATA = Path(
    os.environ.get("GROUPMIND_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)


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


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")
