"""Imports obey the input contract (docs/import.md): every text, time and id an import
writes goes through the validators messages and memory jobs go through; a refused record
is named with its field and the rest are imported; no file ends in a traceback (deep
nesting, a recursive view, bad bytes, a BOM); odd paths open the file they name."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.groupmind.test_cli import cli_on, lines
from tests.groupmind.test_import import search

OK = {"summary": "我给大家推荐了一本讲数据库的书", "timestamp": "2026-02-21T11:08:00+08:00",
      "request_type": "group", "group_id": "1001", "group_name": "测试群"}  # fmt: skip


def imported(cli: Any, *args: str) -> tuple[int, dict[str, Any]]:
    done = cli("import", *args, "--json")
    assert "Traceback" not in done.output, done.output
    return done.exit_code, (lines(done.stdout)[0] if done.stdout.strip() else {})


def errors(report: dict[str, Any]) -> dict[str, str]:
    return {e["record"]: e["field"] for e in report["errors"]}


def test_undefined_records_are_held_to_the_input_contract(tmp_path: Path) -> None:
    cli = cli_on(tmp_path / "data")
    records = [
        OK,
        {**OK, "summary": "长" * 300_000},  # far over the text limit
        {**OK, "summary": "有\x00空字符"},
        {**OK, "timestamp": "1899-12-31T00:00:00+08:00"},
        {**OK, "group_id": "9" * 300},
        {**OK, "summary": "群号前后有空格", "group_id": " 2002 "},
        {**OK, "summary": "平台不同", "platform": "qq:group:9999"},
    ]
    path = tmp_path / "end_summaries.json"
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    code, report = imported(cli, "undefined", str(path))
    assert code == 1 and report["added"] == {"events": 2}
    assert errors(report) == {"#1": "summary", "#2": "summary", "#3": "timestamp",
                              "#4": "group_id", "#6": "platform"}  # fmt: skip
    reasons = {e["record"]: e["error"] for e in report["errors"]}
    assert "over the limit of 4000" in reasons["#1"] and "1990 to 2200" in reasons["#3"]
    assert search(cli, "空格", "group", "2002")  # the id as input ids are: trimmed


def test_undefined_map_targets_are_ids_and_a_name_maps_once(tmp_path: Path) -> None:
    cli = cli_on(tmp_path / "data")
    records = [
        {"summary": "我讲了索引", "timestamp": "2026-02-21T11:08:00+08:00",
         "location": {"type": "group", "name": "测试群"}},
        {"summary": "我讲了事务", "timestamp": "2026-02-21T12:08:00+08:00",
         "location": {"type": "group", "name": "测试群"}, "request_type": "group",
         "group_id": "3003"},  # its own chat is not the one --map gives it
    ]  # fmt: skip
    path = tmp_path / "end_summaries.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(records, ensure_ascii=False).encode())  # a BOM
    code, report = imported(cli, "undefined", str(path), "--map", "测试群=group: 1001 ")
    assert code == 1 and report["added"] == {"events": 1} and errors(report) == {"#1": "group_id"}
    assert search(cli, "索引", "group", "1001")  # whitespace in the target: the same chat
    twice = cli("import", "undefined", str(path), "--map", "测试群=group:1001",
                "--map", "测试群=group:1002")  # fmt: skip
    assert twice.exit_code == 2 and "mapped twice" in twice.output


@pytest.mark.parametrize("kind", ["undefined", "mofox", "history"])
def test_json_nested_too_deep_is_refused_not_a_traceback(tmp_path: Path, kind: str) -> None:
    cli = cli_on(tmp_path / "data")
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    args = [kind, str(path)] + (["--chat", "group:1001"] if kind == "mofox" else [])
    done = cli("import", *args, "--json")
    assert "Traceback" not in done.output and done.exit_code in (1, 2), done.output
    assert "nested too deep" in done.output


def mofox_db(path: Path, rows: list[dict[str, Any]], *, view: bool = False) -> Path:
    with sqlite3.connect(path) as conn:
        columns = ["user_id", "user_name", "platform", "relationship_score", "impression_text",
                   "key_facts"]  # fmt: skip
        if view:  # a view over itself, as a hostile or broken file would hold
            conn.execute("CREATE VIEW user_relationships AS WITH RECURSIVE r(n) AS "
                         "(SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n AS user_id, "
                         "'x' AS user_name FROM r")  # fmt: skip
            return path
        conn.execute(f"CREATE TABLE user_relationships ({', '.join(columns)})")
        for row in rows:
            conn.execute(
                f"INSERT INTO user_relationships VALUES ({', '.join('?' * len(columns))})",
                [row.get(c) for c in columns],
            )
    return path


def test_mofox_rows_are_held_to_the_input_contract(tmp_path: Path) -> None:
    cli = cli_on(tmp_path / "data")
    rows = [
        {"user_id": "10001", "user_name": "小明", "relationship_score": 0.6,
         "impression_text": "小明是后端程序员。"},
        {"user_id": "10002", "user_name": "阿强", "platform": "qq:group:9999"},
        {"user_id": "10003", "user_name": "莉莉", "impression_text": "很长" * 2_500_000},
        {"user_id": "10004", "user_name": "莉莉", "relationship_score": "很高"},
        {"user_id": " 10005 ", "user_name": "小红", "platform": "discord"},  # not --chat's
    ]  # fmt: skip
    folder = tmp_path / "odd #1 ?x=1 %41"  # a path SQLite would read as a URI's parts
    folder.mkdir()
    db = mofox_db(folder / "MaiBot.db", rows)
    code, report = imported(cli, "mofox", str(db), "--chat", "group:1001")
    assert code == 1 and report["added"] == {"profiles": 1}
    assert errors(report) == {"#1 (user_id 10002)": "platform",
                              "#2 (user_id 10003)": "impression_text",
                              "#3 (user_id 10004)": "relationship_score",
                              "#4 (user_id  10005 )": "platform"}  # fmt: skip
    shown = cli("profile", "10001", "--json")
    assert shown.exit_code == 0 and "后端程序员" in shown.stdout
    assert cli("profile", "10002", "--json").exit_code in (0, 1)  # no traceback either way
    # --chat private: each person's own chat; the bad rows refused, nothing half written
    code, report = imported(cli, "mofox", str(db), "--chat", "private")
    assert code == 1 and "#1 (user_id 10002)" in errors(report)
    assert "#4 (user_id  10005 )" not in errors(report)  # its own platform: its private chat
    assert report["added"] == {"profiles": 2}
    moved = cli("profile", "10005", "--platform", "discord", "--json")
    assert moved.exit_code == 0 and "小红" in moved.stdout
    rows_file = tmp_path / "rows.jsonl"  # NUL survives JSON (SQLite's text ends at one)
    rows_file.write_text(json.dumps({"user_id": "10006", "user_name": "坏\x00名字"}) + "\n")
    code, report = imported(cli, "mofox", str(rows_file), "--chat", "group:1001")
    assert code == 1 and errors(report) == {"#0 (user_id 10006)": "user_name"}


def test_mofox_reads_only_a_table(tmp_path: Path) -> None:
    cli = cli_on(tmp_path / "data")
    db = mofox_db(tmp_path / "view.db", [], view=True)
    done = cli("import", "mofox", str(db), "--chat", "group:1001")
    assert done.exit_code == 2 and "a view, not a table" in done.output


def test_a_history_takes_each_line_on_its_own(tmp_path: Path) -> None:
    cli = cli_on(tmp_path / "data")
    said = [{"message_id": f"h{i}", "platform": "qq", "chat_type": "group", "chat_id": "1001",
             "user_id": "10001", "user_name": "小明", "content": f"第{i}条：我在学索引",
             "timestamp": 1_795_000_000 + 60 * i} for i in range(3)]  # fmt: skip
    body = [json.dumps(m, ensure_ascii=False).encode() for m in said]
    body.insert(1, b'{"message_id": "bad", "content": "\xff\xfe broken bytes"}')
    body.insert(2, b"[" * 50_000 + b"]" * 50_000)
    path = tmp_path / "history.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b"\n".join(body))
    code, report = imported(cli, "history", str(path), "--queue-only")
    assert code == 1 and report["added"]["messages"] == 3
    reasons = [e["error"] for e in report["errors"]]
    assert len(reasons) == 2 and "not UTF-8, line 2" in reasons[0]
    assert "nested too deep" in reasons[1]
