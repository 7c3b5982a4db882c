"""The server arm of `make bench-latency`: a reply's round trip through langgraph_sdk, on
`langgraph dev` (in-memory runtime) and on langhost (the PostgreSQL + Redis runtime of
deploy/), side by side. Each server gets a fresh data dir (and fresh databases); one chat,
messages that address the bot, sent one after another.

    make bench-latency ARGS="--scales --server-messages 200"
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from langgraph_sdk import get_sync_client
from sqlalchemy import create_engine, text

from benchmarks.common import tree_cpu_s
from groupmind.threads import stream_thread_id
from standins.serving import free_port, wait_ok

ROOT = Path(__file__).resolve().parents[1]
LANGHOST = ROOT / "deploy" / ".venv" / "bin" / "langhost"
PG_ADMIN = os.environ.get("GROUPMIND_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


class Served(NamedTuple):
    url: str
    pid: int


@contextmanager
def serving(cmd: list[str], env: dict[str, str], cwd: Path, port: int) -> Iterator[Served]:
    log = (cwd / f"server-{port}.log").open("w")
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ok(url, proc)
        yield Served(url, proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def base_env(data: Path) -> dict[str, str]:
    return {**os.environ, "GROUPMIND_DATA_DIR": str(data), "LANGSMITH_TRACING": "false",
            "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true"}  # fmt: skip


@contextmanager
def langgraph_dev(tmp: Path) -> Iterator[Served]:
    port = free_port()
    cmd = [str(Path(sys.executable).parent / "langgraph"), "dev", "--no-browser", "--no-reload",
           "--port", str(port), "--config", str(ROOT / "langgraph.json")]  # fmt: skip
    with serving(cmd, base_env(tmp / "dev"), tmp, port) as served:
        yield served


@contextmanager
def langhost(tmp: Path, memory_worker: bool = False) -> Iterator[Served]:
    """One langhost process on fresh databases of the local PostgreSQL and Redis db 12,
    set as deploy/env.example sets it: memory jobs are queued for `groupmind worker`
    processes (not run here), unless ``memory_worker``: then the server runs them too."""
    suffix = uuid.uuid4().hex[:8]
    admin = create_engine(PG_ADMIN.replace("postgresql://", "postgresql+psycopg://"),
                          isolation_level="AUTOCOMMIT")  # fmt: skip
    base = PG_ADMIN.rsplit("/", 1)[0]
    with admin.connect() as conn:
        for name in ("lh", "gm"):
            conn.execute(text(f"CREATE DATABASE bench_{name}_{suffix}"))
    env = {**base_env(tmp / "pg"), "DATABASE_URI": f"{base}/bench_lh_{suffix}",
           "REDIS_URI": "redis://127.0.0.1:6379/12",
           "GROUPMIND_SQL_URL": f"{base}/bench_gm_{suffix}", "N_JOBS_PER_WORKER": "4",
           "GROUPMIND_SERVER_MEMORY_WORKER": str(memory_worker).lower()}  # fmt: skip
    port = free_port()
    cmd = [str(LANGHOST), "serve", "--port", str(port), "--no-browser", "-c",
           str(ROOT / "deploy" / "langgraph.json")]  # fmt: skip
    try:
        with serving(cmd, env, tmp, port) as served:
            yield served
    finally:
        with admin.connect() as conn:
            for name in ("lh", "gm"):
                conn.execute(text(f"DROP DATABASE IF EXISTS bench_{name}_{suffix} WITH (FORCE)"))
        admin.dispose()


def round_trips(url: str, n: int, warm: int = 5) -> list[float]:
    client = get_sync_client(url=url, timeout=60)
    stream = f"qq:group:lat{uuid.uuid4().hex[:6]}"
    thread = stream_thread_id(stream, "bot")
    out: list[float] = []
    for i in range(warm + n):
        message = {"message_id": f"r{i}", "platform": "qq", "chat_type": "group",
                   "chat_id": stream.rsplit(":", 1)[1], "user_id": "u1", "user_name": "小明",
                   "content": f"@bot 第{i}条：我下周去北京出差", "mentions": ["bot"],
                   "timestamp": 1_795_000_000 + 60 * i}  # fmt: skip
        t0 = time.perf_counter()
        client.runs.wait(thread, "reply", input={"message": message}, if_not_exists="create",
                         multitask_strategy="enqueue")  # fmt: skip
        if i >= warm:
            out.append((time.perf_counter() - t0) * 1000)
    return out


def concurrent_round_trips(server: Served, n: int, clients: int) -> dict[str, Any]:
    """``clients`` chats at once, each sending ``n`` messages one after another (after its
    warm-up): every round trip, the runs a second over the measured span, and the server's
    CPU a run (its processes', over the same span)."""
    cpu: list[float] = []  # the server's CPU seconds as the measured span starts
    start = threading.Barrier(clients, action=lambda: cpu.append(tree_cpu_s(server.pid)))
    spans: list[tuple[float, float]] = []

    def one() -> list[float]:
        round_trips(server.url, 0)  # the warm-up
        start.wait()
        t0 = time.perf_counter()
        out = round_trips(server.url, n, warm=0)
        spans.append((t0, time.perf_counter()))
        return out

    with ThreadPoolExecutor(clients) as pool:
        found = list(pool.map(lambda _: one(), range(clients)))
    wall = max(end for _, end in spans) - min(begin for begin, _ in spans)
    runs = clients * n
    return {"clients": clients, "ms": [ms for one_client in found for ms in one_client],
            "runs_per_s": runs / wall,
            "server_cpu_ms_per_run": (tree_cpu_s(server.pid) - cpu[0]) * 1000 / max(runs, 1)}  # fmt: skip


def server_arms(n: int) -> dict[str, Any]:
    """{server: [ms, ...]} for every server that can run here (langhost needs deploy/.venv)."""
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-servers-") as tmp_name:
        tmp = Path(tmp_name)
        with langgraph_dev(tmp) as served:
            results["langgraph dev (in-memory runtime)"] = round_trips(served.url, n)
        arms = {"langhost (PostgreSQL + Redis runtime; memory jobs queued)": False,
                "langhost, memory jobs run in the server too": True}  # fmt: skip
        for name, memory_worker in arms.items():
            if not LANGHOST.exists():
                results[name] = "skipped: make deploy-venv"
                continue
            with langhost(tmp, memory_worker) as served:
                results[name] = round_trips(served.url, n)
    return results


def concurrent_arm(n: int, clients: int) -> dict[str, Any]:
    """langhost as the recipe runs it, ``clients`` chats sending at once."""
    if not LANGHOST.exists():
        return {"skipped": "make deploy-venv"}
    with tempfile.TemporaryDirectory(prefix="bench-servers-") as tmp_name:
        with langhost(Path(tmp_name)) as served:
            return concurrent_round_trips(served, n, clients)
