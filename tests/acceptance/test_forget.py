"""``groupmind forget``: a person or a chat erased everywhere its data lives, nothing of
anyone else's touched (real SQLite, Chroma, checkpointer; the CLI in-process and as a
separate process against a running bot's session)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from domain.scope import ChatScope
from groupmind.chatting import reply_context, reply_to
from groupmind.cli import app
from groupmind.session import Session, open_session
from groupmind.settings import Settings
from groupmind.threads import thread_config
from stores.base import EventQuery, job_thread_id
from stores.sql.schema import ContextUsageRow, MessageRow
from tests.graphs.reply_helpers import message

ROOT = Path(__file__).resolve().parents[2]
G1 = ChatScope(platform="qq", chat_type="group", chat_id="1001")
G2 = ChatScope(platform="qq", chat_type="group", chat_id="2002")
DM = ChatScope(platform="qq", chat_type="private", chat_id="10001")
XM = {"user_id": "10001", "user_name": "小明"}
AQ = {"user_id": "10002", "user_name": "阿强"}
BOT = {"mentions": ["bot"]}


def chat_history() -> list[dict[str, Any]]:
    said = [
        message("我住在杭州，下周三去北京出差", **XM),
        message("@bot 记一下，我的生日是11月23日", **XM, **BOT),
        message("我在腾讯做后端", **AQ),
        message("@bot 阿强在哪工作？", **AQ, **BOT),
        message("我的工作是卧底", chat_type="private", chat_id=None, **XM),
        message("我养了一只橘猫", chat_id="2002", chat_name="猫咪群", **XM, **BOT),
        message("还没说完的话：明天见", **XM),  # pending in 1001's thread, not handed off
    ]
    # fixed ids and times: whether the bot answers a message is rolled on its id
    return [{**m, "message_id": f"hist-{i}", "timestamp": 1_795_000_000 + 60 * i}
            for i, m in enumerate(said)]  # fmt: skip


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", _env_file=None)  # type: ignore[call-arg]


def replay(session: Session, messages: list[dict[str, Any]]) -> None:
    graph = session.reply_graph()
    background = session.runtime.start_background_worker()
    context = reply_context(session.deps)
    for raw in messages:
        reply_to(graph, session.deps, raw, context)
        assert background.drain()
    background.stop()


def search(session: Session, scope: ChatScope, text: str) -> list[str]:
    query = EventQuery(text=text, platform=scope.platform, chat_type=scope.chat_type,
                       chat_id=scope.chat_id, persona_id="default", top_k=50)  # fmt: skip
    return sorted({h.event.user_id for h in session.deps.events.search(query)})


def cli(settings: Settings, *args: str) -> Any:
    result = CliRunner().invoke(app, ["--data-dir", str(settings.data_dir), *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def count_rows(session: Session, table: Any, *where: Any) -> int:
    with session.runtime.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table).where(*where)).scalar_one())


def test_forget_a_person_everywhere(settings: Settings) -> None:
    session = open_session(settings)
    replay(session, chat_history())
    assert search(session, G1, "北京 出差 生日 腾讯") == ["10001", "10002"]
    jobs_before = {j.request_id for j in session.jobs.list(limit=1000)}
    mine = {j.request_id for j in session.jobs.list(limit=1000) if j.payload["user_id"] == "10001"}
    session.jobs.enqueue(  # a job still waiting for a worker
        "pending-1", {"user_id": "10001"}, scope=G1, user_id="10001"
    )

    out = cli(settings, "forget", "--user-id", "10001", "--yes", "--json")
    removed = out["removed"]
    assert removed["memory_jobs"] == len(mine) + 1 and removed["events"] == len(mine)
    assert removed["relationships"] == 1 and removed["learned_profiles"] == 3
    assert removed["reply_threads"] == 3 and out["still_running"] == []

    after = open_session(settings)
    assert search(after, G1, "北京 出差 生日 腾讯 杭州") == ["10002"]  # 阿强's memory stays
    assert search(after, DM, "卧底 工作") == [] and search(after, G2, "橘猫") == []
    assert after.deps.profiles.get_relationship("qq", "10001") is None
    assert after.deps.profiles.learned_about("qq", "10001") == []
    assert after.deps.profiles.get_relationship("qq", "10002") is not None
    assert count_rows(after, MessageRow, MessageRow.user_id == "10001") == 0
    assert count_rows(after, MessageRow, MessageRow.user_id == "10002") == 2
    assert count_rows(after, ContextUsageRow, ContextUsageRow.user_id == "10001") == 0
    assert {j.request_id for j in after.jobs.list(limit=1000)} == jobs_before - mine
    saver = after.runtime.checkpoints
    assert all(
        saver.get_tuple({"configurable": {"thread_id": job_thread_id("bot", rid)}}) is None
        for rid in mine
    )
    thread = after.reply_graph().get_state(thread_config(G1.key, "bot")).values
    assert thread["chat_state"] and all(p["user_id"] != "10001" for p in thread["pending"])
    assert "明天见" not in json.dumps(thread, ensure_ascii=False)


def test_forget_a_person_in_one_chat_keeps_the_rest(settings: Settings) -> None:
    session = open_session(settings)
    replay(session, chat_history())
    cli(settings, "forget", "--user-id", "10001", "--chat-type", "group", "--chat-id", "1001",
        "--yes", "--json")  # fmt: skip
    after = open_session(settings)
    assert search(after, G1, "北京 出差 生日 腾讯 杭州") == ["10002"]
    assert search(after, DM, "卧底 工作") == ["10001"] and search(after, G2, "橘猫") == ["10001"]
    assert after.deps.profiles.get_learned(G1, "10001") is None
    assert after.deps.profiles.get_learned(DM, "10001") is not None
    assert after.deps.profiles.get_relationship("qq", "10001") is not None  # no content: kept


def test_forget_a_chat(settings: Settings) -> None:
    session = open_session(settings)
    replay(session, chat_history())
    out = cli(settings, "forget", "--chat-type", "group", "--chat-id", "1001", "--yes", "--json")
    assert out["removed"]["reply_threads"] == 1 and out["removed"]["group_profiles"] == 1
    after = open_session(settings)
    assert search(after, G1, "北京 出差 生日 腾讯 杭州") == []
    assert search(after, DM, "卧底 工作") == ["10001"] and search(after, G2, "橘猫") == ["10001"]
    assert count_rows(after, MessageRow, MessageRow.stream == G1.key) == 0
    assert after.deps.profiles.get_learned(G1, "10002") is None
    assert after.reply_graph().get_state(thread_config(G1.key, "bot")).values == {}


def test_forget_needs_a_target_and_asks_first(settings: Settings) -> None:
    runner = CliRunner()
    base = ["--data-dir", str(settings.data_dir), "forget"]
    nothing = runner.invoke(app, [*base, "--platform", "qq"])
    assert nothing.exit_code == 2 and "name a user_id, a chat" in nothing.output
    declined = runner.invoke(app, [*base, "--user-id", "10001"], input="n\n")
    assert declined.exit_code == 1


@pytest.fixture
def served(
    tmp_path: Path, chroma_http_client: Any, chroma_server: tuple[str, int]
) -> Iterator[Settings]:
    """A data dir whose vectors live in a `chroma run` server, so two processes share it."""
    yield Settings(  # type: ignore[call-arg]
        data_dir=tmp_path / "data", chroma_host=chroma_server[0], chroma_port=chroma_server[1],
        _env_file=None,
    )  # fmt: skip


def until(check: Any, timeout_s: float = 30.0) -> bool:
    """Whether ``check()`` comes true within the timeout (a background load)."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.chroma_server
