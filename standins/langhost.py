"""The production recipe's server (deploy/: langhost on PostgreSQL + Redis) for tests:
throwaway databases, a Redis database, and langhost processes on free ports."""

from __future__ import annotations

import os
import socket
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, text

from standins.services import PG_ADMIN_URL, pg_reachable, unavailable
from standins.serving import free_port, wait_ok

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / "deploy" / ".venv"


def available() -> None:
    """Skip (fail in CI) without deploy/.venv or PostgreSQL."""
    if not (VENV / "bin" / "langhost").exists():
        unavailable("deploy/.venv is not built (make deploy-venv)")
    if not pg_reachable(PG_ADMIN_URL):
        unavailable(f"PostgreSQL is not reachable at {PG_ADMIN_URL}")


@contextmanager
def databases(*names: str, create: bool = True) -> Iterator[dict[str, str]]:
    """Fresh PostgreSQL databases (name -> URL), dropped afterwards; with ``create=False``
    only named (the recipe's script creates them)."""
    suffix = uuid.uuid4().hex[:8]
    admin = create_engine(PG_ADMIN_URL.replace("postgresql://", "postgresql+psycopg://"),
                          isolation_level="AUTOCOMMIT")  # fmt: skip
    base = PG_ADMIN_URL.rsplit("/", 1)[0]
    urls = {}
    with admin.connect() as conn:
        for name in names:
            if create:
                conn.execute(text(f"CREATE DATABASE {name}_{suffix}"))
            urls[name] = f"{base}/{name}_{suffix}"
    try:
        yield urls
    finally:
        with admin.connect() as conn:
            for name in names:
                conn.execute(text(f"DROP DATABASE IF EXISTS {name}_{suffix} WITH (FORCE)"))
        admin.dispose()


def redis_flush(db: int) -> None:
    with socket.create_connection(("127.0.0.1", 6379), timeout=5) as s:
        s.sendall(
            f"*2\r\n$6\r\nSELECT\r\n${len(str(db))}\r\n{db}\r\n*1\r\n$7\r\nFLUSHDB\r\n".encode()
        )
        s.recv(64)


def base_env(langgraph_db: str, redis_db: int, **groupmind: str) -> dict[str, str]:
    """The environment deploy/env.example describes, for one deployment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUPMIND_")}
    env.update({
        "DATABASE_URI": langgraph_db, "REDIS_URI": f"redis://127.0.0.1:6379/{redis_db}",
        "LG_BG_JOB_HEARTBEAT": "5", "N_JOBS_PER_WORKER": "4",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true",
        "LANGSMITH_TRACING": "false",
    })  # fmt: skip
    env.update({f"GROUPMIND_{k.upper()}": v for k, v in groupmind.items()})
    return env


def serve(
    tmp: Path, env: dict[str, str], name: str = "api", host: str = "127.0.0.1"
) -> tuple[str, subprocess.Popen[bytes]]:
    """``langhost serve`` of deploy/langgraph.json, waited for until it answers /ok."""
    port = free_port()
    log = tmp / f"{name}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [str(VENV / "bin" / "langhost"), "serve", "--host", host, "--port", str(port),
             "--no-browser", "-c", str(ROOT / "deploy" / "langgraph.json")],
            cwd=tmp, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait_ok(url, proc, log)
    return url, proc


def stop(*procs: subprocess.Popen[bytes]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def create_databases(env: dict[str, str]) -> str:
    """deploy/create-databases.sh, as an operator runs it before starting the fleet."""
    done = subprocess.run([str(ROOT / "deploy" / "create-databases.sh")], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    return done.stdout
