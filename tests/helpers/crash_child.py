"""A worker process that is killed (SIGKILL) the moment it reaches the embed step.

python -m tests.helpers.crash_child DATA_DIR JOB_JSON [JOB_STEP_CHECKPOINTS [JOBS]]

With JOBS > 1: that many copies of the job (request ids r1, r2...) are queued in its chat
and run as one batch (``run_batch``); it is killed at the last one's embed step."""

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
    def __init__(self, inner: Any, after: int = 0) -> None:
        self.inner, self.after = inner, after

    def upsert(self, event: Any) -> None:
        if not self.after:
            os.kill(os.getpid(), signal.SIGKILL)
        self.after -= 1
        self.inner.upsert(event)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


if __name__ == "__main__":
    steps = sys.argv[3] if len(sys.argv) > 3 else "model"
    count = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    settings = Settings(data_dir=Path(sys.argv[1]), job_lease_s=1.0, job_step_checkpoints=steps)
    runtime = build_runtime(settings)
    deps = replace(runtime.deps, events=KillOnUpsert(runtime.deps.events, after=count - 1))
    graph = build_memory_graph(deps, checkpointer=make_checkpointer(settings))
    worker = MemoryWorker.one_bot(graph, deps, settings)
    job = json.loads(sys.argv[2])
    if count == 1:
        worker.submit(job)
        worker.run_next()
    else:
        for i in range(1, count + 1):
            worker.submit({**job, "request_id": f"r{i}", "new_info": f"{job['new_info']}（{i}）"})
        worker.run_batch()
    print("not killed")  # unreachable when the kill works
