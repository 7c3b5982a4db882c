"""``groupmind experiment`` and ``groupmind export`` end to end: real stores and graphs per
arm, LangSmith's ``evaluate`` (locally, and against a LangSmith stand-in on 127.0.0.1),
the model path against the OpenAI-compatible stand-in."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from standins import model as standin
from standins.langsmith import serve as langsmith
from tests.groupmind.test_cli import cli_on, lines, write_jsonl

DEMO = Path(str(files("groupmind.demo_data")))


def demo_messages() -> list[dict[str, Any]]:
    rows = [json.loads(x) for x in (DEMO / "chat.jsonl").read_text().splitlines()]
    return [r for r in rows if r["chat_type"] in ("group", "private")]


def context_dataset(path: Path) -> Path:
    """The demo chat, each quoted parent a label the ranker is not told."""
    examples = []
    for m in demo_messages():
        parent = m.pop("reply_to", None)
        examples.append(
            {"inputs": {"message": m}, "outputs": {"reply_to": parent} if parent else {}}
        )
    return write_jsonl(path, examples)


def report_of(result: Any) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    (report,) = lines(result.stdout)
    return report  # type: ignore[no-any-return]


def metric(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(row for row in report["metrics"] if row["metric"] == name)


def test_rank_arms_are_compared_on_the_labelled_parents(tmp_path: Path) -> None:
    cli = cli_on(tmp_path / "data")
    out = tmp_path / "out"
    result = cli("experiment", str(context_dataset(tmp_path / "d.jsonl")), "--mode", "rank",
                 "--arm", "weighted:rank_context=weighted", "--arm", "recent:rank_context=recent",
                 "--name", "ctx", "--out", str(out), "--json", "--bootstrap", "500")  # fmt: skip
    report = report_of(result)
    assert [a["name"] for a in report["arms"]] == ["weighted", "recent"]
    assert report["arms"][1]["variants"]["rank_context"] == "recent"
    r1 = metric(report, "context_R@1")
    assert r1["values"]["weighted"]["n"] == 2  # t2 -> t1, t3 -> t2
    assert r1["values"]["weighted"]["value"] == 1.0  # the author continues / replies
    assert set(r1["comparisons"]["recent"]) >= {"diff", "low", "high", "verdict", "n"}
    assert r1["comparisons"]["recent"]["n"] == 2
    size = metric(report, "context_size")
    assert size["better"] == "lower" and size["values"]["recent"]["value"] >= 1
    assert {p.name for p in out.iterdir()} >= {"report.json", "report.md", "report.svg",
                                              "examples-weighted.jsonl", "examples-recent.jsonl"}  # fmt: skip
    assert "context_R@1" in (out / "report.md").read_text()
    assert (out / "report.svg").read_text().startswith("<svg")
    rows = [json.loads(x) for x in (out / "examples-recent.jsonl").read_text().splitlines()]
    assert len(rows) == len(demo_messages()) and rows[1]["outputs"]["ranked"]


def test_memory_arms_ingest_then_answer_questions(tmp_path: Path) -> None:
    jobs = [json.loads(x) for x in (DEMO / "memory_jobs.jsonl").read_text().splitlines()]
    ask = {"chat_type": "group", "chat_id": "1001", "user_id": "10001", "user_name": "小明",
           "asked_at": "2026-11-20T12:00:00+08:00"}  # fmt: skip
    data = write_jsonl(tmp_path / "m.jsonl", [
        *({"inputs": {"job": j}} for j in jobs),
        {"inputs": {"question": {"text": "我什么时候去北京出差？", **ask}},
         "outputs": {"evidence_ids": ["demo-001"]}},
        {"inputs": {"question": {"text": "小明在哪家公司上班", **ask}},
         "outputs": {"evidence_texts": ["腾讯"]}},
        {"inputs": {"profile": {"user_id": "10001", "chat_type": "group", "chat_id": "1001"}},
         "outputs": {"slots": {"workplace": "腾讯"}}},
    ])  # fmt: skip
    cli = cli_on(tmp_path / "data")
    report = report_of(cli("experiment", str(data), "--arm", "hybrid:", "--arm",
                           "keywords:search.zh.dense=0", "--json", "--out", str(tmp_path / "o"),
                           "--bootstrap", "200"))  # fmt: skip
    assert metric(report, "memory_R@5")["values"]["hybrid"] == {
        **metric(report, "memory_R@5")["values"]["hybrid"],
        "value": 1.0,
        "n": 2,
    }
    gate = metric(report, "gate_passed")["values"]["hybrid"]
    assert gate["n"] == len(jobs) and gate["value"] > 0.5
    assert metric(report, "profile_slot_recall")["values"]["hybrid"]["value"] == 1.0
    assert report["arms"][1]["settings"] == {"search.zh.dense": 0}
    # two of the demo's jobs are bad on purpose: each an error of its own, the rest went on
    assert metric(report, "job_ms:p95")["values"]["keywords"]["n"] == len(jobs) - 2
    assert metric(report, "search_ms:p95")["values"]["keywords"]["n"] == 2  # one time per kind
    assert metric(report, "error")["values"]["keywords"]["value"] == pytest.approx(
        2 / (len(jobs) + 3)
    )


def test_arms_are_checked_before_any_runs(tmp_path: Path) -> None:
    cli = cli_on(tmp_path / "data")
    data = context_dataset(tmp_path / "d.jsonl")
    out = tmp_path / "out"
    bad = cli("experiment", str(data), "--arm", "ok:plan=rules", "--arm", "typo:plan=rulez",
              "--out", str(out))  # fmt: skip
    assert bad.exit_code == 2 and "arm typo: variants.plan: unknown variant 'rulez'" in bad.output
    assert not (out / "arms" / "ok").exists()  # the first arm never started
    model = cli("experiment", str(data), "--arm", "m:plan=llm", "--out", str(out))
    assert model.exit_code == 2 and "'llm' needs a chat model" in model.output
    setting = cli("experiment", str(data), "--arm", "s:rank.treshold=0.2", "--out", str(out))
    assert (
        setting.exit_code == 2
        and "'rank.treshold' is neither a node slot nor a setting" in setting.output
    )
    empty = cli("experiment", str(data))
    assert empty.exit_code == 2 and "at least one --arm" in empty.output


def test_a_spec_file_and_a_user_evaluator(tmp_path: Path) -> None:
    (tmp_path / "mine.py").write_text(
        "def long_reply(run, example):\n"
        "    return {'key': 'reply_chars', 'score': len((run.outputs or {}).get('reply') or '')}\n"
    )
    context_dataset(tmp_path / "d.jsonl")
    (tmp_path / "exp.toml").write_text(f"""
