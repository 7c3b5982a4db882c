"""The graphs served by a real `langgraph dev` (offline), driven through langgraph_sdk: open
when no bot is configured (and saying so), and with two bots each seeing only its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client

from groupmind.threads import stream_thread_id
from standins.langsmith import LangSmithStandIn
from standins.langsmith import serve as langsmith
from standins.serving import free_port, wait_ok
from stores.sql import SqlJobQueue, make_engine
from tests.graphs.reply_helpers import message

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
KEY_A, KEY_B = "key-of-bot-a-0123456789", "key-of-bot-b-0123456789"
BOTS = [
    {"id": "bot-a", "api_key": KEY_A, "platforms": ["qq"]},
    {"id": "bot-b", "api_key": KEY_B, "platforms": ["qq", "lark"]},
]


def start(
    tmp: Path, cwd: Path | None = None, port: int | None = None, **env: str
) -> Iterator[tuple[str, Path, Path]]:
    """``langgraph dev`` on a free port (or ``port``) with its own data dir; yields (url,
    data, log). ``cwd``: where it keeps its own storage (``.langgraph_api``), as ``make
    serve`` does in the data dir."""
    data, log_path = tmp / "data", tmp / "server.log"
    port = port or free_port()
    environ = {
        **os.environ,
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "LANGSMITH_TRACING": "false",
        "GROUPMIND_DATA_DIR": str(data),
        **env,
    }
    cmd = [str(Path(sys.executable).parent / "langgraph"), "dev", "--no-browser", "--no-reload",
           "--port", str(port), "--config", str(ROOT / "langgraph.json")]  # fmt: skip
    with log_path.open("a") as log:
        proc = subprocess.Popen(
            cmd, cwd=cwd or tmp, env=environ, stdout=log, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    wait_ok(url, proc, log_path, timeout=90)
    yield url, data, log_path
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path]]:
    yield from start(tmp_path_factory.mktemp("lgdev-open"))


@pytest.fixture(scope="module")
def traces() -> Iterator[LangSmithStandIn]:
    with langsmith() as ls:
        yield ls


@pytest.fixture(scope="module")
def two_bots(
    tmp_path_factory: pytest.TempPathFactory, traces: LangSmithStandIn
) -> Iterator[tuple[str, Path, Path]]:
    """Two bots, traced to a LangSmith stand-in (what the server sends is what they read)."""
    yield from start(
        tmp_path_factory.mktemp("lgdev-auth"), GROUPMIND_BOTS=json.dumps(BOTS),
        LANGSMITH_TRACING="true", LANGSMITH_ENDPOINT=traces.url, LANGSMITH_API_KEY="test-key",
    )  # fmt: skip


def test_both_graphs_run_through_the_sdk(server: tuple[str, Path, Path]) -> None:
    url, data, log = server
    client = get_sync_client(url=url)
    assert {a["graph_id"] for a in client.assistants.search()} >= {"reply", "memory", "forget"}

    chat_id = uuid.uuid4().hex[:8]
    stream = f"qq:group:{chat_id}"
    thread = client.threads.create(thread_id=stream_thread_id(stream, "bot"))
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
    queue = SqlJobQueue(make_engine(f"sqlite:///{data / 'groupmind.db'}"), bot="bot")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and queue.get(asked["handed_off"][0]).status != "done":  # type: ignore[union-attr]
        time.sleep(0.2)
    assert queue.get(asked["handed_off"][0]).status == "done"  # type: ignore[union-attr]

    job = {"request_id": "sdk-1", "action_summary": "我帮你查了天气", "new_info": "我明天去北京", "user_id": "1",
           "user_name": "小明", "chat_type": "group", "chat_id": "1001", "timestamp": "2026-11-16T10:05:00+08:00",
           "new_info_by": "user"}  # fmt: skip
    memory_thread = client.threads.create()
    out = client.runs.wait(memory_thread["thread_id"], "memory", input=job)
    assert out["status"] == "stored" and "2026年11月17日" in out["text"], json.dumps(
        out, ensure_ascii=False
    )
    memory_steps = [
        tuple(h["next"]) for h in client.threads.get_history(memory_thread["thread_id"])
    ]
    assert ("rewrite",) in memory_steps and ("embed",) in memory_steps
    assert "this server is OPEN" in log.read_text()  # an open server says so
    assert "outside the data dir" in log.read_text()  # and where it keeps its own records


def test_a_run_is_stepped_through_edited_before_plan_and_resumed(
    server: tuple[str, Path, Path],
) -> None:
    """docs/experiments.md's walk-through: stop before plan, read what plan will see, change
    it (as rank_context: retrieve and rank_context ran side by side, so an update must say
    which of them it stands for), resume."""
    client = get_sync_client(url=server[0])
    stream = "qq:group:step1"
    thread = client.threads.create(thread_id=stream_thread_id(stream, "bot"))["thread_id"]
    for n, text in enumerate(("我们周五聚餐吧", "好啊去哪", "@bot 你觉得呢")):
        client.runs.wait(
            thread, "reply", input={"message": message(text, chat_id="step1",
                                                     mentions=["bot"] if n == 2 else [])},
            interrupt_before=["plan"],
        )  # fmt: skip
    state = client.threads.get_state(thread)
    assert state["next"] == ["plan"] and len(state["values"]["context_ids"]) >= 2
    with pytest.raises(httpx.HTTPStatusError) as ambiguous:
        client.threads.update_state(thread, {"context_ids": []})
    assert "Ambiguous update" in ambiguous.value.response.text
    first = state["values"]["context_ids"][:1]
    client.threads.update_state(thread, {"context_ids": first}, as_node="rank_context")
    assert client.threads.get_state(thread)["values"]["context_ids"] == first
    done = client.runs.wait(thread, "reply", input=None)
    assert done["action"] == "text_reply" and done["context_ids"] == first


def test_a_thread_refuses_another_chats_message(server: tuple[str, Path, Path]) -> None:
    client = get_sync_client(url=server[0])
    thread = client.threads.create(thread_id=stream_thread_id("qq:group:x1", "bot"))
    client.runs.wait(thread["thread_id"], "reply", input={"message": message("hi", chat_id="x1")})
    stray = client.runs.wait(
        thread["thread_id"], "reply", input={"message": message("群二的秘密", chat_id="x2")},
        raise_error=False,
    )  # fmt: skip
    assert "is not this thread's" in json.dumps(stray, ensure_ascii=False)
    pending = client.threads.get_state(thread["thread_id"])["values"]["pending"]
    assert [p["content"] for p in pending] == ["hi"]  # nothing of x2 in x1's buffer


def status_of(call: Any) -> int:
    try:
        call()
    except httpx.HTTPStatusError as exc:
        return exc.response.status_code
    return 200


def test_two_bots_each_see_only_their_own(two_bots: tuple[str, Path, Path]) -> None:
    url, _, _ = two_bots
    a, b = get_sync_client(url=url, api_key=KEY_A), get_sync_client(url=url, api_key=KEY_B)
    nobody = get_sync_client(url=url, api_key=None)
    wrong = get_sync_client(url=url, api_key="not-a-key-of-anyone")
    assert status_of(lambda: nobody.threads.search()) == 401
    assert status_of(lambda: wrong.assistants.search()) == 401

    stream = "qq:group:1001"
    ta = a.threads.create(thread_id=stream_thread_id(stream, "bot-a"), metadata={"stream": stream})[
        "thread_id"
    ]
    assert status_of(lambda: nobody.runs.wait(ta, "reply", input={"message": {}})) == 401
    assert stream_thread_id(stream, "bot-a") != stream_thread_id(stream, "bot-b")
    secret = message("@bot-a A群的秘密：暗号是 K7Q2X", chat_id="1001", mentions=["bot-a"])
    out = a.runs.wait(ta, "reply", input={"message": secret})
    assert out["action"] == "text_reply"

    # Bot B: everything of A's is not there.
    assert status_of(lambda: b.threads.get(ta)) == 404
    assert status_of(lambda: b.threads.get_state(ta)) == 404
    assert status_of(lambda: b.threads.get_history(ta)) == 404
    assert status_of(lambda: b.runs.list(ta)) == 404
    assert (
        status_of(lambda: b.runs.wait(ta, "reply", input={"message": secret})) == 403
    )  # not its stream thread: refused before anything
    assert status_of(lambda: b.threads.update_state(ta, {"pending": []})) == 404
    assert ta not in {t["thread_id"] for t in b.threads.search(limit=100)}
    assert ta in {t["thread_id"] for t in a.threads.search(limit=100)}
    mine = a.assistants.create("reply", name="a-arm", context={"variants": {"plan": "rules"}})
    assert status_of(lambda: b.assistants.get(mine["assistant_id"])) == 404
    assert mine["assistant_id"] not in {x["assistant_id"] for x in b.assistants.search()}
    # An assistant is an arm: one naming a variant that cannot run is refused at creation.
    for variants, says in (({"plan": "nope"}, "variants.plan: unknown variant 'nope'"),
                           ({"plan": "llm"}, "variants.plan: 'llm' needs a chat model"),
                           ({"ranker": "x"}, "variants.ranker: no such slot")):  # fmt: skip
        with pytest.raises(httpx.HTTPStatusError) as refused:
            a.assistants.create("reply", context={"variants": variants})
        assert refused.value.response.status_code == 422 and says in refused.value.response.text
    with pytest.raises(httpx.HTTPStatusError):
        a.assistants.update(
            mine["assistant_id"], config={"configurable": {"variants": {"plan": "x"}}}
        )

    # Runs stay in the bot's own platforms: A is qq only.
    on_lark = message("@bot 飞书", platform="lark", chat_id="9", mentions=["bot"])
    tl = a.threads.create(
        thread_id=stream_thread_id("lark:group:9", "bot-a"), metadata={"stream": "lark:group:9"}
    )["thread_id"]
    assert status_of(lambda: a.runs.wait(tl, "reply", input={"message": on_lark})) == 403
    job = {"request_id": "j-lark", "action_summary": "", "new_info": "我明天去北京", "user_id": "1",
           "user_name": "小明", "platform": "lark", "chat_type": "group", "chat_id": "9",
           "timestamp": "2026-11-16T10:05:00+08:00"}  # fmt: skip
    tm = a.threads.create()["thread_id"]
    assert status_of(lambda: a.runs.wait(tm, "memory", input=job)) == 403
    tb = b.threads.create()["thread_id"]
    assert b.runs.wait(tb, "memory", input=job)["status"] == "stored"  # B may use lark

    # Forget is a graph an operator (here bot B, for its lark user) can run.
    forget = b.runs.wait(b.threads.create()["thread_id"], "forget",
                         input={"platform": "lark", "user_id": "1"})  # fmt: skip
    assert forget["removed"]["events"] == 1
    assert status_of(lambda: a.runs.wait(a.threads.create()["thread_id"], "forget",
                                         input={"platform": "lark", "user_id": "1"})) == 403  # fmt: skip


def test_server_runs_carry_their_arm_and_decision_in_their_traces(
    two_bots: tuple[str, Path, Path], traces: LangSmithStandIn
) -> None:
    url, _, _ = two_bots
    a = get_sync_client(url=url, api_key=KEY_A)
    arm = a.assistants.create(
        "reply", name="recent-arm", context={"variants": {"rank_context": "recent"}}
    )
    stream = "qq:group:2002"
    thread = a.threads.create(
        thread_id=stream_thread_id(stream, "bot-a"), metadata={"stream": stream}
    )
    asked = message("@bot-a 明天几点开会？", chat_id="2002", mentions=["bot-a"])
    out = a.runs.wait(thread["thread_id"], arm["assistant_id"], input={"message": asked})
    job = {"request_id": "traced-1", "action_summary": "", "new_info": "我明天去北京", "user_id": "1",
           "user_name": "小明", "chat_type": "group", "chat_id": "2002",
           "timestamp": "2026-11-16T10:05:00+08:00"}  # fmt: skip
    a.runs.wait(a.threads.create()["thread_id"], "memory", input=job)

    def root(**match: str) -> dict[str, Any] | None:
        for run in traces.roots():
            md = traces.metadata(run)
            if all(md.get(k) == v for k, v in match.items()) and run.get("end_time"):
                return md
        return None

    deadline = time.monotonic() + 30  # the server's tracer sends in the background
    while time.monotonic() < deadline and not (root(message_id=asked["message_id"])
                                               and root(request_id="traced-1")):  # fmt: skip
        time.sleep(0.3)
    reply = root(message_id=asked["message_id"])
    assert reply is not None, [traces.metadata(r) for r in traces.roots()]
    assert reply["bot_id"] == "bot-a" and reply["owner"] == "bot-a" and reply["stream"] == stream
    assert reply["assistant_id"] == arm["assistant_id"]
    assert reply["variants"]["rank_context"] == "recent" and reply["variants"]["plan"] == "rules"
    assert reply["action"] == out["action"] == "text_reply" and reply["reason"]
    memory = root(request_id="traced-1")
    assert memory is not None and memory["bot_id"] == "bot-a" and memory["status"] == "stored"
    assert memory["gate"] == "passed" and memory["variants"]["rewrite"] == "rules"
    # what a bot's traces say is its own: nothing of bot-a's is labelled another bot's
    assert {traces.metadata(r).get("bot_id") for r in traces.roots()} <= {"bot-a", "bot-b", None}


@pytest.mark.parametrize("strategy", ["interrupt", "rollback", "enqueue", "reject"])
def test_double_texting_keeps_every_message(server: tuple[str, Path, Path], strategy: str) -> None:
    """A second message while the first's run is in flight, under each multitask strategy:
    both are taken by the thread (answered, or kept as context), none is lost."""
    client = get_sync_client(url=server[0])
    chat_id = uuid.uuid4().hex[:8]
    thread = client.threads.create(thread_id=stream_thread_id(f"qq:group:{chat_id}", "bot"))
    first = message("@bot 第一条", chat_id=chat_id, mentions=["bot"])
    second = message("@bot 第二条", chat_id=chat_id, mentions=["bot"])
    client.runs.create(thread["thread_id"], "reply", input={"message": first})
    try:
        run = client.runs.create(
            thread["thread_id"], "reply", input={"message": second}, multitask_strategy=strategy
        )
    except httpx.HTTPStatusError as exc:  # reject: the bot is told, and sends it again
        assert strategy == "reject" and exc.response.status_code == 409
        client.runs.join(thread["thread_id"], client.runs.list(thread["thread_id"])[0]["run_id"])
        run = client.runs.create(thread["thread_id"], "reply", input={"message": second})
    client.runs.join(thread["thread_id"], run["run_id"])
    values = client.threads.get_state(thread["thread_id"])["values"]
    taken = set(values["seen_ids"])
    assert {first["message_id"], second["message_id"]} <= taken, (strategy, values)


def test_the_onebot_bridge_drives_the_server_through_the_sdk(
    two_bots: tuple[str, Path, Path], tmp_path: Path
) -> None:
    import asyncio

    from groupmind.onebot.brains import ServerBrain
    from groupmind.onebot.bridge import Bridge
    from standins.onebot import SELF_ID, Implementation, group_event, private_event
    from stores.journal import Journal

    async def main() -> None:
        brain = ServerBrain(two_bots[0], KEY_A, "bot-a")
        bridge = Bridge(brain, Journal(tmp_path / "journal.db"), bot_id="bot-a")
        server = await bridge.serve_reverse("127.0.0.1", 0)
        port = next(iter(server.sockets)).getsockname()[1]
        impl = Implementation(group_names={7001: "SDK 群"})
        await impl.dial(f"ws://127.0.0.1:{port}/onebot/v11/ws")
        at_bot = {"type": "at", "data": {"qq": str(SELF_ID)}}
        events = [
            group_event(7001, 40001, [at_bot, {"type": "text", "data": {"text": " 在吗"}}]),
            private_event(40002, "你好"),
            private_event(40002, "还在吗"),  # the same chat again: answered after the first
        ]
        for event in events:
            await impl.send(event)
        sends = await impl.wait_for(3, timeout=90)
        answered = [a["params"]["message"][0]["data"]["id"] for a in sends]
        assert sorted(answered) == sorted(str(e["message_id"]) for e in events)
        dm = [a for a in answered if a in {str(e["message_id"]) for e in events[1:]}]
        assert dm == [str(events[1]["message_id"]), str(events[2]["message_id"])]  # in order
        await impl.hang_up()
        server.close()
        await bridge.close()

    asyncio.run(main())
    # the runs are bot-a's: bot-b cannot see their threads
    other = get_sync_client(url=two_bots[0], api_key=KEY_B)
    with pytest.raises(httpx.HTTPStatusError):
        other.threads.get(stream_thread_id("qq:private:40002", "bot-a"))


@pytest.mark.parametrize("server", ["dev", "langhost"])
def test_a_server_without_keys_will_not_listen_beyond_loopback(tmp_path: Path, server: str) -> None:
    """Unless the operator says so; on loopback it says it is open."""
    from standins import langhost

    if server == "langhost":
        langhost.available()
        cmd = [str(langhost.VENV / "bin" / "langhost"), "serve", "--no-browser",
               "-c", str(ROOT / "deploy" / "langgraph.json")]  # fmt: skip
        env = langhost.base_env("postgresql://postgres@127.0.0.1:5432/none", 13)
    else:
        cmd = [str(Path(sys.executable).parent / "langgraph"), "dev", "--no-browser",
               "--no-reload", "--config", str(ROOT / "langgraph.json")]  # fmt: skip
        env = {**os.environ, "LANGGRAPH_CLI_NO_ANALYTICS": "1",
               "LANGGRAPH_NO_VERSION_CHECK": "true"}  # fmt: skip
    env = {k: v for k, v in env.items() if k != "GROUPMIND_BOTS"}
    env["GROUPMIND_DATA_DIR"] = str(tmp_path / "data")
    port = str(free_port())
    log = tmp_path / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen([*cmd, "--host", "0.0.0.0", "--port", port], cwd=tmp_path,
                                env=env, stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        assert proc.wait(timeout=90) != 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "would listen on 0.0.0.0" in log.read_text()
    if server == "dev":  # allowed explicitly, it starts, and says it is open
        env["GROUPMIND_ALLOW_OPEN_SERVER"] = "true"
        with log.open("w") as out:
            proc = subprocess.Popen([*cmd, "--host", "0.0.0.0", "--port", port], cwd=tmp_path,
                                    env=env, stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            wait_ok(f"http://127.0.0.1:{port}", proc, log, timeout=90)
            assert "this server is OPEN (listening on 0.0.0.0)" in log.read_text()
        finally:
            proc.terminate()
            proc.wait(timeout=20)


def test_the_console_runs_beside_the_graphs_behind_the_same_keys(
    two_bots: tuple[str, Path, Path],
) -> None:
    """langgraph.json's ``http.app``: the console's pages and ``/metrics`` on the server,
    each bot's key showing its own data only; forget runs the key's bot's forget graph."""
    url, _, _ = two_bots
    a = get_sync_client(url=url, api_key=KEY_A)
    stream = "qq:group:2024"
    thread = a.threads.create(thread_id=stream_thread_id(stream, "bot-a"),
                              metadata={"stream": stream})["thread_id"]  # fmt: skip
    said = message("@bot-a 我叫控制台测试员，我养了一只柯基", chat_id="2024", user_id="77",
                   user_name="测试员", mentions=["bot-a"])  # fmt: skip
    assert a.runs.wait(thread, "reply", input={"message": said})["action"] == "text_reply"

    def get(path: str, key: str | None) -> httpx.Response:
        return httpx.get(f"{url}{path}", headers={"x-api-key": key} if key else {}, timeout=30)

    assert get("/console/chats", None).status_code == 401
    assert stream in get("/console/chats", KEY_A).text
    assert stream not in get("/console/chats", KEY_B).text
    chat = get(f"/console/chats/{stream}", KEY_A).text
    assert "柯基" in chat and "text_reply" in chat  # the message, and what the plan decided
    metrics = get("/metrics", KEY_A)
    assert metrics.status_code == 200 and 'groupmind_messages_total{bot="bot-a"}' in metrics.text
    assert get("/metrics", None).status_code == 401
    assert get("/info", None).json().get("version")  # the server's own /info, for Studio
    assert 'groupmind_messages_total{bot="bot-b"} 0.0' in get("/metrics", KEY_B).text

    # a form's store calls run off the server's event loop (it refuses blocking calls there)
    hits = httpx.get(f"{url}/console/memory", params={"chat": stream, "q": "柯基"},
                     headers={"x-api-key": KEY_A}, timeout=30).text  # fmt: skip
    assert "柯基" in hits
    gone = httpx.post(f"{url}/console/memory/forget", headers={"x-api-key": KEY_B}, timeout=30,
                      data={"id": "no-such-memory", "chat": stream})  # fmt: skip
    assert gone.status_code == 303 and gone.headers["location"].startswith("/console/memory")
    erased = httpx.post(f"{url}/console/forget", headers={"x-api-key": KEY_A}, timeout=60,
                        data={"chat": stream, "step": "erase", "confirm": "yes"})  # fmt: skip
    assert erased.status_code == 200 and 'id="removed"' in erased.text, erased.text[-2000:]
    assert stream not in get("/console/chats", KEY_A).text
    assert status_of(lambda: a.threads.get(thread)) == 404  # the server's own thread went too