@pytest.mark.slow
def test_a_running_bots_held_vectors_follow_a_forget_from_another_process(
    served: Settings,
) -> None:
    bot = open_session(served)  # the running bot: it holds the chat's vectors
    replay(bot, chat_history())
    assert search(bot, G1, "北京 出差 腾讯") == ["10001", "10002"]
    held = bot.deps.events.held  # type: ignore[attr-defined]
    held._loader.join()  # the background load is done
    search(bot, G1, "北京 出差 腾讯")
    xiaoming = {j.request_id for j in bot.jobs.list(limit=1000) if j.payload["user_id"] == "10001"}
    assert held.held_ids() & xiaoming  # 小明's vectors are in this process's memory
    postings = bot.deps.events.lexical.held  # type: ignore[attr-defined]
    assert until(lambda: postings.held_ids() & xiaoming)  # and his postings
    env = {**os.environ, "GROUPMIND_CHROMA_HOST": served.chroma_host or "",
           "GROUPMIND_CHROMA_PORT": str(served.chroma_port)}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "groupmind.cli", "--data-dir", str(served.data_dir),
         "forget", "--user-id", "10001", "--yes", "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["removed"]["events"] == len(xiaoming)
    assert search(bot, G1, "北京 出差 腾讯 生日") == ["10002"]  # the next search follows
    assert not held.held_ids() & xiaoming  # and the held copy no longer has them
    assert until(lambda: postings.held_ids() and not postings.held_ids() & xiaoming)


