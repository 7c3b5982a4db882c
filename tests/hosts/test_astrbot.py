"""groupmind's memory inside a real AstrBot (4.29, its own Python 3.12 environment: `make
astrbot-venv`), started headless from a config this test writes, with the plugin copied
into its data/plugins: a OneBot v11 implementation stand-in on AstrBot's reverse
WebSocket, the recording model stand-in as AstrBot's own model, and groupmind's server
(`langgraph dev`) with two bots' keys. What a member told the group reaches AstrBot's
model request (a user part, never the system message) when another asks about it; the
answer is recorded in groupmind; another group's facts and another bot's data never reach
it; with groupmind stopped AstrBot still answers, and what it captured meanwhile reaches
groupmind, once each, when it is back."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from standins.model import Script, StandIn, serve
from standins.services import REQUIRE
from standins.serving import free_port
from tests.hosts.wire import Account, said
from tests.server.test_langgraph_dev import start

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / "hosts" / ".astrbot-venv"
PLUGIN = ROOT / "hosts" / "astrbot" / "astrbot_plugin_groupmind"
KEYS = {"bot-a": "host-key-of-bot-a-0123456789", "bot-b": "host-key-of-bot-b-0123456789"}
BOTS = [{"id": bot, "api_key": key} for bot, key in KEYS.items()]
TOKEN = "astrbot-onebot-token"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (VENV / "bin" / "astrbot").exists() and not REQUIRE,
        reason="AstrBot's environment is not built (make astrbot-venv)",
    ),
]


@pytest.fixture(scope="module")
def model() -> Iterator[StandIn]:
    with serve(Script(text=lambda body: "好的，我想起来了。")) as standin:
        yield standin


class Groupmind:
    """groupmind's server, stopped and started again on the same data dir and port."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.port = free_port()
        self.env = {"GROUPMIND_BOTS": json.dumps(BOTS), "GROUPMIND_CHAT_STATES__BUFFER_MAX": "4"}
        self._run: Iterator[Any] | None = None
        self.url = f"http://127.0.0.1:{self.port}"

    def up(self) -> None:
        self._run = start(self.tmp, cwd=self.tmp / "data", port=self.port, **self.env)
        self.url, self.data, _ = next(self._run)

    def down(self) -> None:
        assert self._run is not None
        next(self._run, None)
        self._run = None

    def read(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        """Rows of groupmind's database ([] while the server has not made it yet)."""
        path = self.data / "groupmind.db"
        if not path.exists():
            return []
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
                return conn.execute(sql, args).fetchall()
        except sqlite3.OperationalError:  # being migrated as it starts
            return []

    def messages(self, bot: str, stream: str) -> list[dict[str, Any]]:
        """The stream's stored messages."""
        rows = self.read("SELECT message_id, user_id, content, from_bot, reply_to FROM "
                         "messages WHERE bot_id = ? AND stream = ? ORDER BY seq", bot, stream)  # fmt: skip
        keys = ("message_id", "user_id", "content", "from_bot", "reply_to")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def memories(self, bot: str) -> list[str]:
        return [t for (t,) in self.read("SELECT text FROM event_docs WHERE bot_id = ?", bot)]


@pytest.fixture(scope="module")
def groupmind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Groupmind]:
    tmp = tmp_path_factory.mktemp("groupmind")
    (tmp / "data").mkdir()
    server = Groupmind(tmp)
    server.up()
    yield server
    if server._run is not None:
        server.down()


class AstrBot:
    def __init__(self, root: Path, model: StandIn, groupmind: Groupmind) -> None:
        self.root, self.port = root, free_port()
        self.model, self.groupmind = model, groupmind
        self.proc: subprocess.Popen[bytes] | None = None
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run([str(VENV / "bin" / "astrbot"), "init", "-y"], cwd=root, check=True,
                       capture_output=True, timeout=300)  # fmt: skip
        shutil.copytree(PLUGIN, root / "data" / "plugins" / PLUGIN.name, dirs_exist_ok=True)

    def configure(self, bot: str) -> None:
        config = {
            "platform": [{"id": "napcat", "type": "aiocqhttp", "enable": True,
                          "ws_reverse_host": "127.0.0.1", "ws_reverse_port": self.port,
                          "ws_reverse_token": TOKEN}],
            "provider_sources": [{"id": "standin", "provider": "openai",
                                  "type": "openai_chat_completion",
                                  "provider_type": "chat_completion", "enable": True,
                                  "key": ["standin-key"], "api_base": f"{self.model.url}/v1",
                                  "timeout": 60, "proxy": "", "custom_headers": {}}],
            "provider": [{"id": "standin-model", "provider_source_id": "standin",
                          "model": "standin", "enable": True,
                          "provider_type": "chat_completion"}],
            "provider_settings": {"datetime_system_prompt": False},
            "agent_runner": {"runner_type": "local",
                             "config": {"model": {"provider_id": "standin-model"}}},
            "dashboard": {"enable": False},
            "disable_metrics": True,
        }  # fmt: skip
        data = self.root / "data"
        (data / "cmd_config.json").write_text(json.dumps(config, ensure_ascii=False))
        plugin = {"server_url": self.groupmind.url, "api_key": KEYS[bot], "bot_id": bot,
                  "platform": "qq", "budget_s": 5.0}  # fmt: skip
        (data / "config" / f"{PLUGIN.name}_config.json").write_text(json.dumps(plugin))

    def up(self) -> Account:
        log = (self.root / "astrbot.log").open("ab")
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "NO_PROXY": "*"}
        self.proc = subprocess.Popen([str(VENV / "bin" / "astrbot"), "run"], cwd=self.root,
                                     stdout=log, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)  # fmt: skip
        return Account(f"ws://127.0.0.1:{self.port}/ws", TOKEN)

    def down(self) -> None:
        if self.proc is not None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc = None

    def log(self) -> str:
        return (self.root / "astrbot.log").read_text(errors="replace")


