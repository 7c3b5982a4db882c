"""Three bots on one `langgraph dev` server, attacking each other through `langgraph_sdk`:
bot-a and bot-b on qq, bot-c on discord only. Every path a run can take — input, command,
state update, resume, thread creation — is tried against another bot's data and outside
the bot's platforms; what the model receives (a recording stand-in on 127.0.0.1) is read
for the other bot's secret; the stores are read back as each bot."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from sqlalchemy import Engine

from domain.scope import ChatScope
from groupmind.settings import Settings
from groupmind.threads import stream_thread_id
from standins import langhost
from standins.model import Script, StandIn, serve
from stores.base import EventQuery
from stores.sql import SqlLexicalIndex, SqlMessageStore, SqlRunInbox, make_engine
from tests.graphs.reply_helpers import message
from tests.server.test_langgraph_dev import start, status_of

pytestmark = pytest.mark.slow
KEYS = {bot: f"key-of-{bot}-0123456789" for bot in ("bot-a", "bot-b", "bot-c")}
BOTS = [
    {"id": "bot-a", "api_key": KEYS["bot-a"], "platforms": ["qq"], "persona": "xiaoai"},
    {"id": "bot-b", "api_key": KEYS["bot-b"], "platforms": ["qq"], "persona": "meow"},
    {"id": "bot-c", "api_key": KEYS["bot-c"], "platforms": ["discord"]},
]
PERSONAS = {  # each bot's own personas file (Settings.personas_file_of)
    "bot-a": '[personas.xiaoai]\nname = "小爱"\n',
    "bot-b": '[personas.meow]\nname = "阿喵"\n',
}
SECRET = "K7Q2X8"
REDIS_DB = 12
GROUP = ChatScope(platform="qq", chat_type="group", chat_id="1001")
LLM = {"variants": {"plan": "llm", "reply": "llm", "rewrite": "rules", "merge_profile": "rules"}}
RULES = {"variants": {"plan": "rules", "reply": "rules", "rewrite": "rules",
                      "merge_profile": "rules"}}  # fmt: skip


def every_tool(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A model that asks every tool about everyone, this chat and any other."""
    return [
        {"name": "search_events", "args": {"query": "银行卡密码 秘密", "top_k": 50}},
        {"name": "search_events", "args": {"query": "密码", "target_group_id": "1001"}},
        {"name": "get_profile", "args": {"target_id": "10001", "target_type": "user"}},
        {"name": "get_profile", "args": {"target_id": "1001", "target_type": "group"}},
    ]


@pytest.fixture(scope="module")
def standin() -> Iterator[StandIn]:
    with serve(Script(tool_calls=every_tool)) as s:
        yield s


@pytest.fixture(
    scope="module", params=["dev", pytest.param("langhost", marks=pytest.mark.postgres)]
)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, standin: StandIn
) -> Iterator[tuple[str, str]]:
    """(server URL, groupmind's SQL URL): `langgraph dev` on SQLite, or the production
    recipe (langhost on PostgreSQL + Redis, groupmind's data in PostgreSQL)."""
    tmp = tmp_path_factory.mktemp(f"tenancy-{request.param}")
    data = tmp / "data"
    data.mkdir()
    for bot, personas in PERSONAS.items():
        (data / f"personas.{bot}.toml").write_text(personas, encoding="utf-8")
    settings = {
        "bots": json.dumps(BOTS), "chat_model": "standin", "chat_base_url": standin.url,
        "chat_api_key": "x", "data_dir": str(data),
    }  # fmt: skip
    if request.param == "dev":
        env = {f"GROUPMIND_{k.upper()}": v for k, v in settings.items()}
        for url, _data, _log in start(tmp, **env):
            yield url, f"sqlite:///{data / 'groupmind.db'}"
        return
    langhost.available()
    with langhost.databases("lh", "gm") as dbs:
        langhost.redis_flush(REDIS_DB)
        env = langhost.base_env(dbs["lh"], REDIS_DB, sql_url=dbs["gm"], **settings)
        url, proc = langhost.serve(tmp, env)
        try:
            yield url, dbs["gm"]
        finally:
            langhost.stop(proc)


def client(url: str, bot: str) -> Any:
    return get_sync_client(url=url, api_key=KEYS[bot])


@lru_cache(maxsize=4)
def engine_of(sql_url: str) -> Engine:
    return make_engine(sql_url)


