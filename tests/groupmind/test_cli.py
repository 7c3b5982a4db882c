"""The command line, end to end on real stores (in-process)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from groupmind.cli import app
from tests.graphs.helpers import job


def cli_on(data: Path, monkeypatch: pytest.MonkeyPatch | None = None, **settings: str) -> Any:
    """The CLI on a data dir, with ``GROUPMIND_*`` settings (``chat_model="x"``) set."""
    for key, value in settings.items():
        assert monkeypatch is not None
        monkeypatch.setenv(f"GROUPMIND_{key.upper()}", value)
    runner = CliRunner()

    def invoke(*args: str) -> Any:
        return runner.invoke(app, ["--data-dir", str(data), *args])

    return invoke


@pytest.fixture
def cli(tmp_path: Path) -> Any:
    return cli_on(tmp_path / "data")


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows),
        encoding="utf-8",
    )
    return path


def lines(output: str) -> list[Any]:
    return [json.loads(line) for line in output.splitlines() if line.strip()]


def test_remember_reports_each_job_and_goes_on_past_bad_ones(cli: Any, tmp_path: Path) -> None:
    missing = {k: v for k, v in job("r3").items() if k != "user_name"}
    jobs = write_jsonl(
        tmp_path / "jobs.jsonl",
        [
            job("r1"),
            job("r2", action_summary="", new_info="他说了", chat_id="1003"),  # nobody before
            missing,
            "{not json",
            job("r4", chat_type="dm"),
        ],
    )
    result = cli("remember", str(jobs), "--json")
    assert result.exit_code == 1  # some jobs failed
    out = {r.get("request_id", "?"): r for r in lines(result.stdout)}
    assert out["r1"]["status"] == "stored" and out["r1"]["attempts"] == 1
    assert out["r2"]["status"] == "degraded" and out["r2"]["text"] == "他说了"
    assert out["r3"] == {
        "request_id": "r3",
        "status": "failed",
        "error": "line 3: job: user_name: missing (required)",
    }
    assert out["?"]["error"].startswith("line 4: not valid JSON (")
    assert "chat_type: unknown chat type 'dm'" in out["r4"]["error"]


def test_search_is_scoped_and_json_shaped(cli: Any, tmp_path: Path) -> None:
    jobs = [job("a"), job("b", chat_id="2002", chat_name="猫咪群")]
    cli("remember", str(write_jsonl(tmp_path / "j.jsonl", jobs)))
    result = cli("search", "北京出差", "--chat-type", "group", "--chat-id", "1001", "--json")
    assert result.exit_code == 0, result.stdout
    hits = json.loads(result.stdout)
    assert [h["id"] for h in hits] == ["a"]
    assert set(hits[0]) == {"id", "text", "score", "metadata"}
    assert hits[0]["metadata"]["chat_id"] == "1001"


def test_search_requires_the_scope(cli: Any) -> None:
    result = cli("search", "北京", "--chat-type", "group")
    assert result.exit_code == 2
    assert "chat_id: missing (required)" in result.stderr


def test_search_batch_prints_one_list_per_line(cli: Any, tmp_path: Path) -> None:
    cli("remember", str(write_jsonl(tmp_path / "j.jsonl", [job("a")])))
    queries = write_jsonl(
        tmp_path / "q.jsonl",
        [
            {"query": "北京", "chat_type": "group", "chat_id": "1001", "top_k": 3},
            {"query": "北京", "chat_type": "group", "chat_id": "9999"},
            {"query": "北京", "chat_type": "group", "chat_id": "1001", "from": "not a time"},
            "{not json",
        ],
    )
    result = cli("search", "--batch", str(queries))
    assert result.exit_code == 1  # after every line: two were refused
    first, second, third, fourth = lines(result.stdout)
    assert [h["id"] for h in first] == ["a"]
    assert second == []
    assert third["error"].startswith("line 3: search: from: unparseable timestamp")
    assert fourth == {
        "error": "line 4: not valid JSON (Expecting property name enclosed in double quotes, column 2)"
    }


def test_profile_json_with_provenance_and_per_chat_views(cli: Any, tmp_path: Path) -> None:
    dm = job("b", chat_type="private", chat_id="10001", action_summary="", new_info="我住在杭州")
    cli("remember", str(write_jsonl(tmp_path / "j.jsonl", [job("a"), dm])))
    data = json.loads(cli("profile", "10001", "--json").stdout)
    assert data["relationship"]["relationship_stage"] == "stranger"
    assert "key_facts" not in data["relationship"]  # the relationship carries no content
    facts = {lp["learned_in"]: [f"{f['type']}={f['value']}@{f['source']}" for f in lp["key_facts"]]
             for lp in data["learned"]}  # fmt: skip
    assert facts == {  # each fact with the message it came from
        "qq:group:1001": ["birthday=11月23日@a"],
        "qq:private:10001": ["location=杭州@b"],
    }
    group_view = cli("profile", "10001", "--chat-type", "group", "--chat-id", "1001", "--json")
    seen = json.loads(group_view.stdout)
    assert seen["shown_in"] == "qq:group:1001" and seen["sharing"] == "chat"
    assert [(f["type"], f["value"]) for f in seen["key_facts"]] == [("birthday", "11月23日")]
    plain = cli("profile", "10001", "--chat-type", "group", "--chat-id", "1001")
    assert "11月23日" in plain.stdout and "杭州" not in plain.stdout
    lark = cli("profile", "10001", "--platform", "lark", "--json")
    assert lark.exit_code == 1  # the same id on another platform is someone else
    missing = cli("profile", "nobody", "--json")
    assert missing.exit_code == 1 and "no profile stored" in missing.stdout


def test_worker_once_drains_the_queue(cli: Any, tmp_path: Path) -> None:
    from groupmind.session import open_session
    from groupmind.settings import Settings

    session = open_session(Settings(data_dir=tmp_path / "data"))
    session.worker.submit(job("queued-1"))
    result = cli("worker", "--once")
    assert result.exit_code == 0
    assert lines(result.stdout)[0]["request_id"] == "queued-1"
    assert session.jobs.get("queued-1").status == "done"  # type: ignore[union-attr]


@pytest.mark.slow
def test_demo_runs_and_shows_the_memory_at_work(cli: Any) -> None:
    result = cli("demo")
    assert result.exit_code == 0, result.stdout
    out = result.stdout
    for expected in (
        "chat is ABSENT and nobody addressed the bot",
        "wakes the ABSENT chat",
        "CHAT → FOCUSED",
        "我记得：大家早，小明2026年11月25日要去北京出差",  # day 3 recalls day 1
        "阿强想给小明准备礼物",  # 他 is the person named before it
        "rejected",
        "chat_type: unknown chat type",
        '关于"小明"',
        "persona xiaoai: 小爱 (also 爱爱)",  # the configured persona, by name
        "谢谢小爱一直听小明说",  # memories name the persona, never its id
    ):
        assert expected in out, expected
    alias = out[out.index("爱爱，小明的生日是哪天") :].splitlines()[1]
    assert "text_reply" in alias and "mentioned" in alias  # an alias wakes the bot
    isolation = out[out.index("2 · isolation") :]
    cat_group = next(
        line for line in isolation.splitlines() if line.strip().startswith("猫咪爱好者")
    )
    assert "(group 1001" not in cat_group


def test_remember_the_bundled_example_jobs(cli: Any) -> None:
    from importlib.resources import files

    path = files("groupmind.demo_data").joinpath("memory_jobs.jsonl")
    result = cli("remember", str(path), "--json")
    statuses = [r["status"] for r in lines(result.stdout)]
    assert statuses.count("stored") >= 6 and statuses.count("failed") == 2  # two bad lines


def test_replay_prints_one_object_per_message(cli: Any, tmp_path: Path) -> None:
    from tests.graphs.reply_helpers import message

    msgs = [
        message("大家好"),
        message("@bot 在吗", mentions=["bot"]),
        {**message("x"), "chat_type": "dm"},
    ]
    result = cli("replay", str(write_jsonl(tmp_path / "m.jsonl", msgs)), "--json", "--wait-memory")
    quiet, answered, bad = lines(result.stdout)
    assert set(quiet) >= {
        "message_id",
        "action",
        "reason",
        "chat_state",
        "context_ids",
        "memory_ids",
        "reply",
    }
    assert quiet["action"] == "no_reply" and answered["action"] == "text_reply"
    assert answered["context_ids"] == [quiet["message_id"]]
    assert (
        bad["message_id"] == msgs[2]["message_id"]
        and "chat_type: unknown chat type 'dm'" in bad["error"]
    )
    assert result.exit_code == 1


def test_rank_prints_context_and_every_candidate(cli: Any, tmp_path: Path) -> None:
    from tests.graphs.reply_helpers import message

    a = message("我的硬盘挂载失败了", user_id="u1", user_name="alice")
    b = message("alice: 你用的什么文件系统", user_id="u2", user_name="bob")
    c = message("bob: ext4，挂载时报错", user_id="u1", user_name="alice")
    result = cli("rank", str(write_jsonl(tmp_path / "r.jsonl", [a, b, c])), "--json")
    first, second, third = lines(result.stdout)
    assert first["ranked"] == [] and second["ranked"][0][0] == a["message_id"]
    assert [i for i, _ in third["ranked"]][0] == b["message_id"]  # alice answers bob
    assert third["context_ids"] == sorted(
        third["context_ids"], key=[a["message_id"], b["message_id"]].index
    )


def test_operator_views_chats_and_jobs(cli: Any, tmp_path: Path) -> None:
    from tests.graphs.reply_helpers import message

    msgs = [
        message("@bot 我下周去北京", mentions=["bot"], message_id="v1"),
        message("在吗", chat_type="private", chat_id=None, user_id="20001", user_name="小红",
                message_id="v2"),
    ]  # fmt: skip
    assert (
        cli("replay", str(write_jsonl(tmp_path / "m.jsonl", msgs)), "--wait-memory").exit_code == 0
    )
    chats = {c["stream"]: c for c in lines(cli("chats", "--json").stdout)}
    group, dm = chats["qq:group:1001"], chats["qq:private:20001"]
    assert (group["state"], group["persona_id"], group["messages"]) == ("CHAT", "default", 1)
    assert group["memories"] == {"default": 1} and group["jobs_waiting"] == 0
    assert group["name"] == "技术交流群" and dm["memories"] == {"default": 1}
    jobs = lines(cli("jobs", "--json").stdout)
    assert {j["status"] for j in jobs} == {"done"}
    one = jobs[0]
    assert one["variants"]["rewrite"] == "rules" and one["payload"]["new_info_by"] == "user"
    assert one["result"]["status"] in ("stored", "degraded") and one["error"] is None


@pytest.mark.slow
def test_a_mistyped_option_or_an_abort_ends_in_one_line_through_the_entry_point(
    tmp_path: Path,
) -> None:
    """The installed command (not CliRunner): a usage error exits 2 with click's message, a
    declined confirmation 1 with "Aborted.", never a traceback."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "GROUPMIND_DATA_DIR": str(tmp_path / "data")}

    def groupmind(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "groupmind.cli", *args], env=env,
                              capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)  # fmt: skip

    typo = groupmind("jobs", "--bogus")
    assert typo.returncode == 2 and "No such option: --bogus" in typo.stderr
    declined = groupmind("forget", "--user-id", "u")  # no --yes, nobody to answer
    assert declined.returncode == 1 and declined.stderr.strip().endswith("Aborted.")
    for run in (typo, declined):
        assert "Traceback" not in run.stderr and "╭" not in run.stderr


