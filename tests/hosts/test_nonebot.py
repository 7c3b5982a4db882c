"""groupmind as a real NoneBot2's brain (2.5 with the OneBot v11 adapter 2.4.6, in its own
environment: `make nonebot-venv`), started headless from a bot.py and .env this test
writes, beside another plugin (a /ping that answers pong): a OneBot v11 implementation
stand-in dials NoneBot's reverse WebSocket; groupmind's server (`langgraph dev`, two
bots' keys) runs its reply graph on the recording model stand-in. What a member told the
group reaches groupmind's model request (a user part, never the system message) when
another asks the bot; the answer goes out through the adapter (send_msg); the other
plugin's answer is recorded as the bot's line; another group's facts and another bot's
data never reach it; with groupmind stopped NoneBot goes on as without the plugin, and
what it saw meanwhile reaches groupmind, once each, when it is back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from standins.model import Script, StandIn, serve
from standins.services import REQUIRE
from standins.serving import free_port
from tests.hosts.test_astrbot import KEYS, Groupmind, asked_model, parts, until
from tests.hosts.wire import Account, said

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / "hosts" / ".nonebot-venv"
TOKEN = "nonebot-onebot-token"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (VENV / "bin" / "python").exists() and not REQUIRE,
        reason="NoneBot2's environment is not built (make nonebot-venv)",
    ),
]
BOT_PY = """import nonebot
from nonebot.adapters.onebot.v11 import Adapter

nonebot.init()
nonebot.get_driver().register_adapter(Adapter)
nonebot.load_plugin("nonebot_plugin_groupmind")
nonebot.load_plugins("plugins")
nonebot.run()
"""
PING = """from nonebot import on_command

ping = on_command("ping")


@ping.handle()
async def _() -> None:
    await ping.finish("pong，我在")
"""


@pytest.fixture(scope="module")
def model() -> Iterator[StandIn]:
    with serve(Script(text=lambda body: "我记得这件事。")) as standin:
        yield standin


@pytest.fixture(scope="module")
def groupmind(tmp_path_factory: pytest.TempPathFactory, model: StandIn) -> Iterator[Groupmind]:
    tmp = tmp_path_factory.mktemp("groupmind")
    (tmp / "data").mkdir()
    server = Groupmind(tmp)
    server.env.update(GROUPMIND_CHAT_MODEL="standin", GROUPMIND_CHAT_BASE_URL=model.url,
                      GROUPMIND_CHAT_API_KEY="standin-key")  # fmt: skip
    server.up()
    yield server
    if server._run is not None:
        server.down()


class NoneBot:
    def __init__(self, root: Path, groupmind: Groupmind) -> None:
        self.root, self.port, self.groupmind = root, free_port(), groupmind
        (root / "plugins").mkdir(parents=True, exist_ok=True)
        (root / "bot.py").write_text(BOT_PY)
        (root / "plugins" / "ping.py").write_text(PING)
        self.proc: subprocess.Popen[bytes] | None = None

    def configure(self, bot: str) -> None:
        lines = {"DRIVER": "~fastapi+~websockets+~httpx", "HOST": "127.0.0.1",
                 "PORT": str(self.port), "ONEBOT_ACCESS_TOKEN": TOKEN,
                 "COMMAND_START": '["/"]', "GROUPMIND_SERVER_URL": self.groupmind.url,
                 "GROUPMIND_API_KEY": KEYS[bot], "GROUPMIND_BOT_ID": bot}  # fmt: skip
        (self.root / ".env.prod").write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
        (self.root / ".env").write_text("ENVIRONMENT=prod\n")

    def up(self) -> Account:
        log = (self.root / "nonebot.log").open("ab")
        self.proc = subprocess.Popen([str(VENV / "bin" / "python"), "bot.py"], cwd=self.root,
                                     stdout=log, stderr=subprocess.STDOUT,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"},
                                     start_new_session=True)  # fmt: skip
        return Account(f"ws://127.0.0.1:{self.port}/onebot/v11/ws", TOKEN)

    def down(self) -> None:
        if self.proc is not None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc = None

    def log(self) -> str:
        return (self.root / "nonebot.log").read_text(errors="replace")


def test_nonebot_answers_with_groupminds_memory(
    tmp_path: Path, model: StandIn, groupmind: Groupmind
) -> None:
    nonebot = NoneBot(tmp_path / "nonebot", groupmind)
    nonebot.configure("bot-a")
    account = nonebot.up()
    stream = "qq:group:1001"
    try:
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
        assert texts and "我记得这件事" in texts[-1], nonebot.log()[-3000:]
        assert account.sends()[-1]["action"] == "send_msg"  # through the adapter
        asked = asked_model(model, start, "阿强下个月去哪里")  # the plan's and the reply's
        replies = [b for b in asked if b.get("tools")]  # the reply slot binds the tools
        assert replies, nonebot.log()[-3000:]
        assert "成都" in parts(replies[0], "user") and "成都" not in parts(replies[0], "system")
        assert all("芝麻糊" not in json.dumps(b, ensure_ascii=False) for b in asked)

        account.send(said(1001, 10001, "小明", "/ping"))  # another plugin answers
        texts = account.wait_sends(2)
        assert "pong，我在" in texts[-1], nonebot.log()[-3000:]
        line = until(lambda: [m for m in groupmind.messages("bot-a", stream)
                              if m["from_bot"] and "pong" in m["content"]],
                     what="the other plugin's answer, recorded")  # fmt: skip
        assert line and line[0]["user_id"] == "bot-a"
        ours = [m for m in groupmind.messages("bot-a", stream) if "我记得这件事" in m["content"]]
        assert len(ours) == 1  # groupmind's own answer, stored once (not recorded again)
        assert len(texts) == 2  # a command for another plugin: groupmind keeps it, answers not

        groupmind.down()
        account.send(said(1001, 10001, "小明", "停机期间说的第一句：我养了一只柯基"))
        account.send(said(1001, 10003, "莉莉", "/ping"))
        texts = account.wait_sends(3)
        assert "pong" in texts[-1], nonebot.log()[-3000:]  # NoneBot goes on without groupmind
        groupmind.up()
        until(lambda: [m for m in groupmind.messages("bot-a", stream)
                       if "停机期间" in m["content"]], timeout=120, what="the kept message")  # fmt: skip
        time.sleep(3)
        kept = [m for m in groupmind.messages("bot-a", stream) if "停机期间" in m["content"]]
        assert len(kept) == 1, kept
        log = nonebot.log()
        assert log.count("cannot be reached") == 1 and "is back" in log, log
    finally:
        account.close()
        nonebot.down()

    nonebot.configure("bot-b")
    account = nonebot.up()
    try:
        start = len(model.requests)
        account.send(said(1001, 10003, "莉莉", "阿强下个月要去哪儿跑步？", at_bot=True))
        account.wait_sends(1)
        asked = asked_model(model, start, "去哪儿跑步")
        assert asked, nonebot.log()[-3000:]
        assert all("成都" not in json.dumps(b, ensure_ascii=False) for b in asked)
    finally:
        account.close()
        nonebot.down()