name = "spec"
dataset = "d.jsonl"
evaluators = ["decision", "{tmp_path / "mine.py"}:long_reply"]
bootstrap = 200
[arms.base]
variants = {{ plan = "rules" }}
[arms.eager]
settings = {{ chat_states = {{ willingness_chat = 1.0 }} }}
""")
    cli = cli_on(tmp_path / "data")
    report = report_of(cli("--data-dir", str(tmp_path / "data"), "experiment", "--spec",
                           str(tmp_path / "exp.toml"), "--json", "--out", str(tmp_path / "o")))  # fmt: skip
    assert report["name"] == "spec" and [a["name"] for a in report["arms"]] == ["base", "eager"]
    chars = metric(report, "reply_chars")
    assert chars["better"] == "higher" and chars["values"]["base"]["n"] == len(demo_messages())


def test_plan_llm_against_rules_through_the_model_stand_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The arm with a model asks the OpenAI-compatible stand-in for every plan it makes (it
    always says text_reply); the rules arm answers only when addressed."""
    labelled = []
    for m in demo_messages():
        addressed = (
            "@小爱" in m["content"] or m["chat_type"] == "private" or "bot" in m.get("mentions", [])
        )
        labelled.append({"inputs": {"message": m}, "outputs": {"replied": addressed}})
    data = write_jsonl(tmp_path / "d.jsonl", labelled)
    with standin.serve(
        standin.Script(structured=lambda body: {"action": "text_reply", "reason": "stand-in"})
    ) as model:
        cli = cli_on(tmp_path / "data", monkeypatch, chat_model="stand-in", chat_base_url=model.url,
                     chat_api_key="k")  # fmt: skip
        report = report_of(cli("experiment", str(data), "--arm", "rules:plan=rules,reply=rules",
                               "--arm", "llm:plan=llm,reply=rules", "--json", "--bootstrap", "200",
                               "--out", str(tmp_path / "o"), "--evaluator", "decision",
                               "--evaluator", "cost"))  # fmt: skip
        plans = [r for r in model.requests if "Plan" in json.dumps(r, ensure_ascii=False)]
    agreement = metric(report, "reply_agreement")
    assert agreement["values"]["rules"]["n"] == len(labelled)
    assert agreement["values"]["rules"]["value"] > agreement["values"]["llm"]["value"]
    assert agreement["comparisons"]["llm"]["diff"] < 0
    tokens = metric(report, "tokens")["values"]
    assert tokens["rules"]["value"] == 0 and tokens["llm"]["value"] > 0
    assert len(plans) >= 3  # the chats the model was asked about


