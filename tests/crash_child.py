"""A worker process that is killed (SIGKILL) the moment it reaches the embed step.

python -m tests.crash_child DATA_DIR JOB_JSON [JOB_STEP_CHECKPOINTS]"""

from __future__ import annotations

import json
import os
import signal
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from graphs.memory import build_memory_graph
from groupmind.checkpoint import make_checkpointer
from groupmind.settings import Settings
from groupmind.wiring import build_runtime
from groupmind.worker import MemoryWorker


class KillOnUpsert:
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def upsert(self, event: Any) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


if __name__ == "__main__":
    steps = sys.argv[3] if len(sys.argv) > 3 else "model"
    settings = Settings(data_dir=Path(sys.argv[1]), job_lease_s=1.0, job_step_checkpoints=steps)
    runtime = build_runtime(settings)
    deps = replace(runtime.deps, events=KillOnUpsert(runtime.deps.events))
    graph = build_memory_graph(deps, checkpointer=make_checkpointer(settings))
    worker = MemoryWorker.one_bot(graph, deps, settings)
    worker.submit(json.loads(sys.argv[2]))
    worker.run_next()
    print("not killed")  # unreachable when the kill works
