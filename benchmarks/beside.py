"""Replies while a `groupmind worker` drains memory jobs beside them on the same cores: no
worker, a worker at niceness 0, and one at ``WORKER_NICE``'s default. Each arm on a fresh
data dir (SQLite, a Chroma server shared by the bot and the worker): events loaded, jobs
queued, the worker (default threads, not pinned) started; once it has finished a job,
replies are timed back to back, and the jobs it finishes meanwhile counted. Arms alternate,
round after round. Part of ``make bench-scale`` (``--beside``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.latency import pool, populate
from benchmarks.workload import chroma_server, jobs, replies
from groupmind.settings import Settings
from groupmind.wiring import Deployment, build_runtime
from stores.base import Persona

STARTUP_S = 120.0  # at most, for the worker's first job: replies are timed once it runs jobs


def replies_beside(
    work: Path, rounds: int, replies_n: int, events: int = 2000, jobs_n: int = 1500
) -> list[dict[str, Any]]:
    default = Settings.model_fields["worker_nice"].default
    out = []
    for r in range(rounds):
        for nice in (None, 0, default):
            run = work / f"beside-{nice}"
            shutil.rmtree(run, ignore_errors=True)
            run.mkdir(parents=True)
            with chroma_server(run) as port:
                settings = {"data_dir": run / "data", "chroma_host": "127.0.0.1",
                            "chroma_port": port}  # fmt: skip
                runtime = build_runtime(Settings(_env_file=None, **settings))  # type: ignore[arg-type]
                runtime.deps.personas.put_persona(Persona(persona_id="default", name="小爱"))
                texts, vectors = pool(work / "cache", runtime.embeddings, min(1000, events))
                populate(runtime, events, texts, vectors, chats=20)
                worker = runtime.memory_worker()
                for job in jobs(jobs_n):
                    worker.submit(
                        {**job, "request_id": f"{job['request_id']}-{uuid.uuid4().hex[:6]}"}
                    )
                proc = None if nice is None else _worker(run, port, nice)
                try:
                    deadline = time.monotonic() + STARTUP_S
                    while proc and not _done(runtime) and time.monotonic() < deadline:
                        time.sleep(0.05)
                    done0, t0 = _done(runtime), time.monotonic()
                    ms = replies(runtime, replies_n, prefix=f"b{nice}-{r}-")
                    jobs_per_s = (_done(runtime) - done0) / (time.monotonic() - t0)
                finally:
                    if proc:
                        proc.kill()
                        proc.wait()
                    if runtime.background:
                        runtime.background.stop()
            out.append({"round": r, "nice": nice, "reply_ms": ms, "jobs_per_s": jobs_per_s})
    return out


def _worker(run: Path, port: int, nice: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "GROUPMIND_DATA_DIR": str(run / "data"),
           "GROUPMIND_CHROMA_HOST": "127.0.0.1", "GROUPMIND_CHROMA_PORT": str(port),
           "GROUPMIND_WORKER_NICE": str(nice)}  # fmt: skip
    cmd = [str(Path(sys.executable).parent / "groupmind"), "worker", "--once"]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _done(runtime: Deployment) -> int:
    return int(runtime.board.counts().get("done", 0))


def arm_name(nice: int | None) -> str:
    return "no worker" if nice is None else f"a worker at nice {nice}"