def test_arms_are_experiments_on_one_uploaded_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = context_dataset(tmp_path / "d.jsonl")
    with langsmith() as ls:
        monkeypatch.setenv("LANGSMITH_ENDPOINT", ls.url)
        monkeypatch.setenv("LANGSMITH_API_KEY", "test-key")
        cli = cli_on(tmp_path / "data")
        args = ("experiment", str(data), "--mode", "rank", "--arm", "w:rank_context=weighted",
                "--arm", "r:rank_context=recent", "--json", "--bootstrap", "200",
                "--out", str(tmp_path / "o"))  # fmt: skip
        report = report_of(cli(*args))
        report_of(cli(*args))  # again: the dataset is found, not made twice
        assert ls.unknown == []
        (dataset,) = ls.datasets.values()
        assert len([e for e in ls.examples.values() if e["dataset_id"] == dataset["id"]]) == len(
            demo_messages()
        )
        experiments = ls.experiments()
        assert len(experiments) == 4 and {e["reference_dataset_id"] for e in experiments} == {
            dataset["id"]
        }
        names = {e["name"] for e in experiments}
        assert {a["experiment"] for a in report["arms"]} <= names
        arms = {e["extra"]["metadata"]["arm"]: e["extra"]["metadata"] for e in experiments}
        assert arms["r"]["variants"]["rank_context"] == "recent" and arms["r"]["mode"] == "rank"
        targets = [r for r in ls.roots("Target") if r.get("reference_example_id")]
        assert len(targets) == 4 * len(demo_messages())
        assert {ls.metadata(r)["arm"] for r in targets} == {"w", "r"}
        keys = {f["key"] for f in ls.feedback}
        assert {"context_R@1", "context_MRR", "reply_ms"} <= keys


def test_export_writes_a_chat_as_a_dataset_the_experiment_reads(tmp_path: Path) -> None:
    cli = cli_on(tmp_path / "data")
    chat = write_jsonl(tmp_path / "chat.jsonl", demo_messages())
    assert cli("replay", str(chat), "--json", "--wait-memory").exit_code == 0
    exported = tmp_path / "export.jsonl"
    done = cli("export", "--chat-type", "group", "--chat-id", "1001", "--out", str(exported),
               "--actions-from-bot")  # fmt: skip
    assert done.exit_code == 0, done.output
    rows = lines(exported.read_text())
    # the chat as its default persona saw it (t10 spoke to another persona: not its own)
    ours = [m for m in demo_messages() if m.get("chat_id") == "1001" and "persona_id" not in m]
    assert [r["inputs"]["message"]["message_id"] for r in rows] == [m["message_id"] for m in ours]
    by_id = {r["inputs"]["message"]["message_id"]: r for r in rows}
    assert (
        by_id["t2"]["outputs"]["reply_to"] == "t1"
        and "reply_to" not in by_id["t2"]["inputs"]["message"]
    )
    assert by_id["t8"]["outputs"]["action"] == "text_reply"  # @小爱 was answered
    assert by_id["t8"]["metadata"]["bot_action"] == "text_reply"
    assert all(not r["inputs"]["message"]["message_id"].endswith("#reply") for r in rows)
    kept = cli("export", "--chat-type", "group", "--chat-id", "1001", "--keep-reply-to")
    assert lines(kept.stdout)[1]["inputs"]["message"]["reply_to"] == "t1"
    report = report_of(cli("experiment", str(exported), "--arm", "a:", "--json", "--bootstrap",
                           "200", "--out", str(tmp_path / "o")))  # fmt: skip
    assert metric(report, "decision_agreement")["values"]["a"]["value"] == 1.0  # as deployed
    nothing = cli("export", "--chat-type", "group", "--chat-id", "9999")
    assert nothing.exit_code == 1
