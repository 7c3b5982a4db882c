"""The scale-out recipe (deploy/), for real: two langhost server processes on one
PostgreSQL and Redis, one `groupmind worker`, a `chroma run` server; four chats driven
through langgraph_sdk via both servers; one server killed with SIGKILL mid-run. Every
addressed message is answered once and every message is remembered once.

Needs deploy/.venv (`make deploy-venv`); `.ci/run` builds it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from sqlalchemy import create_engine, select, text

from groupmind.threads import stream_thread_id
from stores.sql import make_engine, migrate
from stores.sql.schema import EventDocRow, MemoryJobRow, MessageRow
from tests.conftest import PG_ADMIN_URL, _free_port, _pg_reachable, _unavailable
from tests.serving import wait_ok

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / "deploy" / ".venv"
REDIS_DB = 11
pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.timeout(900)]
CHATS, PER_CHAT = 4, 6


def redis_flush(db: int) -> None:
    with socket.create_connection(("127.0.0.1", 6379), timeout=5) as s:
        s.sendall(
            f"*2\r\n$6\r\nSELECT\r\n${len(str(db))}\r\n{db}\r\n*1\r\n$7\r\nFLUSHDB\r\n".encode()
        )
        s.recv(64)


@pytest.fixture
def deployment(tmp_path: Path, chroma_server: tuple[str, int]) -> Iterator[dict[str, Any]]:
    if not (VENV / "bin" / "langhost").exists():
        _unavailable("deploy/.venv is not built (make deploy-venv)")
    if not _pg_reachable(PG_ADMIN_URL):
        _unavailable(f"PostgreSQL is not reachable at {PG_ADMIN_URL}")
    suffix = uuid.uuid4().hex[:8]
    admin = create_engine(PG_ADMIN_URL.replace("postgresql://", "postgresql+psycopg://"),
                          isolation_level="AUTOCOMMIT")  # fmt: skip
    base = PG_ADMIN_URL.rsplit("/", 1)[0]
    urls = {}
    with admin.connect() as conn:
        for name in ("lh", "gm"):
            conn.execute(text(f"CREATE DATABASE {name}_{suffix}"))
            urls[name] = f"{base}/{name}_{suffix}"
    redis_flush(REDIS_DB)
    env = {
        **os.environ,
        "DATABASE_URI": urls["lh"], "REDIS_URI": f"redis://127.0.0.1:6379/{REDIS_DB}",
        "LG_BG_JOB_HEARTBEAT": "5", "N_JOBS_PER_WORKER": "4",
        "GROUPMIND_SQL_URL": urls["gm"], "GROUPMIND_CHECKPOINTER": "postgres",
        "GROUPMIND_CHROMA_HOST": chroma_server[0], "GROUPMIND_CHROMA_PORT": str(chroma_server[1]),
        "GROUPMIND_SERVER_MEMORY_WORKER": "false", "GROUPMIND_DATA_DIR": str(tmp_path / "data"),
        "GROUPMIND_JOB_BACKOFF_BASE_S": "0.5",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true",
        "LANGSMITH_TRACING": "false",
    }  # fmt: skip
    migrate(make_engine(urls["gm"]))  # as an operator would before starting the fleet
    procs: dict[str, subprocess.Popen[bytes]] = {}
    servers: list[str] = []
    try:
        for n in (1, 2):  # one after the other: langhost sets its tables up unlocked on start
            port = _free_port()
            log = tmp_path / f"api-{n}.log"
            with log.open("w") as out:
                procs[f"api-{n}"] = subprocess.Popen(
                    [str(VENV / "bin" / "langhost"), "serve", "--port", str(port),
                     "--no-browser", "-c", str(ROOT / "deploy" / "langgraph.json")],
                    cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT,
                )  # fmt: skip
            wait_ok(f"http://127.0.0.1:{port}", procs[f"api-{n}"], log)
            servers.append(f"http://127.0.0.1:{port}")
        with (tmp_path / "worker.log").open("w") as out:
            procs["worker"] = subprocess.Popen(
                [str(VENV / "bin" / "groupmind"), "worker", "--poll", "0.2"],
                cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        yield {"servers": servers, "procs": procs, "gm": urls["gm"], "tmp": tmp_path}
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        with admin.connect() as conn:
            for name in ("lh", "gm"):
                conn.execute(text(f"DROP DATABASE IF EXISTS {name}_{suffix} WITH (FORCE)"))
        admin.dispose()


def message(chat: int, k: int) -> dict[str, Any]:
    addressed = k % 2 == 1
    return {
        "message_id": f"s{chat}-{k}", "platform": "qq", "chat_type": "group",
        "chat_id": f"scale{chat}", "chat_name": f"群{chat}", "user_id": f"u{chat}",
        "user_name": f"用户{chat}", "content": f"{'@bot ' if addressed else ''}暗号S{chat}K{k}X",
        "mentions": ["bot"] if addressed else [], "timestamp": 1_795_000_000 + 60 * k + chat,
    }  # fmt: skip


def drive(chat: int, servers: list[str], sent: threading.Event, report: dict[int, Any]) -> None:
    """One chat's messages in order, through its server; when that server is gone, the
    same message again through the other (the bot's retry)."""
    stream = f"qq:group:scale{chat}"
    order = [servers[chat % 2], servers[(chat + 1) % 2]]
    failovers = 0
    for k in range(PER_CHAT):
        if k == 2:
            sent.set()  # the killer waits until the chats are under way
        for attempt in range(60):
            client = get_sync_client(url=order[0], timeout=30)
            try:
                client.runs.wait(
                    stream_thread_id(stream, "bot"), "reply", input={"message": message(chat, k)},
                    if_not_exists="create", multitask_strategy="enqueue",
                )  # fmt: skip
                break
            except (httpx.HTTPError, OSError):
                order.reverse() if attempt == 0 else None
                failovers += 1
                time.sleep(0.5)
        else:
            report[chat] = f"message {k} never went through"
            return
        time.sleep(0.3)  # the pace of a chat
    report[chat] = failovers


def test_two_servers_one_killed_every_message_answered_and_remembered_once(
    deployment: dict[str, Any],
) -> None:
    servers, procs = deployment["servers"], deployment["procs"]
    sent, report = threading.Event(), {}
    threads = [
        threading.Thread(target=drive, args=(c, servers, sent, report)) for c in range(CHATS)
    ]
    for t in threads:
        t.start()
    sent.wait(120)
    time.sleep(0.5)
    procs["api-2"].send_signal(signal.SIGKILL)  # mid-run: chats 1 and 3 talk to it
    for t in threads:
        t.join(600)
    assert all(isinstance(v, int) for v in report.values()), report
    assert report[1] + report[3] > 0  # their server went away: they failed over

    engine = make_engine(deployment["gm"])
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:  # the worker drains the memory queue
        with engine.connect() as conn:
            open_jobs = conn.execute(
                select(MemoryJobRow.request_id).where(MemoryJobRow.status != "done")
            ).all()
        if not open_jobs:
            break
        time.sleep(1)
    assert not open_jobs, open_jobs
    with engine.connect() as conn:
        replies = (
            conn.execute(select(MessageRow.reply_to).where(MessageRow.from_bot.is_(True)))
            .scalars()
            .all()
        )
        events = conn.execute(select(EventDocRow.text)).scalars().all()
    addressed = [f"s{c}-{k}" for c in range(CHATS) for k in range(PER_CHAT) if k % 2 == 1]
    assert len(replies) == len(set(replies))  # no message answered twice
    assert set(addressed) <= set(replies)  # every addressed one answered (others may be)
    for c in range(CHATS):
        for k in range(PER_CHAT):
            token = f"S{c}K{k}X"
            assert sum(token in e for e in events) == 1, (token, events)  # remembered once
    assert procs["api-1"].poll() is None and procs["worker"].poll() is None
    engine.dispose()