def test_forget_all_bots_erases_the_person_in_every_bots_data(settings: Settings) -> None:
    lines = settings.data_dir.parent / "chat.jsonl"
    lines.write_text("\n".join(json.dumps(m, ensure_ascii=False) for m in chat_history()[:3]))
    for bot in ("bot", "bot-b"):
        done = CliRunner().invoke(app, ["--data-dir", str(settings.data_dir), "--bot", bot,
                                        "replay", str(lines), "--wait-memory"])  # fmt: skip
        assert done.exit_code == 0, done.output
    only_b = cli(settings, "--bot", "bot-b", "forget", "--user-id", "10001", "--yes", "--json")
    assert only_b["removed"]["messages"] == 2  # "@bot" is not bot-b: it did not answer
    a, b = open_session(settings, bot="bot"), open_session(settings, bot="bot-b")
    assert "10001" in search(a, G1, "北京 出差 生日")
    assert "10001" not in search(b, G1, "北京 出差 生日")
    both = cli(settings, "forget", "--user-id", "10001", "--all-bots", "--yes", "--json")
    assert set(both["bots"]) == {"bot", "bot-b"}
    assert both["bots"]["bot"]["removed"]["messages"] == 3  # and bot's answer to them
    assert "10001" not in search(open_session(settings, bot="bot"), G1, "北京 出差 生日")


def test_lines_of_a_forgotten_person_and_lines_quoting_them_are_found() -> None:
    from stores.said import Said

    said = Said("10001", frozenset({"小明"}), ("@bot 我周末去买冲浪板，还有 QPWM4490", "在吗"))
    assert said.quotes("小明，我记得：小明周末去买冲浪板，还有 QPWM4490")  # what memory made of it
    assert said.quotes("收到：“@bot 我周末去买冲浪板”")  # a quote of its start
    assert not said.quotes("阿强，收到：“我觉得不错”") and not said.quotes("在")
    lines = [
        {"user_id": "10001", "user_name": "小明", "content": "@bot 在吗"},
        {
            "user_id": "bot",
            "user_name": "小爱",
            "content": "小明，我在",
        },  # the bot's answer to them
        {"user_id": "10002", "user_name": "阿强", "content": "我觉得不错"},
        {"user_id": "bot", "user_name": "小爱", "content": "阿强，收到"},
        {"user_name": "小明", "content": "没有 id 的旧行"},  # theirs by name
    ]
    assert [line["content"] for line in said.kept(lines, "bot")] == ["我觉得不错", "阿强，收到"]


def test_lines_naming_a_forgotten_person_go_too_but_not_one_character_names() -> None:
    from stores.base import EventRecord
    from stores.said import Said

    said = Said("10001", frozenset({"小明", "明"}), ("在吗",))
    assert said.named_in("阿强，小明说你是工程师") and not said.named_in("明天见")
    lines = [{"user_id": "10002", "user_name": "阿强", "content": "小明今天没来"},
             {"user_id": "10002", "user_name": "阿强", "content": "明天见"}]  # fmt: skip
    assert [line["content"] for line in said.kept(lines, "bot")] == ["明天见"]
    where = {"timestamp": 1.0, "platform": "qq", "chat_type": "group", "chat_id": "1001",
             "user_id": "10002", "user_name": "阿强", "context_user_id": "bot"}  # fmt: skip
    answered = EventRecord(id="e1", text="阿强说好的", context="小爱: 小明，我记得你", **where)
    assert said.answered_in(answered)
    assert not said.answered_in(EventRecord(id="e2", text="好", context="小爱: 明天见", **where))


def test_a_redelivered_message_gets_none_of_a_forgotten_persons_memory(
    settings: Settings,
) -> None:
    """The bot repeats what memory made of 阿强's words ("我爱甲乙丙社" -> "阿强爱甲乙丙社")
    to 小明; after forget, 小明's message delivered again (replay) returns no such answer."""
    session = open_session(settings)
    told = message("@bot 我爱甲乙丙社", **AQ, **BOT) | {"message_id": "aq-1"}
    asked = message("@bot 阿强爱什么", **XM, **BOT) | {"message_id": "xm-1"}
    replay(session, [told, {**asked, "timestamp": told["timestamp"] + 60}])
    thread = session.reply_graph().get_state(thread_config(G1.key, "bot")).values
    assert "阿强爱甲乙丙社" in thread["handled"]["xm-1"]["reply"]
    assert thread["handled"]["xm-1"]["memory_ids"]  # what the answer drew on

    cli(settings, "forget", "--user-id", "10002", "--yes", "--json")
    after = open_session(settings)
    again = reply_to(after.reply_graph(), after.deps, {**asked, "timestamp": told["timestamp"] + 60},
                     reply_context(after.deps))  # fmt: skip
    assert again["duplicate"] and "甲乙丙社" not in json.dumps(again, ensure_ascii=False)
    assert again["action"] == "no_reply"
