"""Both graphs served by a real `langgraph dev` (offline), driven through langgraph_sdk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph_sdk import get_sync_client

from groupmind.threads import stream_thread_id
from stores.sql import SqlJobQueue, make_engine
from tests.conftest import _free_port
from tests.graphs.reply_helpers import message

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    data = tmp_path_factory.mktemp("lgdev") / "data"
    port = _free_port()
    env = {
        **os.environ,
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "LANGSMITH_TRACING": "false",
        "GROUPMIND_DATA_DIR": str(data),
    }
    log = (data.parent / "server.log").open("w")
    cmd = [
        str(Path(sys.executable).parent / "langgraph"),
        "dev",
        "--no-browser",
        "--no-reload",
        "--port",
        str(port),
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=1) as response:
                if response.status == 200:
                    break
        except OSError:
            if proc.poll() is not None:
                pytest.fail(
                    f"langgraph dev exited: {(data.parent / 'server.log').read_text()[-2000:]}"
                )
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail("langgraph dev did not answer /ok within 90 s")
    yield url, data
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_both_graphs_run_through_the_sdk(server: tuple[str, Path]) -> None:
    url, data = server
    client = get_sync_client(url=url)
    assert {a["graph_id"] for a in client.assistants.search()} >= {"reply", "memory"}

    chat_id = uuid.uuid4().hex[:8]  # the dev server keeps threads across runs (.langgraph_api)
    stream = f"qq:group:{chat_id}"
    thread = client.threads.create(
        thread_id=stream_thread_id(stream, "bot"), if_exists="do_nothing"
    )
    quiet = client.runs.wait(
        thread["thread_id"], "reply", input={"message": message("今天下雨了", chat_id=chat_id)}
    )
    assert quiet["action"] == "no_reply" and quiet["chat_state"] == "ABSENT"
    asked = client.runs.wait(
        thread["thread_id"], "reply", input={"message": message("@bot 你记得什么？", chat_id=chat_id, mentions=["bot"])},
        context={"variants": {"plan": "rules", "reply": "rules"}},
    )  # fmt: skip
    assert asked["action"] == "text_reply" and asked["reply"].startswith("[离线规则回复]")
    state = client.threads.get_state(thread["thread_id"])
    assert state["values"]["chat_state"] == "CHAT" and state["values"]["stream"] == stream
    history = client.threads.get_history(thread["thread_id"], limit=50)
    steps = [tuple(h["next"]) for h in history]
    assert ("hand_off",) in steps and ("reply",) in steps and ("plan",) in steps

    # The in-process worker ran the memory jobs hand_off wrote.
    queue = SqlJobQueue(make_engine(f"sqlite:///{data / 'groupmind.db'}"))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and queue.get(asked["handed_off"][0]).status != "done":  # type: ignore[union-attr]
        time.sleep(0.2)
    assert queue.get(asked["handed_off"][0]).status == "done"  # type: ignore[union-attr]

    job = {"request_id": "sdk-1", "action_summary": "我帮你查了天气", "new_info": "我明天去北京", "user_id": "1",
           "user_name": "小明", "chat_type": "group", "chat_id": "1001", "timestamp": "2026-11-16T10:05:00+08:00"}  # fmt: skip
    memory_thread = client.threads.create()
    out = client.runs.wait(memory_thread["thread_id"], "memory", input=job)
    assert out["status"] == "stored" and "2026年11月17日" in out["text"], json.dumps(
        out, ensure_ascii=False
    )
    memory_steps = [
        tuple(h["next"]) for h in client.threads.get_history(memory_thread["thread_id"])
    ]
    assert ("rewrite",) in memory_steps and ("embed",) in memory_steps
