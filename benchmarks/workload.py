"""What bench-scale's parts run against: the Chroma server its workers share, the memory
jobs they drain, the addressed messages a bot process answers (``benchmarks.scale``,
``benchmarks.beside``)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from benchmarks.latency import USERS
from graphs.reply import build_reply_graph
from groupmind.chatting import reply_context, reply_to
from groupmind.checkpoint import make_checkpointer
from standins.serving import free_port

TOPICS = ["出差", "考研", "跑马拉松", "新显卡", "毕业论文", "日本旅行", "红烧肉", "柯基", "吉他课"]
CHROMA_PIDS: list[int] = []  # the Chroma servers running now (their CPU is counted)


def replies(runtime: Any, count: int, prefix: str = "r") -> list[float]:
    deps = runtime.deps
    graph = build_reply_graph(deps, checkpointer=make_checkpointer(runtime.settings))
    context, rng, ms = reply_context(deps), random.Random(3), []
    for i in range(-10, count):  # ten unmeasured first
        chat = str(1001 + i % 5)
        msg = {"message_id": f"{prefix}{i}", "platform": "qq", "chat_type": "group", "chat_id": chat,
               "user_id": f"u{i % 8}", "user_name": USERS[i % 8], "mentions": ["bot"],
               "content": f"@小爱 {rng.choice(USERS)}最近是不是在忙{rng.choice(TOPICS)}？",
               "timestamp": 1_795_000_000 + 30 * i}  # fmt: skip
        t0 = time.perf_counter()
        reply_to(graph, deps, msg, context)
        if i >= 0:
            ms.append((time.perf_counter() - t0) * 1000)
    return ms


def jobs(count: int) -> list[dict[str, Any]]:
    rng, start = random.Random(11), datetime(2026, 11, 2, 9, tzinfo=timezone(timedelta(hours=8)))
    return [
        {"request_id": f"job-{i}", "action_summary": "我记下了",
         "new_info": f"我下周要去{rng.choice(['北京', '杭州', '成都'])}{rng.choice(TOPICS)}，"
                     f"顺便见{rng.choice(USERS)}",
         "user_id": f"u{i % 8}", "user_name": USERS[i % 8], "platform": "qq",
         "chat_type": "group", "chat_id": str(1001 + i % 20), "persona_id": "default",
         "timestamp": (start + timedelta(minutes=7 * i)).isoformat(), "new_info_by": "user"}
        for i in range(count)
    ]  # fmt: skip


@contextmanager
def chroma_server(path: Path) -> Iterator[int]:
    port = free_port()
    log = (path / "chroma.log").open("w")
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "chroma"), "run", "--path", str(path / "chroma"),
         "--host", "127.0.0.1", "--port", str(port)],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )  # fmt: skip
    CHROMA_PIDS.append(proc.pid)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"chroma run did not start: {path / 'chroma.log'}") from None
                time.sleep(0.3)
        yield port
    finally:
        CHROMA_PIDS.remove(proc.pid)
        proc.terminate()
        proc.wait(30)