def asked_model(model: StandIn, since: int, marker: str) -> list[dict[str, Any]]:
    """The chat requests AstrBot's model got since ``since`` whose messages hold ``marker``."""
    return [b for b in model.requests[since:] if marker in json.dumps(b, ensure_ascii=False)]


def parts(body: dict[str, Any], role: str) -> str:
    texts = []
    for m in body.get("messages", []):
        if m.get("role") == role:
            content = m.get("content")
            texts.append(json.dumps(content, ensure_ascii=False) if not isinstance(content, str)
                         else content)  # fmt: skip
    return "\n".join(texts)


def until(check: Any, timeout: float = 90, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what or check}")


def test_astrbot_remembers_through_groupmind(
    tmp_path: Path, model: StandIn, groupmind: Groupmind
) -> None:
    astrbot = AstrBot(tmp_path / "astrbot", model, groupmind)
    astrbot.configure("bot-a")
    account = astrbot.up()
    try:
        # 阿强 tells the group, to nobody in particular; the buffer fills and is remembered
        account.send(said(1001, 10002, "阿强", "我下个月要去成都跑马拉松"))
        for n in range(4):
            account.send(said(1001, 10001, "小明", f"今天的会议第{n}项讨论完了"))
        account.send(said(2002, 10009, "猫主人", "我家的猫叫芝麻糊，最爱吃鸡胸肉"))
        for n in range(4):
            account.send(said(2002, 10009, "猫主人", f"猫咪今天第{n}次打喷嚏"))
        until(lambda: any("成都" in t for t in groupmind.memories("bot-a")), what="the memory")

        start = len(model.requests)
        account.send(said(1001, 10003, "莉莉", "阿强下个月去哪里？谁家的猫叫什么名字？",
                          at_bot=True))  # fmt: skip
        texts = account.wait_sends(1)
        assert texts and "我想起来了" in texts[-1], astrbot.log()[-3000:]
        (request,) = asked_model(model, start, "阿强下个月去哪里") or [None]
        assert request is not None, astrbot.log()[-3000:]
        assert "成都" in parts(request, "user")  # in the user part...
        assert "成都" not in parts(request, "system")  # ...never the system prompt
        assert "芝麻糊" not in json.dumps(request, ensure_ascii=False)  # another group's

        stream = "qq:group:1001"
        line = until(lambda: [m for m in groupmind.messages("bot-a", stream) if m["from_bot"]],
                     what="the recorded answer")  # fmt: skip
        assert "我想起来了" in line[-1]["content"] and line[-1]["reply_to"]

        # groupmind stopped: AstrBot still answers; what it captured is kept
        groupmind.down()
        start = len(model.requests)
        account.send(said(1001, 10001, "小明", "停机期间说的第一句：我养了一只柯基"))
        account.send(said(1001, 10003, "莉莉", "停机期间问：明天几点开会？", at_bot=True))
        texts = account.wait_sends(2)
        assert len(texts) >= 2, astrbot.log()[-3000:]
        assert asked_model(model, start, "明天几点开会")
        groupmind.up()
        kept = until(lambda: [m for m in groupmind.messages("bot-a", stream)
                              if "停机期间" in m["content"]], timeout=120,
                     what="the kept messages")  # fmt: skip
        until(lambda: len([m for m in groupmind.messages("bot-a", stream)
                           if "停机期间" in m["content"]]) == 2, what="both kept messages")  # fmt: skip
        time.sleep(3)  # nothing delivered twice, even later
        kept = [m for m in groupmind.messages("bot-a", stream) if "停机期间" in m["content"]]
        assert len(kept) == 2 and len({m["message_id"] for m in kept}) == 2
        log = astrbot.log()
        assert log.count("cannot be reached") == 1, log
        assert "is back" in log
    finally:
        account.close()
        astrbot.down()

    # the same plugin under bot B's key: nothing of bot A's
    astrbot.configure("bot-b")
    account = astrbot.up()
    try:
        start = len(model.requests)
        account.send(said(1001, 10003, "莉莉", "阿强下个月要去哪儿跑步？", at_bot=True))
        account.wait_sends(1)
        (request,) = asked_model(model, start, "去哪儿跑步") or [None]
        assert request is not None, astrbot.log()[-3000:]
        assert "成都" not in json.dumps(request, ensure_ascii=False)
    finally:
        account.close()
        astrbot.down()