def test_storage_errors_are_one_line_and_never_carry_what_was_said(tmp_path: Path) -> None:
    """A read-only database (SQLite refuses writes whoever asks): replay refuses the line,
    forget stops, search still reads; each says what failed in one line, with no content."""
    import os
    import subprocess
    import sys

    data = tmp_path / "data"
    said = [{"message_id": "a1", "platform": "qq", "chat_type": "group", "chat_id": "1",
             "user_id": "u", "user_name": "小明", "content": "@bot 我的暗号是 SECRET99",
             "timestamp": 1795000000, "mentions": ["bot"]}]  # fmt: skip
    assert cli_on(data)("replay", str(write_jsonl(tmp_path / "a.jsonl", said))).exit_code == 0
    env = {**os.environ, "GROUPMIND_DATA_DIR": str(data),
           "GROUPMIND_SQL_URL": f"sqlite:///file:{data / 'groupmind.db'}?mode=ro&uri=true"}  # fmt: skip
    later = [{**said[0], "message_id": "a2", "content": "@bot 新的暗号 SECRET77"}]

    def groupmind(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "groupmind.cli", *args], env=env,
                              capture_output=True, text=True, timeout=120)  # fmt: skip

    replayed = groupmind("replay", str(write_jsonl(tmp_path / "b.jsonl", later)), "--json")
    assert replayed.returncode == 1
    (out,) = lines(replayed.stdout)
    assert out == {"message_id": "a2", "error": "line 1: SQL database: OperationalError: "
                                                "attempt to write a readonly database"}  # fmt: skip
    erased = groupmind("forget", "--user-id", "u", "--yes")
    assert erased.returncode == 1 and "Traceback" not in erased.stderr
    assert erased.stderr.strip().endswith("SQL database: OperationalError: attempt to write a "
                                          "readonly database")  # fmt: skip
    found = groupmind("search", "暗号", "--chat-type", "group", "--chat-id", "1", "--json")
    assert found.returncode == 0 and "SECRET99" in found.stdout  # reading still works
    for run in (replayed, erased):
        assert "SECRET" not in run.stdout + run.stderr and "INSERT" not in run.stderr
