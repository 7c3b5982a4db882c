"""``groupmind import`` end to end on real stores: files written from the formats the seeds
and the systems' own code describe (Undefined's end_summaries.json, MoFox's
user_relationships, OneBot v11 message events); every import round-trips through search
and profile, in its scope only; a second run adds nothing; a killed run resumes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.groupmind.test_cli import cli_on, lines

SUMMARIES = [
    {"summary": "我帮你修好了服务器的 bug", "timestamp": "2026-02-20T21:00:00+08:00",
     "location": {"type": "private", "name": "小明"}},
    {"summary": "我在群里讲了 LangGraph 的检查点怎么用", "timestamp": "2026-02-21T11:08:00+08:00",
     "location": {"type": "group", "name": "Undefined 测试群"}},
    "我给大家推荐了一本讲数据库的书",  # the older format: a bare string, no chat, no time
    {"summary": "没有映射的群里的事", "timestamp": "2026-02-22T10:00:00+08:00",
     "location": {"type": "group", "name": "别的群"}},
    {"summary": "时间坏了", "timestamp": "昨天"},
    {"summary": "  ", "timestamp": "2026-02-22T10:00:00+08:00"},
]  # fmt: skip
MAPS = ["--map", "小明=private:42", "--map", "Undefined 测试群=group:1001", "--chat", "group:1002"]


def search(cli: Any, query: str, chat_type: str, chat_id: str) -> list[dict[str, Any]]:
    result = cli("search", query, "--chat-type", chat_type, "--chat-id", chat_id, "--json")
    assert result.exit_code == 0, result.output
    found: list[dict[str, Any]] = json.loads(result.stdout)
    return found


def test_undefined_summaries_become_memories_in_their_own_chats(tmp_path: Path) -> None:
    cli = cli_on(tmp_path / "data")
    path = tmp_path / "end_summaries.json"
    path.write_text(json.dumps(SUMMARIES, ensure_ascii=False), encoding="utf-8")

    dry = cli("import", "undefined", str(path), *MAPS, "--dry-run", "--json")
    assert lines(dry.stdout)[0]["would_add"] == {"events": 3}
    assert search(cli, "服务器", "private", "42") == []  # a dry run writes nothing

    first = cli("import", "undefined", str(path), *MAPS, "--json")
    assert first.exit_code == 1  # three records refused, the rest imported
    report = lines(first.stdout)[0]
    assert report["added"] == {"events": 3}
    assert {(e["record"], e["field"]) for e in report["errors"]} == {
        ("#3", "location.name"), ("#4", "timestamp"), ("#5", "summary")
    }  # fmt: skip

    private = search(cli, "服务器 bug", "private", "42")
    assert private and "修好了服务器" in private[0]["text"]
    assert "我" not in private[0]["text"] and "你" not in private[0]["text"]  # absolute form
    assert private[0]["metadata"]["user_id"] == "42"
    group = search(cli, "LangGraph 检查点", "group", "1001")
    assert [h["text"] for h in group] == [group[0]["text"]] and "LangGraph" in group[0]["text"]
    assert group[0]["metadata"]["timestamp"] == 1771643280.0  # the record's own time
    assert [h["text"] for h in search(cli, "数据库的书", "group", "1002")][0].endswith("数据库的书")
    for chat_type, chat_id in (("group", "1001"), ("group", "1002"), ("group", "9")):
        assert all("服务器" not in h["text"] for h in search(cli, "服务器 bug", chat_type, chat_id))

    # a second bot on the same data dir finds none of it
    other = cli("--bot", "bot-b", "search", "服务器 bug", "--chat-type", "private", "--chat-id",
                "42", "--json")  # fmt: skip
    assert other.exit_code == 0 and json.loads(other.stdout) == []

    again = lines(cli("import", "undefined", str(path), *MAPS, "--json").stdout)[0]
    assert again["added"] == {} and again["already"] == {"events": 3}


def test_an_import_killed_halfway_resumes_where_it_stopped(tmp_path: Path) -> None:
    data, path = tmp_path / "data", tmp_path / "end_summaries.json"
    records = [{"summary": f"我和大家聊了第{n}个话题：数据库索引", "timestamp": 1_771_000_000 + n,
                "location": {"type": "group", "name": "技术群"}} for n in range(400)]  # fmt: skip
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    args = ["--data-dir", str(data), "import", "undefined", str(path), "--map", "技术群=group:7"]
    cmd = [sys.executable, "-m", "groupmind.cli", *args, "--json"]
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stored = 0
    deadline = time.monotonic() + 120
    while stored < 40 and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.05)
        stored = count_events(data)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    at_kill = count_events(data)
    assert 40 <= at_kill < 400, at_kill  # really killed halfway

    cli = cli_on(data)
    report = lines(
        cli("import", "undefined", str(path), "--map", "技术群=group:7", "--json").stdout
    )[0]
    assert report["already"]["events"] >= at_kill and report["added"]["events"] > 0
    assert report["already"]["events"] + report["added"]["events"] == 400
    assert count_events(data) == 400  # each once, none lost
    assert search(cli, "第399个话题", "group", "7")


def count_events(data: Path) -> int:
    db = data / "groupmind.db"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return int(conn.execute("select count(*) from event_docs").fetchone()[0])
    except sqlite3.OperationalError:  # not migrated yet
        return 0


def mofox_db(path: Path) -> Path:
    """A MoFox database as seed 000 §2.1 and §5.1 extend it (``relationship_text`` kept
    from before the rename, as a database not yet migrated has it)."""
    with sqlite3.connect(path) as conn:
        conn.execute(
            "create table user_relationships (id integer primary key, user_id text, "
            "user_name text, user_aliases text, relationship_text text, impression_text text, "
            "preference_keywords text, relationship_score float, key_facts text, "
            "relationship_stage varchar(50), first_met_time float, "
            "last_impression_update float, last_updated float, created_at float)"
        )
        rows = [
            ("1708213363", "柒柒", "七七,柒", "", "柒柒是个典型的理科生，说话很有逻辑。", "咖啡,游戏",
             0.7, json.dumps([{"type": "job", "value": "游戏公司后端程序员"},
                              {"type": "pet", "value": "养了只橘猫叫橘子"}], ensure_ascii=False),
             "friend", 1_700_000_000.0, 1_760_000_000.0),
            ("2002", "阿强", "", "阿强喜欢爬山，周末常去香山。", None, None, 0.3, None,
             "acquaintance", 1_720_000_000.0, None),
            ("3003", "坏分数", "", "", "", "", 57, "[]", "friend", None, None),
            ("4004", "坏事实", "", "", "x", "", 0.5, "not json", "friend", None, None),
        ]  # fmt: skip
        conn.executemany(
            "insert into user_relationships (user_id, user_name, user_aliases, "
            "relationship_text, impression_text, preference_keywords, relationship_score, "
            "key_facts, relationship_stage, first_met_time, last_impression_update) "
            "values (?,?,?,?,?,?,?,?,?,?,?)",
            rows,
        )
    return path


def test_mofox_relationships_become_profiles_learned_in_the_stated_chat(tmp_path: Path) -> None:
    cli = cli_on(tmp_path / "data")
    db = mofox_db(tmp_path / "MaiBot.db")
    assert cli("import", "mofox", str(db), "--json").exit_code == 2  # no chat stated

    first = cli("import", "mofox", str(db), "--chat", "group:1001", "--json")
    assert first.exit_code == 1
    report = lines(first.stdout)[0]
    assert report["added"] == {"profiles": 2}
    assert {e["field"] for e in report["errors"]} == {"relationship_score", "key_facts"}

    qiqi = lines(cli("profile", "1708213363", "--json").stdout)[0]
    rel = qiqi["relationship"]
    assert (rel["relationship_score"], rel["relationship_stage"]) == (0.7, "friend")
    assert rel["aliases"] == ["七七", "柒"] and rel["first_met_time"] == 1_700_000_000.0
    [learned] = qiqi["learned"]
    assert learned["learned_in"] == "qq:group:1001"
    assert learned["impression_text"] == "柒柒是个典型的理科生，说话很有逻辑。"
    assert learned["traits"]["imported"]["from"] == "mofox user_relationships"
    assert {(f["type"], f["value"], f["by"]) for f in learned["key_facts"]} == {
        ("job", "游戏公司后端程序员", "imported"), ("pet", "养了只橘猫叫橘子", "imported")
    }  # fmt: skip
    assert learned["preference_keywords"] == ["咖啡", "游戏"]
    qiang = lines(cli("profile", "2002", "--json").stdout)[0]["learned"][0]
    assert qiang["impression_text"] == "阿强喜欢爬山，周末常去香山。"  # relationship_text

    # what another chat sees under the default sharing policy: none of it
    other = cli("profile", "1708213363", "--chat-type", "group", "--chat-id", "1002", "--json")
    assert lines(other.stdout)[0]["learned"] == []

    again = lines(cli("import", "mofox", str(db), "--chat", "group:1001", "--json").stdout)[0]
    assert again["added"] == {} and again["already"] == {"profiles": 2}


def test_mofox_rows_as_json_lines_go_to_each_persons_private_chat(tmp_path: Path) -> None:
    cli = cli_on(tmp_path / "data")
    path = tmp_path / "rel.jsonl"
    path.write_text(
        json.dumps({"user_id": "5", "user_name": "莉莉", "impression_text": "莉莉很会做饭。",
                    "relationship_score": 0.5, "user_aliases": ["莉"]}, ensure_ascii=False)
        + "\n{broken\n",
        encoding="utf-8",
    )  # fmt: skip
    report = lines(cli("import", "mofox", str(path), "--chat", "private", "--json").stdout)[0]
    assert report["added"] == {"profiles": 1}
    [error] = report["errors"]
    assert (error["record"], error["field"]) == ("#1", "row") and error["error"].startswith(
        "not JSON"
    )
    learned = lines(cli("profile", "5", "--json").stdout)[0]["learned"]
    assert [(x["learned_in"], x["impression_text"]) for x in learned] == [
        ("qq:private:5", "莉莉很会做饭。")
    ]


def onebot(
    message_id: int, user_id: int, name: str, text: str, t: int, **kw: Any
) -> dict[str, Any]:
    return {"post_type": "message", "message_type": "group", "group_id": 1001, "self_id": 999,
            "message_id": message_id, "user_id": user_id, "time": t,
            "sender": {"user_id": user_id, "nickname": name, "card": ""},
            "message": [{"type": "text", "data": {"text": text}}], **kw}  # fmt: skip


def test_a_onebot_history_becomes_messages_and_memories(tmp_path: Path) -> None:
    cli = cli_on(tmp_path / "data")
    t = 1_771_000_000
    events = [
        onebot(1, 111, "小明", "我下周去杭州出差", t),
        onebot(2, 222, "阿强", "杭州最近挺冷的", t + 5),
        onebot(3, 999, "小爱", "出差顺利！", t + 9),  # the bot's own line
        onebot(4, 111, "小明", "我养的橘猫叫橘子", t + 20),
        {
            "post_type": "message",
            "message_type": "group",
            "group_id": 1001,
            "self_id": 999,
            "time": t,
        },
    ]
    path = tmp_path / "history.json"
    path.write_text(json.dumps({"status": "ok", "retcode": 0, "data": {"messages": events}},
                               ensure_ascii=False), encoding="utf-8")  # fmt: skip

    first = cli("import", "history", str(path), "--json")
    assert first.exit_code == 1, first.output
    report = lines(first.stdout)[0]
    assert report["added"] == {"messages": 4, "jobs": 2}  # one job per person who spoke
    assert [(e["record"], e["field"]) for e in report["errors"]] == [("#4", "message_id")]
    assert report["jobs_run"] == {"stored": 2}
    found = search(cli, "小明 出差", "group", "1001")
    assert any("杭州" in h["text"] and h["metadata"]["user_id"] == "111" for h in found)
    assert search(cli, "杭州", "group", "1002") == []
    [chat] = lines(cli("chats", "--json").stdout)
    # the users' three (the bot's own line is stored as the bot's), no job left waiting
    assert (chat["stream"], chat["messages"], chat["jobs_waiting"]) == ("qq:group:1001", 3, 0)

    again = lines(cli("import", "history", str(path), "--json").stdout)[0]
    assert again["added"] == {} and again["already"] == {"messages": 4, "jobs": 2}
    assert "jobs_run" not in again  # nothing left to run


def test_a_history_of_input_messages_queued_for_a_worker(tmp_path: Path) -> None:
    cli = cli_on(tmp_path / "data")
    path = tmp_path / "history.jsonl"
    rows = [{"message_id": f"m{n}", "platform": "qq", "chat_type": "private", "chat_id": "42",
             "user_id": "42", "user_name": "小明", "content": f"我第{n}次说我喜欢爬山",
             "timestamp": 1_771_000_000 + n} for n in range(3)]  # fmt: skip
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    report = lines(cli("import", "history", str(path), "--queue-only", "--json").stdout)[0]
    assert report["added"] == {"messages": 3, "jobs": 1}
    jobs = lines(cli("jobs", "--json").stdout)
    assert [j["status"] for j in jobs if j.get("request_id")] == ["queued"]
