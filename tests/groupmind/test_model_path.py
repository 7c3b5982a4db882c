"""The `llm` variants over HTTP, through the real ``langchain-openai`` client, against an
OpenAI-compatible stand-in on 127.0.0.1 that behaves like the servers operators run into:
no JSON-schema support, HTTP 500s, junk, cut-off and slow answers, tool calls written as
text, tools ignored, an endpoint that is down. The replay goes on and every fallback is
labelled; structured output finds what the endpoint takes; usage is reported."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupmind.settings import Settings
from groupmind.wiring import build_runtime
from standins.model import Request, Script, StandIn, serve
from tests.graphs.helpers import job
from tests.graphs.reply_helpers import message
from tests.groupmind.test_cli import cli_on, lines, write_jsonl

LLM = ["--variant", "plan=llm", "--variant", "reply=llm"]
RULES_MEMORY = ["--variant", "rewrite=rules", "--variant", "merge_profile=rules"]


def latest(body: Request) -> str:
    """The newest chat message a request is about (after the context in the last turn)."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return str(users[0]["content"]).split("最新消息")[-1] if users else ""


@pytest.fixture
def standin() -> Iterator[StandIn]:
    with serve() as running:
        yield running


@pytest.fixture
def cli(tmp_path: Path, standin: StandIn, monkeypatch: pytest.MonkeyPatch) -> Any:
    return cli_on(tmp_path / "data", monkeypatch, chat_model="standin", chat_base_url=standin.url,
                  chat_api_key="standin", chat_max_retries="0", chat_timeout_s="1")  # fmt: skip


def said(text: str, n: int) -> dict[str, Any]:
    return message(text, message_id=f"x{n}", mentions=["bot"])


def test_every_model_failure_falls_back_and_the_replay_goes_on(
    cli: Any, standin: StandIn, tmp_path: Path
) -> None:
    faults = {"故障一": "http500", "故障二": "junk", "故障三": "cutoff", "故障四": "slow"}
    standin.script = Script(
        fault=lambda body: next((f for k, f in faults.items() if k in latest(body)), None),  # type: ignore[arg-type]
        slow_s=2.5,
        text=lambda body: "模型的回答",
    )
    rows = [said(f"@bot {word}", n) for n, word in enumerate([*faults, "正常"])]
    result = cli(
        "replay", str(write_jsonl(tmp_path / "m.jsonl", rows)), "--json", *LLM, *RULES_MEMORY
    )
    assert result.exit_code == 0, result.stdout
    out = {r["message_id"]: r for r in lines(result.stdout)}
    assert list(out) == ["x0", "x1", "x2", "x3", "x4"]  # every message, in order
    expected = {"x0": "http: HTTP 500", "x1": "parse: ", "x2": "length:",
                "x3": "timeout:"}  # fmt: skip
    for message_id, what in expected.items():
        r = out[message_id]
        assert r["action"] == "text_reply" and r["reply"].startswith("[离线规则回复]")
        assert [f["slot"] for f in r["fallback"]] == ["plan", "reply"]
        for fallback in r["fallback"]:
            assert f"model endpoint {standin.url}: {what}" in fallback["error"]
    assert out["x4"]["reply"] == "模型的回答" and "fallback" not in out["x4"]
    assert out["x4"]["usage"]["nodes"].keys() == {"plan", "reply"}
    # a time-out is waited out once per message: the reply did not ask again
    assert out["x3"]["fallback"][1]["error"].endswith("timeout: not asked again this message")
    assert sum("故障四" in latest(b) for b in standin.requests) == 1


