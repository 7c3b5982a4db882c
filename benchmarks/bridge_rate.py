"""The bridge's messages/s end to end, for `make bench-scale`: a real `groupmind onebot`
process (graphs and memory worker in it, on a fresh data dir) and a OneBot v11
implementation stand-in (standins/onebot.py) that dials it, as NapCat does, and sends
a burst of group messages over several chats; one in four addresses the bot, and so does
each chat's last. The clock runs from the first message sent to the answer to the last
chat's last message: every chat is handled in order, so by then every message was read,
journaled, stored and decided. Then a second clock: until the bridge's own memory worker
has run every job the burst queued (it shares the two cores with the replies, and yields
to them), which is the rate it can keep up with for good. Also the bridge process's RSS.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from groupmind.settings import Settings
from standins.onebot import SELF_ID, Implementation, group_event
from standins.serving import free_port
from stores.sql import make_engine
from stores.sql.schema import MemoryJobRow

AT_BOT = {"type": "at", "data": {"qq": str(SELF_ID)}}
TOPICS = ["出差", "考研", "跑步", "显卡", "论文", "旅行", "做饭", "养狗"]


def process_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def burst(messages: int, chats: int) -> tuple[list[dict[str, Any]], set[str]]:
    """The events, and the ids of each chat's last message (all of them address the bot)."""
    events, last = [], {}
    for i in range(messages):
        chat, k = i % chats, i // chats
        addressed = k % 4 == 3 or i + chats >= messages
        words = f"我最近在忙{TOPICS[i % len(TOPICS)]}，第{k}次说"
        body = [AT_BOT, {"type": "text", "data": {"text": " " + words}}] if addressed else words
        event = group_event(5001 + chat, 40001 + i % 7, body, card=f"群友{i % 7}")
        events.append(event)
        last[chat] = str(event["message_id"])
    return events, set(last.values())


async def drive(url: str, messages: int, chats: int, timeout_s: float) -> dict[str, Any]:
    started, impl = time.perf_counter(), Implementation()
    deadline = time.monotonic() + 180
    while True:  # the bridge listens once its brain is built
        try:
            await impl.dial(url)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.3)
    events, last = burst(messages, chats)
    start_s = time.perf_counter() - started
    t0 = time.perf_counter()
    for event in events:
        await impl.send(event)
    answered: set[str] = set()
    end = time.monotonic() + timeout_s
    while not last <= answered and time.monotonic() < end:
        await impl.wait_for(len(impl.sent("send_")) + 1, timeout=1)
        answered = {
            seg["data"]["id"]
            for a in impl.sent("send_group_msg")
            for seg in a["params"]["message"]
            if seg["type"] == "reply"
        }
    seconds = time.perf_counter() - t0
    await impl.hang_up()
    if not last <= answered:
        raise RuntimeError(
            f"{len(last - answered)} chats' last messages unanswered after {timeout_s} s"
        )
    return {"messages": messages, "chats": chats, "replies": len(impl.sent("send_group_msg")),
            "seconds": seconds, "messages_per_s": messages / seconds, "start_s": start_s}  # fmt: skip


def bridge_rate(work: Path, messages: int, chats: int, timeout_s: float = 900) -> dict[str, Any]:
    run = work / "bridge"
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    port = free_port()
    env = {**os.environ, "GROUPMIND_DATA_DIR": str(run / "data"), "LANGSMITH_TRACING": "false"}
    cmd = [str(Path(sys.executable).parent / "groupmind"), "onebot", "--port", str(port)]
    with (run / "bridge.log").open("w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"ws://127.0.0.1:{port}/onebot/v11/ws"
            t0 = time.perf_counter()
            result = asyncio.run(drive(url, messages, chats, timeout_s))
            result["jobs_waiting"] = waiting = remembered(run / "data", timeout_s)
            if waiting:
                raise RuntimeError(f"{waiting} memory jobs still waiting after {timeout_s} s")
            result["remembered_s"] = time.perf_counter() - t0 - (result["start_s"])
            result["remembered_per_s"] = messages / result["remembered_s"]
            result["rss_mb"] = process_rss_mb(proc.pid)
        finally:
            proc.terminate()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
    return result


def remembered(data: Path, timeout_s: float) -> int:
    """Until no memory job is left undone (or the time is up): how many are left."""
    settings = Settings(_env_file=None, data_dir=data)  # type: ignore[call-arg]
    engine = make_engine(settings.resolved_sql_url)
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            with engine.connect() as conn:
                left = conn.execute(
                    select(func.count()).where(MemoryJobRow.status != "done")
                ).scalar_one()
            if not left or time.monotonic() > deadline:
                return int(left)
            time.sleep(0.5)
    finally:
        engine.dispose()
