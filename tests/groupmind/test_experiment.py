"""The experiment's parts: arms from the command line, the dataset, the evaluators and
the paired statistics."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from langsmith.schemas import Example, Run

from groupmind.experiment.dataset import load_dataset
from groupmind.experiment.evaluators import context, decision, evaluators, gate, memory, profile
from groupmind.experiment.spec import ExperimentSpec, arm_settings, parse_arm
from groupmind.experiment.stats import paired
from groupmind.settings import Settings
from state.slots import SLOTS
from state.validation import InputError


def test_an_arm_names_variants_by_slot_and_settings_by_path() -> None:
    arm = parse_arm("wide:plan=llm,search.zh.dense=0.5,rank.threshold=0.2,auto_top_k=5", SLOTS)
    assert arm.variants == {"plan": "llm"}
    assert arm.settings == {"search": {"zh": {"dense": 0.5}}, "rank": {"threshold": 0.2},
                            "auto_top_k": 5}  # fmt: skip
    assert arm.label() == "plan=llm, auto_top_k=5, rank.threshold=0.2, search.zh.dense=0.5"
    assert parse_arm("base:", SLOTS).label() == "defaults"


@pytest.mark.parametrize(
    ("text", "says"),
    [("plan=llm", "expected NAME:"), ("a:plan", "not KEY=VALUE"), ("a b:plan=llm", "arm's name")],
)
def test_a_malformed_arm_is_refused_saying_why(text: str, says: str) -> None:
    with pytest.raises(InputError, match=says):
        parse_arm(text, SLOTS)


def test_an_arm_setting_that_is_no_setting_is_refused_by_name(tmp_path: Path) -> None:
    base = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    good = arm_settings(
        base,
        parse_arm("a:search.zh.dense=0.25,chat_states.willingness_chat=1", SLOTS),
        tmp_path / "a",
    )
    assert (good.search.zh.dense, good.search.zh.lexical) == (0.25, base.search.zh.lexical)
    assert good.chat_states.willingness_chat == 1.0 and good.data_dir == tmp_path / "a"
    with pytest.raises(InputError, match="'search.zh.dens' is neither a node slot nor a setting"):
        arm_settings(base, parse_arm("a:search.zh.dens=1", SLOTS), tmp_path / "b")
    with pytest.raises(InputError, match="arm a: chat_states.willingness_chat"):
        arm_settings(base, parse_arm("a:chat_states.willingness_chat=7", SLOTS), tmp_path / "c")


def test_a_baseline_must_be_an_arm(tmp_path: Path) -> None:
    spec = ExperimentSpec(dataset=tmp_path, arms=[parse_arm("a:", SLOTS)], baseline="b")
    with pytest.raises(InputError, match="'b' is none of the arms"):
        spec.baseline_arm  # noqa: B018


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines))
    return path


MESSAGE = {"message_id": "m1", "platform": "qq", "chat_type": "group", "chat_id": "1",
           "user_id": "u", "user_name": "U", "content": "hi", "timestamp": 1.7e9}  # fmt: skip
JOB = {"request_id": "r1", "action_summary": "", "new_info": "x", "user_id": "u",
       "user_name": "U", "chat_type": "group", "chat_id": "1", "timestamp": 1.7e9}  # fmt: skip


def test_a_dataset_takes_examples_and_bare_lines_with_ids_every_arm_shares(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.jsonl", [
        MESSAGE, JOB, {"inputs": {"question": {"text": "q"}}, "outputs": {"evidence_ids": ["r1"]}},
    ])  # fmt: skip
    one, two = load_dataset(path), load_dataset(path)
    assert [e.inputs for e in one.examples] == [{"message": MESSAGE}, {"job": JOB},
                                                {"question": {"text": "q"}}]  # fmt: skip
    assert [e.id for e in one.examples] == [e.id for e in two.examples]
    assert one.kinds() == {"message", "job", "question"}
    assert load_dataset(path, limit=2).examples[-1].inputs == {"job": JOB}


@pytest.mark.parametrize(
    ("line", "says"),
    [("{oops", "line 2: not valid JSON"), ({"inputs": {"a": 1}}, "line 2: inputs must hold"),
     ({"text": "x"}, "line 2: neither an example"), ([1], "line 2: must be a JSON object")],
)  # fmt: skip
def test_a_bad_dataset_line_is_named(tmp_path: Path, line: Any, says: str) -> None:
    with pytest.raises(InputError, match=says):
        load_dataset(_write(tmp_path / "d.jsonl", [MESSAGE, line]))


def _run(outputs: dict[str, Any]) -> Run:
    now = datetime.now(UTC)
    return Run(id=uuid.uuid4(), name="t", start_time=now, run_type="chain", inputs={},
               outputs=outputs, trace_id=uuid.uuid4())  # fmt: skip


def _example(outputs: dict[str, Any]) -> Example:
    return Example(id=uuid.uuid4(), dataset_id=uuid.uuid4(), inputs={}, outputs=outputs,
                   created_at=datetime.now(UTC))  # fmt: skip


def _scores(result: dict[str, Any]) -> dict[str, float]:
    return {r["key"]: r["score"] for r in result["results"]}


def test_context_is_scored_where_the_labelled_parent_landed() -> None:
    run = _run({"kind": "message", "ranked": [["a", 0.9], ["p", 0.5], ["b", 0.1]],
                "context_ids": ["p", "a"]})  # fmt: skip
    scores = _scores(context((1, 2))(run, _example({"reply_to": "p"})))
    assert scores == {"context_R@1": 0.0, "context_R@2": 1.0, "context_MRR": 0.5,
                      "parent_in_context": 1.0, "context_size": 2.0}  # fmt: skip
    assert _scores(context((1,))(run, _example({}))) == {}  # unlabelled: not scored
    unranked = _run({"kind": "message", "ranked": [], "context_ids": []})
    assert _scores(context((1,))(unranked, _example({"reply_to": "p"}))) == {}


def test_decision_memory_gate_and_profile_scores() -> None:
    said = _run({"kind": "message", "action": "emoji_reply"})
    assert _scores(decision(said, _example({"action": "text_reply"}))) == {
        "decision_agreement": 0.0, "reply_agreement": 1.0}  # fmt: skip
    assert _scores(decision(said, _example({"replied": False}))) == {"reply_agreement": 0.0}
    found = _run(
        {"kind": "question", "ids": ["x", "y", "z"], "texts": ["a", "小明下周三去北京", "c"]}
    )
    assert _scores(memory((1, 5))(found, _example({"evidence_texts": ["下周三"]}))) == {
        "memory_R@1": 0.0, "memory_R@5": 1.0, "memory_MRR": 0.5}  # fmt: skip
    assert _scores(memory((1,))(found, _example({"evidence_ids": ["x"]})))["memory_R@1"] == 1.0
    assert _scores(gate(_run({"kind": "job", "status": "degraded", "attempts": 2}), _example({}))) == {
        "gate_passed": 0.0, "degraded": 1.0, "job_failed": 0.0, "rewrites": 2.0}  # fmt: skip
    learned = _run({"kind": "profile", "facts": {"job": ["后端程序员"], "location": []}})
    labels = {"slots": {"job": "程序员", "location": "北京"}}
    assert _scores(profile(learned, _example(labels))) == {"profile_slot_recall": 0.5}


def test_a_user_evaluator_is_loaded_by_path_and_a_bad_name_refused(tmp_path: Path) -> None:
    (tmp_path / "mine.py").write_text("def shout(outputs, reference_outputs):\n    return 1\n")
    chosen = evaluators(["decision", f"{tmp_path / 'mine.py'}:shout"], (1,))
    assert chosen[0] is decision and chosen[1].__name__ == "shout"
    with pytest.raises(InputError, match="no_such_module"):
        evaluators(["no_such_module:fn"], (1,))
    with pytest.raises(InputError, match="expected a built-in name"):
        evaluators(["nonsense"], (1,))


def test_paired_bootstrap_says_better_worse_or_no_clear_difference() -> None:
    ids = [str(i) for i in range(60)]
    base = {i: float(n % 2) for n, i in enumerate(ids)}  # 0.5
    same = paired(base, dict(base), "mean", "higher")
    assert (same.diff, same.verdict) == (0.0, "no clear difference")
    up = {i: 1.0 for i in ids}
    better = paired(base, up, "mean", "higher")
    assert better.verdict == "better" and better.low > 0 and better.diff == pytest.approx(0.5)
    assert paired(base, up, "mean", "lower").verdict == "worse"  # less would have won
    slower = paired({i: 10.0 + n for n, i in enumerate(ids)}, {i: 30.0 + n for n, i in enumerate(ids)},
                    "p95", "lower")  # fmt: skip
    assert slower.verdict == "worse" and slower.diff == pytest.approx(20.0)
    assert paired(base, {"other": 1.0}, "mean", "higher").verdict == "not compared"
    # one example apart in sixty: the interval holds zero
    nudged = {**base, ids[0]: 1.0}
    assert paired(base, nudged, "mean", "higher").verdict == "no clear difference"


def test_the_readmes_labelled_demo_is_the_demo_chat() -> None:
    """examples/datasets/demo-labelled.jsonl (the plan comparison in
    docs/benchmarks/experiments.md) labels every message of the bundled demo chat, and only
    those."""
    from importlib.resources import files

    root = Path(__file__).resolve().parents[2]
    data = load_dataset(root / "examples" / "datasets" / "demo-labelled.jsonl")
    chat = Path(str(files("groupmind.demo_data"))) / "chat.jsonl"
    demo = [json.loads(x) for x in chat.read_text(encoding="utf-8").splitlines() if x.strip()]
    assert [e.inputs["message"] for e in data.examples] == demo
    labelled = [e for e in data.examples if "replied" in (e.outputs or {})]
    assert len(labelled) == len(demo) - 1  # the malformed line has no label
