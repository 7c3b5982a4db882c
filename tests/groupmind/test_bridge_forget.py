"""Forget reaches the OneBot bridge's journal, which keeps every message event it received
(and the answer it sent) for a week: a person's events, and events quoting or naming
them, go; a chat's go whole; another bot's rows on the same file stay. End to end: a
bridge answering through the implementation stand-in, `groupmind forget` beside it, then
every file of the data dir read byte by byte."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from domain.scope import ChatScope, ForgetTarget
from groupmind.cli import app
from groupmind.onebot.brains import InProcessBrain
from groupmind.onebot.bridge import Bridge
from groupmind.settings import Settings
from standins.onebot import SELF_ID, Implementation, group_event, private_event
from stores.journal import Journal, JournalAt
from stores.said import Said
from tests.acceptance.test_forget_scan import traces

AT_BOT = {"type": "at", "data": {"qq": str(SELF_ID)}}
SAID = ["ZQXJ7731", "猫头鹰咖啡馆", "KVBN5512"]


def left(data: Path, strings: list[str]) -> dict[str, list[str]]:
    """``traces``, but for Chroma's vector index files, for after the forget: an index
    Chroma makes later is written from memory it never cleared, which can still hold what
    the process freed (forget zeroes that capacity; the next forget or compact does
    again). docs/scopes.md."""
    return {f: s for f, s in traces(data, strings).items() if not f.endswith(".bin")}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "data": {"text": t}}


async def bridged(settings: Settings) -> tuple[Bridge, Any, Implementation]:
    """A bridge over an in-process brain on the data dir, and the stand-in dialled in."""
    brain: Any = await asyncio.to_thread(InProcessBrain, settings)
    journal = Journal(settings.resolved_onebot_journal, bot=settings.bot_id)
    bridge = Bridge(brain, journal, bot_id=settings.bot_id)
    server = await bridge.serve_reverse("127.0.0.1", 0)
    url = f"ws://127.0.0.1:{next(iter(server.sockets)).getsockname()[1]}/onebot/v11/ws"
    impl = Implementation(group_names={1001: "技术交流群"})
    await impl.dial(url)
    return bridge, server, impl


def journaled(journal: Journal, rows: list[tuple[dict[str, Any], str]]) -> None:
    journal.receive([(str(SELF_ID), event, chat) for event, chat in rows])


def test_a_person_goes_from_one_bots_rows_and_a_chat_goes_whole(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    ours, theirs = Journal(path, bot="bot"), Journal(path, bot="other")
    rows = [
        (group_event(1001, 10001, f"我的暗号是 {SAID[0]}"), "qq:group:1001"),
        (group_event(1001, 10002, "明天见"), "qq:group:1001"),
        (group_event(1001, 10002, "小明说他常去那家店"), "qq:group:1001"),  # names them
        (private_event(10001, f"{SAID[2]} 是我的新密码"), "qq:private:10001"),
        (group_event(2002, 10003, "别的群"), "qq:group:2002"),
    ]
    journaled(ours, rows)
    journaled(theirs, [({**e, "message_id": e["message_id"] + 10**6}, c) for e, c in rows])
    said = Said("10001", frozenset({"小明"}), (f"我的暗号是 {SAID[0]}",))
    person = ForgetTarget(platform="qq", user_id="10001")
    assert JournalAt(path, "bot").forget(person, said) == 3
    assert ours.counts() == {"received": 7, "erased": 3}  # 2 of ours, 5 of the other bot's
    left = [json.loads(e) for (e,) in sqlite3.connect(path).execute(
        "SELECT event FROM events WHERE bot = 'bot' ORDER BY seq")]  # fmt: skip
    assert [e.get("raw_message") for e in left] == [None, "明天见", None, None, "别的群"]
    erased = sqlite3.connect(path).execute(
        "SELECT chat, action FROM events WHERE state = 'erased'").fetchall()  # fmt: skip
    assert erased == [("", None)] * 3  # the id alone: no chat, no frame, no answer
    # delivered again (an implementation does after a reconnect): taken once, not again
    assert ours.receive([(str(SELF_ID), rows[0][0], rows[0][1])]) == [None]
    assert JournalAt(path, "bot").forget(person, said) == 0  # nothing left to erase
    chat = ForgetTarget(platform="qq", chat=ChatScope(platform="qq", chat_type="group",
                                                      chat_id="2002"))  # fmt: skip
    assert JournalAt(path, "other").forget(chat, Said("")) == 1
    assert JournalAt(path, "bot").forget(chat, Said("")) == 1
    assert ours.counts() == {"received": 5, "erased": 5}
    assert JournalAt(tmp_path / "none.db", "bot").forget(person, said) == 0
    assert not (tmp_path / "none.db").exists()  # no journal: none is made


def test_a_journal_from_before_bots_is_taken_as_any_bots(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:  # the journal's table as it was
        conn.execute(
            "CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, self_id VARCHAR(64) "
            "NOT NULL, message_id VARCHAR(128) NOT NULL, chat VARCHAR(300) NOT NULL, event "
            "JSON NOT NULL, state VARCHAR(16) NOT NULL, action JSON, reply_id VARCHAR(160), "
            "sent_id VARCHAR(128), error TEXT, received_at FLOAT NOT NULL, updated_at FLOAT "
            "NOT NULL, CONSTRAINT uq_events_message UNIQUE (self_id, message_id))"
        )
        event = group_event(1001, 10001, f"我的暗号是 {SAID[0]}")
        conn.execute(
            "INSERT INTO events (self_id, message_id, chat, event, state, received_at, "
            "updated_at) VALUES ('1', '9', 'qq:group:1001', ?, 'received', 0, 0)",
            (json.dumps(event),),
        )
    journal = Journal(path, bot="bot")
    journaled(journal, [(group_event(1001, 10001, "新的一条"), "qq:group:1001")])
    target = ForgetTarget(platform="qq", user_id="10001")
    assert JournalAt(path, "bot").forget(target, Said("10001")) == 2
    assert journal.counts() == {"erased": 2}


@pytest.mark.slow
def test_forget_beside_a_running_bridge_leaves_nothing_in_its_journal(tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = Settings(_env_file=None, data_dir=data)  # type: ignore[call-arg]
    runner = CliRunner()

    async def main() -> None:
        bridge, server, impl = await bridged(settings)
        journal = bridge.journal
        said = f" 我的暗号是 {SAID[0]}，我常去{SAID[1]}"
        await impl.send(group_event(1001, 10001, [AT_BOT, text(said)], card="小明"))
        await impl.send(private_event(10001, f"{SAID[2]} 是我的新密码"))
        await impl.send(group_event(1001, 10002, "明天见", card="阿强"))
        await impl.wait_for(2)
        for _ in range(100):  # every message settled (answered or not): none in flight
            if set(journal.counts()) <= {"done", "sent"} and sum(journal.counts().values()) == 3:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(2)  # the memory worker
        assert any(f.startswith("onebot-journal.db") for f in traces(data, SAID))
        forget = ["--data-dir", str(data), "forget", "--user-id", "10001", "--yes", "--json"]
        erased = await asyncio.to_thread(runner.invoke, app, forget)
        assert erased.exit_code == 0, erased.output
        result = json.loads(erased.stdout)
        assert result["removed"]["bridge_events"] == 2
        assert result["compacted"]["bridge_journal"] == "compacted"
        assert traces(data, [*SAID, "小明"]) == {}
        assert journal.counts().get("erased") == 2 and sum(journal.counts().values()) == 3
        # The bridge goes on, on the same journal.
        await impl.send(group_event(1001, 10002, [AT_BOT, text(" 在吗")], card="阿强"))
        before = len(impl.sent("send_"))
        sends = await impl.wait_for(before + 1)
        assert sends[-1]["params"]["group_id"] == 1001
        await impl.hang_up()
        server.close()
        await server.wait_closed()
        await bridge.close()

    asyncio.run(main())
    assert left(data, SAID) == {}


def texts_sent(impl: Implementation) -> list[str]:
    return [
        seg["data"].get("text", "")
        for action in impl.sent("send_")
        for seg in action["params"]["message"]
        if seg["type"] == "text"
    ]


@pytest.mark.slow
def test_a_redelivered_question_never_brings_back_a_forgotten_answer(tmp_path: Path) -> None:
    """阿强 says "我爱甲乙丙社"; memory keeps "阿强爱甲乙丙社"; the bot tells 小明 so. After
    `groupmind forget` of 阿强 the implementation delivers 小明's question again (as one does
    after a reconnect): nothing of 阿强 is sent, and no file under the data dir holds it.
    Then the bridge's journal is lost too: the reply thread alone still answers nothing."""
    data = tmp_path / "data"
    settings = Settings(_env_file=None, data_dir=data)  # type: ignore[call-arg]
    runner = CliRunner()
    secret = "甲乙丙社"

    async def main() -> None:
        bridge, server, impl = await bridged(settings)
        brain, journal = bridge.brain, bridge.journal
        await impl.send(group_event(1001, 10002, [AT_BOT, text(f" 我爱{secret}")], card="阿强"))
        await impl.wait_for(1)
        events = brain.session.deps.events
        for _ in range(200):  # the memory worker writes what memory made of it
            if any(secret in e.text for e in events.get(events.covered(ForgetTarget(
                    platform="qq", user_id="10002")))):  # fmt: skip
                break
            await asyncio.sleep(0.1)
        question = group_event(1001, 10001, [AT_BOT, text(" 阿强爱什么")], card="小明")
        await impl.send(question)
        await impl.wait_for(2)
        assert any(f"阿强爱{secret}" in t for t in texts_sent(impl)), texts_sent(impl)
        await asyncio.sleep(1)  # settled: the answer confirmed, its line stored
        forget = ["--data-dir", str(data), "forget", "--user-id", "10002", "--yes", "--json"]
        erased = await asyncio.to_thread(runner.invoke, app, forget)
        assert erased.exit_code == 0, erased.output
        sent, counts = len(impl.sent("send_")), journal.counts()
        assert counts.get("erased") == 2  # 阿强's message and the answer that named him
        await impl.send(question)  # delivered again
        await asyncio.sleep(3)
        assert len(impl.sent("send_")) == sent  # taken once: not answered again
        assert journal.counts() == counts
        # the journal is gone (a week passed, or a new disk): the thread's record answers
        await bridge.close()
        server.close()
        await server.wait_closed()
        journal.close()
        settings.resolved_onebot_journal.unlink()
        bridge2, server2, impl2 = await bridged(settings)
        journal2 = bridge2.journal
        await impl2.send(question)
        for _ in range(100):
            if journal2.counts().get("done"):
                break
            await asyncio.sleep(0.1)
        assert journal2.counts() == {"done": 1}  # decided: nothing to send
        assert not any(secret in t for t in texts_sent(impl2))
        await impl2.hang_up()
        await impl.hang_up()
        server2.close()
        await server2.wait_closed()
        await bridge2.close()

    asyncio.run(main())
    assert left(data, [secret]) == {}