def test_an_endpoint_that_is_down_is_named_and_the_rules_answer(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("GROUPMIND_CHAT_BASE_URL", f"http://127.0.0.1:{port}/v1")
    rows = [said("@bot 在吗", 1), said("@bot 还在吗", 2)]
    result = cli(
        "replay", str(write_jsonl(tmp_path / "m.jsonl", rows)), "--json", *LLM, *RULES_MEMORY
    )
    assert result.exit_code == 0, result.stdout
    for r in lines(result.stdout):
        assert r["action"] == "text_reply" and r["reply"].startswith("[离线规则回复]")
        plan, reply = r["fallback"]
        assert f"127.0.0.1:{port}/v1: connection: cannot connect" in plan["error"]
        assert reply["kind"] == "connection" and f"127.0.0.1:{port}/v1" in reply["error"]


def test_structured_output_falls_back_to_function_calling_and_remembers(
    cli: Any, standin: StandIn, tmp_path: Path
) -> None:
    standin.script = Script(
        json_schema=False,  # like llama-cpp-python's server: HTTP 500 for json_schema
        structured=lambda body: {"action": "text_reply", "reason": "被点名了"},
    )
    rows = [said("@bot 第一条", 1), said("@bot 第二条", 2)]
    result = cli(
        "replay", str(write_jsonl(tmp_path / "m.jsonl", rows)), "--json", *LLM, *RULES_MEMORY
    )
    assert result.exit_code == 0, result.stdout
    for r in lines(result.stdout):
        assert r["reason"].startswith("被点名了") and "fallback" not in r
    plans = [b for b in standin.requests if "response_format" in b or "tool_choice" in b
             and isinstance(b["tool_choice"], dict)]  # fmt: skip
    kinds = [b.get("response_format", {}).get("type", "function") for b in plans]
    assert kinds == ["json_schema", "function", "function"]  # the second plan starts there


def test_tool_calls_written_as_text_are_run_and_tools_may_be_ignored(
    cli: Any, standin: StandIn, tmp_path: Path
) -> None:
    call = {"name": "search_events", "args": {"query": "北京 出差"}}
    standin.script = Script(tools="text", tool_calls=lambda body: [call], text=lambda b: "查到了")
    rows = [said("@bot 我上次说去哪出差？", 1)]
    result = cli(
        "replay", str(write_jsonl(tmp_path / "m.jsonl", rows)), "--json", *LLM, *RULES_MEMORY
    )
    (r,) = lines(result.stdout)
    assert r["reply"] == "查到了" and "fallback" not in r
    assert [c["name"] for c in r["tool_calls"]] == ["search_events"]
    assert json.loads(r["tool_calls"][0]["result"])["results"] == []  # it ran, in this chat
    with_tools = [b for b in standin.requests if b.get("tools") and "tool_choice" in b]
    assert with_tools and all(b["tool_choice"] == "auto" for b in with_tools)

    standin.script = Script(tools="ignored", tool_calls=lambda body: [call], text=lambda b: "好呀")
    result = cli("replay", str(write_jsonl(tmp_path / "n.jsonl", [said("@bot 再问一次", 2)])),
                 "--json", *LLM, *RULES_MEMORY)  # fmt: skip
    (r,) = lines(result.stdout)
    assert r["reply"] == "好呀" and "tool_calls" not in r and "fallback" not in r


def test_usage_is_reported_per_node_summed_and_priced(
    tmp_path: Path, standin: StandIn, monkeypatch: pytest.MonkeyPatch, cli: Any
) -> None:
    monkeypatch.setenv("GROUPMIND_CHAT_PRICE_PROMPT_PER_1K", "0.5")
    monkeypatch.setenv("GROUPMIND_CHAT_PRICE_COMPLETION_PER_1K", "2")
    result = cli("replay", str(write_jsonl(tmp_path / "m.jsonl", [said("@bot 你好", 7)])),
                 "--json", *LLM, *RULES_MEMORY)  # fmt: skip
    (r,) = lines(result.stdout)
    # the stand-in reports 1 prompt and 1 completion token per call
    assert r["usage"]["nodes"] == {
        node: {"calls": 1, "prompt_tokens": 1, "completion_tokens": 1, "cost": 0.0025}
        for node in ("plan", "reply")
    }
    assert (r["usage"]["prompt_tokens"], r["usage"]["completion_tokens"]) == (2, 2)
    assert r["usage"]["cost"] == pytest.approx(0.005)
    runtime = build_runtime(Settings(data_dir=tmp_path / "data"))
    record = runtime.deps.context_usage.get(json.dumps(["qq:group:1001", "default", "x7"]))  # type: ignore[union-attr]
    assert record is not None and (record.prompt_tokens, record.completion_tokens) == (2, 2)
    assert record.cost == pytest.approx(0.005)


def test_memory_errors_name_the_endpoint_and_the_job_waits_for_a_retry(
    cli: Any, standin: StandIn, tmp_path: Path
) -> None:
    standin.script = Script(fault=lambda body: "http500")
    result = cli("remember", str(write_jsonl(tmp_path / "j.jsonl", [job("r1")])), "--json",
                 "--variant", "rewrite=llm")  # fmt: skip
    (r,) = lines(result.stdout)
    assert r["status"] == "failed" and "retry_at" in r
    assert f"model endpoint {standin.url}: http: HTTP 500" in r["error"]


def test_the_gate_rejects_junk_and_keeps_the_best_attempt(
    cli: Any, standin: StandIn, tmp_path: Path
) -> None:
    answers = iter(['{"action": "tex', "小明2026年11月25日要去北京出差，生日是11月23日"])
    standin.script = Script(text=lambda body: next(answers))
    one = job("r1", action_summary="")
    result = cli("remember", str(write_jsonl(tmp_path / "j.jsonl", [one])), "--json",
                 "--variant", "rewrite=llm", "--variant", "merge_profile=rules")  # fmt: skip
    (r,) = lines(result.stdout)
    assert (r["status"], r["attempts"]) == ("stored", 2)
    assert r["text"] == "小明2026年11月25日要去北京出差，生日是11月23日"
    retry = standin.requests[-1]["messages"][-1]["content"]
    assert "not prose: JSON" in retry  # the historian was told why


def test_variants_travel_with_the_job(cli: Any, standin: StandIn, tmp_path: Path) -> None:
    jobs = write_jsonl(tmp_path / "j.jsonl", [job("r1")])
    queued = cli("remember", str(jobs), "--json", "--queue-only", "--variant", "rewrite=rules",
                 "--variant", "merge_profile=rules")  # fmt: skip
    assert lines(queued.stdout) == [{"request_id": "r1", "status": "queued"}]
    # a worker with a model configured, whose own default would be llm, runs what was asked
    ran = cli("worker", "--once")
    (r,) = lines(ran.stdout)
    assert r["variants"]["rewrite"] == "rules" and r["variants"]["merge_profile"] == "rules"
    assert standin.requests == []  # the model was never asked
    bad = cli("replay", str(jobs), "--variant", "rewrite=gpt")
    assert bad.exit_code == 2 and "variants.rewrite: unknown variant 'gpt'" in bad.stderr
    bad = cli("worker", "--once", "--variant", "nope=llm")
    assert bad.exit_code == 2 and "variants.nope: no such slot" in bad.stderr


def test_the_model_is_told_the_personas_name_and_aliases(
    cli: Any, standin: StandIn, tmp_path: Path
) -> None:
    assert cli("persona", "set", "xiaoai", "--name", "小爱", "--alias", "爱爱",
               "--system-prompt", "你是技术群的助手。").exit_code == 0  # fmt: skip
    assert cli("persona", "use", "xiaoai").exit_code == 0
    rows = [message("爱爱，你好", message_id="p1")]  # no persona named, no @: the alias wakes it
    result = cli(
        "replay", str(write_jsonl(tmp_path / "m.jsonl", rows)), "--json", *LLM, *RULES_MEMORY
    )
    (r,) = lines(result.stdout)
    assert r["action"] == "text_reply" and r["reply"] == "好的"  # the stand-in's answer
    sent = ["\n".join(str(m.get("content")) for m in b["messages"]) for b in standin.requests]
    plan = next(b for b in sent if "决定这次的动作" in b)
    reply = next(b for b in sent if "你的名字是小爱" in b)
    assert "你是群聊里的 小爱" in plan and "最新消息是对你（小爱）说的" in plan
    assert "你是技术群的助手。" in reply and "用户叫你小爱、爱爱时" in reply
    assert not any("xiaoai" in b or "default" in b for b in sent)  # never the id
