"""The plugins' client alone (``hosts/client``), against a LangGraph API stand-in on
127.0.0.1 that can be slow, down or refusing: the host never waits past its budget, an
outage is one log line at each end, what was captured meanwhile goes once groupmind is
back, in order, none twice, and survives the host's restart on disk."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from groupmind_host import HostMemory, Outbox, stream_key, thread_id

from groupmind.threads import stream_thread_id
from standins.serving import loopback


class Api:
    """What groupmind's server answers: ``mode`` ok | slow | down (503) | refuse (422)."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.runs: list[dict[str, Any]] = []
        self.lock = threading.Lock()


def handler(api: Api) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            if api.mode == "slow":
                time.sleep(3)
            status = {"down": 503, "refuse": 422}.get(api.mode, 200)
            if status == 200:
                with api.lock:
                    api.runs.append({"path": self.path, **body})
            out = {"recall_text": "【记忆系统】…", "memory_ids": ["e1"]} if "wait" in self.path else {
                "run_id": "r", "thread_id": "t", "status": "pending"}  # fmt: skip
            raw = json.dumps(out).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def message(n: int) -> dict[str, Any]:
    return {"message_id": f"m{n}", "platform": "qq", "chat_type": "group", "chat_id": "1001",
            "user_id": "10001", "user_name": "小明", "content": f"第{n}句"}  # fmt: skip


def test_thread_ids_are_groupminds() -> None:
    stream = stream_key(message(1))
    assert stream == "qq:group:1001" and thread_id(stream, "bot-a") == stream_thread_id(
        stream, "bot-a"
    )


def test_recall_never_waits_past_the_budget(tmp_path: Path) -> None:
    api = Api()
    with loopback(handler(api)) as url:

        async def main() -> None:
            memory = HostMemory(url=url, api_key="k" * 16, bot_id="bot-a",
                                outbox=tmp_path / "o.db", budget_s=0.5)  # fmt: skip
            got = await memory.recall(message(1))
            assert got is not None and got.memory_ids == ["e1"]
            api.mode = "slow"
            t0 = time.monotonic()
            assert await memory.recall(message(2)) is None
            assert time.monotonic() - t0 < 1.5
            await memory.close()

        asyncio.run(main())
    assert api.runs[0]["path"] == "/runs/wait" and api.runs[0]["context"] == {"op": "recall"}


def test_an_outage_is_told_once_and_what_it_kept_goes_in_order(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    api = Api()
    with loopback(handler(api)) as url:

        async def main() -> None:
            memory = HostMemory(url=url, api_key=None, bot_id="bot-a", outbox=tmp_path / "o.db")
            api.mode = "down"
            for n in range(5):
                await memory.capture(message(n))
            await asyncio.sleep(2.5)  # retried, refused each time
            assert len(memory.outbox) == 5
            assert await memory.recall(message(9)) is None  # a read in the outage: nothing
            api.mode = "ok"
            for _ in range(200):
                if not len(memory.outbox):
                    break
                await asyncio.sleep(0.1)
            await memory.close()

        with caplog.at_level(logging.INFO, logger="groupmind_host"):
            asyncio.run(main())
    told = [r.getMessage() for r in caplog.records]
    assert sum("cannot be reached" in t for t in told) == 1, told
    assert sum(t.startswith("groupmind is back") for t in told) == 1, told
    ids = [r["input"]["message"]["message_id"] for r in api.runs if r["path"].endswith("/runs")]
    assert ids == [f"m{n}" for n in range(5)]  # in order, none twice
    paths = {r["path"] for r in api.runs if r["path"].endswith("/runs")}
    assert paths == {f"/threads/{thread_id('qq:group:1001', 'bot-a')}/runs"}
    assert {r["multitask_strategy"] for r in api.runs if "input" in r} >= {"enqueue"}


def test_a_refused_message_is_dropped_not_retried_forever(tmp_path: Path) -> None:
    api = Api()
    with loopback(handler(api)) as url:

        async def main() -> None:
            memory = HostMemory(url=url, api_key=None, bot_id="bot-a", outbox=tmp_path / "o.db")
            api.mode = "refuse"
            await memory.capture(message(1))
            for _ in range(50):
                if not len(memory.outbox):
                    break
                await asyncio.sleep(0.1)
            assert len(memory.outbox) == 0
            await memory.close()

        asyncio.run(main())


def test_the_outbox_survives_the_host(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "o.db")
    box.put("capture", "t1", {"message": message(1)})
    box.put("record", "t1", {"message": message(2), "host_memory_ids": []})
    box.close()  # the host is killed
    again = Outbox(tmp_path / "o.db")
    assert [(i.op, i.body["message"]["message_id"]) for i in again.oldest()] == [
        ("capture", "m1"), ("record", "m2")
    ]  # fmt: skip
    again.done(again.oldest()[0].seq)
    assert len(again) == 1 and re.match(r"\d+", str(again.oldest()[0].seq))