def wait_remembered(data: str, bot: str, text: str, timeout: float = 60) -> None:
    """Until the server's memory worker stored an event of ``bot`` holding ``text``."""
    index = SqlLexicalIndex(engine_of(data), bot=bot)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        hits = index.search(EventQuery(text=text, platform="qq", chat_type="group",
                                       chat_id="1001", top_k=20))  # fmt: skip
        if any(text in h.event.text for h in hits):
            return
        time.sleep(0.3)
    raise AssertionError(f"{bot} never remembered {text!r}")


def reply(c: Any, bot: str, msg: dict[str, Any], context: Any = LLM) -> Any:
    stream = f"{msg['platform']}:{msg['chat_type']}:{msg['chat_id']}"
    return c.runs.wait(stream_thread_id(stream, bot), "reply", input={"message": msg},
                       context=context, if_not_exists="create")  # fmt: skip


def test_a_bot_never_reads_writes_or_erases_another_bots_chat(
    server: tuple[str, str], standin: StandIn
) -> None:
    url, data = server
    a, b = client(url, "bot-a"), client(url, "bot-b")
    told = message(f"@小爱 记住，我的银行卡密码是 {SECRET}", mentions=["bot-a"])
    assert reply(a, "bot-a", told)["action"] == "text_reply"
    wait_remembered(data, "bot-a", SECRET)

    # B, on its own thread for the same qq group, asks for it: the model never sees it.
    start = len(standin.requests)
    asked = reply(b, "bot-b", message("@阿喵 10001的银行卡密码是多少？", mentions=["bot-b"]))
    seen = standin.since(start)
    assert seen, "the stand-in was asked nothing"
    assert any(m.get("role") == "tool" for r in seen for m in r["messages"])  # tools ran
    assert SECRET not in json.dumps(seen, ensure_ascii=False)
    assert SECRET not in json.dumps(asked, ensure_ascii=False)

    # B's memory run on that chat writes B's memory, never A's recall.
    job = {"request_id": "mem-b-1", "action_summary": "", "new_info": "B群友的暗号是 ZZ9B",
           "user_id": "10002", "user_name": "阿强", "platform": "qq", "chat_type": "group",
           "chat_id": "1001", "timestamp": "2026-11-16T10:05:00+08:00", "new_info_by": "user"}  # fmt: skip
    stored = b.runs.wait(b.threads.create()["thread_id"], "memory", input=job, context=RULES)
    assert stored["status"] in ("stored", "degraded")
    as_a = SqlLexicalIndex(engine_of(data), bot="bot-a")
    query = EventQuery(text="暗号 ZZ9B", platform="qq", chat_type="group", chat_id="1001")
    assert all("ZZ9B" not in h.event.text for h in as_a.search(query))
    as_b = SqlLexicalIndex(engine_of(data), bot="bot-b")
    assert any("ZZ9B" in h.event.text for h in as_b.search(query))

    # B forgets the whole chat: its own copy goes, A's stays whole.
    a_messages = SqlMessageStore(engine_of(data), bot="bot-a")
    before = a_messages.members(GROUP.key)
    forgot = b.runs.wait(b.threads.create()["thread_id"], "forget",
                         input={"platform": "qq", "chat_type": "group", "chat_id": "1001"})  # fmt: skip
    assert forgot["removed"]["events"] >= 1 and forgot["removed"]["messages"] >= 1
    assert as_b.count() == 0
    assert any(SECRET in h.event.text for h in as_a.search(
        EventQuery(text="银行卡 密码", platform="qq", chat_type="group", chat_id="1001")))  # fmt: skip
    assert a_messages.members(GROUP.key) == before != {}


def test_platform_limits_hold_on_every_input_path(server: tuple[str, str]) -> None:
    url, data = server
    c = client(url, "bot-c")  # discord only
    qq_chat = {"platform": "qq", "chat_type": "group", "chat_id": "1001"}
    forget_thread = c.threads.create()["thread_id"]
    assert status_of(lambda: c.runs.wait(forget_thread, "forget", input=qq_chat)) == 403
    command = {"update": qq_chat, "goto": "erase"}
    assert status_of(lambda: c.runs.wait(forget_thread, "forget", command=command)) == 403
    on_qq = message("@bot-c hi", mentions=["bot-c"])
    assert status_of(lambda: reply(c, "bot-c", on_qq, RULES)) == 403
    own = message("hello", platform="discord", chat_id="d1")
    thread = stream_thread_id("discord:group:d1", "bot-c")
    smuggled = {"update": {"message": [on_qq]}, "goto": "observe"}
    assert status_of(lambda: c.runs.wait(thread, "reply", command=smuggled,
                                         if_not_exists="create")) == 403  # fmt: skip
    # Past the server's checks (its own thread, a state update, then a resume), the graph
    # itself refuses before anything is written.
    assert reply(c, "bot-c", own, RULES)["action"] == "no_reply"
    qq_msg = {**on_qq, "timestamp": "2026-11-16T10:05:00+08:00"}
    c.threads.update_state(thread, {"msg": qq_msg, "stream": "qq:group:1001"}, as_node="observe")
    resumed = c.runs.wait(thread, "reply", input=None, raise_error=False)
    assert "not one of bot 'bot-c'" in json.dumps(resumed, ensure_ascii=False)
    c_messages = SqlMessageStore(engine_of(data), bot="bot-c")
    assert c_messages.members("qq:group:1001") == {}
    assert list(c_messages.members("discord:group:d1")) == [own["user_id"]]


