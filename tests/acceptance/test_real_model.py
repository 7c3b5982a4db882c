"""Every `llm` variant against the real llama-server of `make model` (Qwen2.5-Coder-1.5B,
Q4_K_M, on the CPU): the whole path works (requests the server accepts, answers parsed,
tools executed, usage counted, failures labelled). A 1.5B model's judgement is not what
is tested here; its quality is measured by `make bench-model`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nodes.memory.judge import not_prose
from tests.graphs.helpers import job
from tests.graphs.reply_helpers import message
from tests.groupmind.test_cli import cli_on, lines, write_jsonl

pytestmark = [pytest.mark.model, pytest.mark.slow, pytest.mark.timeout(1200)]


@pytest.fixture
def cli(tmp_path: Path, llama_server: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    return cli_on(tmp_path / "data", monkeypatch, chat_model="qwen2.5-coder-1.5b-instruct",
                  chat_base_url=llama_server, chat_api_key="local", chat_timeout_s="180",
                  chat_max_tokens="1024", chat_temperature="0")  # fmt: skip


def test_memory_jobs_run_rewrite_and_merge_on_the_model(cli: Any, tmp_path: Path) -> None:
    jobs = [
        job("r1"),
        job("r2", action_summary="", new_info="我是做后端开发的，最近在学 Rust", user_id="10002",
            user_name="阿强"),
    ]  # fmt: skip
    result = cli("remember", str(write_jsonl(tmp_path / "j.jsonl", jobs)), "--json",
                 "--variant", "rewrite=llm", "--variant", "merge_profile=llm")  # fmt: skip
    out = {r["request_id"]: r for r in lines(result.stdout)}
    assert result.exit_code == 0, result.stdout
    for r in out.values():
        assert r["status"] in ("stored", "degraded") and r["text"]
        assert not_prose(r["text"]) is None  # junk is never what gets stored
        assert r["variants"]["rewrite"] == "llm" and r["variants"]["merge_profile"] == "llm"
        assert r["usage"]["nodes"]["rewrite"]["calls"] >= 1
        assert r["usage"]["nodes"]["rewrite"]["prompt_tokens"] > 100  # the server's own count
        assert r["usage"]["nodes"]["merge_profile"]["calls"] >= 1  # the merge asked the model
        # parsed and applied, or unparseable and skipped (the event stays): nothing else
        assert r["profile"] in ("updated", "duplicate") or r["profile"].startswith(
            "skipped: malformed"
        )
    profile = cli("profile", "10002", "--json")
    assert profile.exit_code == 0 and json.loads(profile.stdout)["user_id"] == "10002"


def test_a_replay_plans_replies_and_runs_a_tool_on_the_model(cli: Any, tmp_path: Path) -> None:
    remembered = job("seed", action_summary="", new_info="我下周三要去北京出差，顺便见见老同学")
    cli("remember", str(write_jsonl(tmp_path / "j.jsonl", [remembered])), "--variant",
        "rewrite=rules", "--variant", "merge_profile=rules")  # fmt: skip
    rows = [
        message("@bot 帮我查一下记忆：我之前说过要去哪里出差？", message_id="q1",
                mentions=["bot"]),
        message("@bot 你好呀，今天过得怎么样？", message_id="q2", mentions=["bot"],
                user_id="10002", user_name="阿强"),
    ]  # fmt: skip
    result = cli("replay", str(write_jsonl(tmp_path / "m.jsonl", rows)), "--json",
                 "--variant", "plan=llm", "--variant", "reply=llm", "--variant", "rewrite=rules",
                 "--variant", "merge_profile=rules")  # fmt: skip
    assert result.exit_code == 0, result.stdout
    out = {r["message_id"]: r for r in lines(result.stdout)}
    assert list(out) == ["q1", "q2"]
    for r in out.values():
        assert r["action"] in ("text_reply", "emoji_reply", "no_reply")
        assert r["usage"]["nodes"]["plan"]["calls"] >= 1  # the plan went to the model
        for fallback in r.get("fallback", []):  # a fallback names the slot and the endpoint
            assert fallback["slot"] in ("plan", "reply") and "model endpoint" in fallback["error"]
    calls = [c for r in out.values() for c in r.get("tool_calls", [])]
    assert calls, "the model called no tool"
    ran = [json.loads(c["result"]) for c in calls if c["result"]]
    assert ran and all("note" in r for r in ran)  # the tools executed, in this chat
    searched = [r for c, r in zip(calls, ran, strict=False) if c["name"] == "search_events"]
    assert any("北京" in hit["text"] for r in searched for hit in r.get("results", []))