def test_a_refused_run_writes_nothing_and_threads_cannot_be_squatted(
    server: tuple[str, str],
) -> None:
    url, data = server
    a, b = client(url, "bot-a"), client(url, "bot-b")
    stream = "qq:group:3003"
    mine = stream_thread_id(stream, "bot-a")
    # B squats on A's thread id: by creating it, with or without its stream, or by a run.
    assert status_of(lambda: b.threads.create(thread_id=mine)) == 403
    assert status_of(lambda: b.threads.create(thread_id=mine, metadata={"stream": stream})) == 403
    job = {"request_id": "sq-1", "action_summary": "", "new_info": "x", "user_id": "1",
           "user_name": "小明", "chat_type": "group", "chat_id": "3003",
           "timestamp": "2026-11-16T10:05:00+08:00"}  # fmt: skip
    assert status_of(lambda: b.runs.wait(mine, "memory", input=job, if_not_exists="create")) == 403
    planted = message("@小爱 你好，我是管理员", chat_id="3003", user_id="66666", mentions=["bot-a"])
    assert status_of(lambda: reply(b, "bot-a", planted, RULES)) == 403  # A's id, B's key
    inbox = SqlRunInbox(engine_of(data), bot="bot-a")
    assert inbox.waiting(mine) == []
    assert SqlRunInbox(engine_of(data), bot="bot-b").waiting(mine) == []
    # A's thread is A's, and nothing B sent is in it.
    assert a.threads.create(thread_id=mine, metadata={"stream": stream})["thread_id"] == mine
    out = reply(a, "bot-a", message("@小爱 在吗", chat_id="3003", mentions=["bot-a"]), RULES)
    assert out["action"] == "text_reply" and planted["message_id"] not in out["context_ids"]
    values = a.threads.get_state(mine)["values"]
    assert planted["message_id"] not in values["seen_ids"]
    assert status_of(lambda: b.threads.get(mine)) == 404


def test_each_bot_is_addressed_by_its_own_id_and_names(server: tuple[str, str]) -> None:
    url, _ = server
    a, b = client(url, "bot-a"), client(url, "bot-b")

    def heard(c: Any, bot: str, content: str, **kw: Any) -> str:
        chat_id = uuid.uuid4().hex[:8]
        out = reply(c, bot, message(content, chat_id=chat_id, **kw), RULES)
        return str(out["action"])

    assert heard(a, "bot-a", "在吗", mentions=["bot-a"]) == "text_reply"
    assert heard(b, "bot-b", "在吗", mentions=["bot-a"]) == "no_reply"  # not B's id
    assert heard(b, "bot-b", "在吗", mentions=["bot-b"]) == "text_reply"
    assert heard(a, "bot-a", "小爱，在吗") == "text_reply"  # A's persona's name
    assert heard(b, "bot-b", "小爱，在吗") == "no_reply"
    assert heard(b, "bot-b", "阿喵，在吗") == "text_reply"  # B's


def test_reserved_and_malformed_bot_ids_cannot_be_configured() -> None:
    from pydantic import ValidationError

    for bad in ("open", "OPEN", "bot a", "-x", "a:b", "x" * 65):
        with pytest.raises(ValidationError):
            Settings(_env_file=None, bots=[{"id": bad, "api_key": "k" * 16}])  # type: ignore[call-arg]
        with pytest.raises(ValidationError):
            Settings(_env_file=None, bot_id=bad)  # type: ignore[call-arg]


def test_a_key_in_any_case_of_bearer_is_taken(server: tuple[str, str]) -> None:
    url, _ = server
    for scheme in ("Bearer", "bearer", "BEARER"):
        r = httpx.post(f"{url}/threads/search", json={},
                       headers={"Authorization": f"{scheme} {KEYS['bot-a']}"})  # fmt: skip
        assert r.status_code == 200, (scheme, r.text)
