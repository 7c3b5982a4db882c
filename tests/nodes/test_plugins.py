"""Variants as plugins: what the registry refuses at registration and why, what a run
refuses a plugin's variant to return, discovery through a real entry point (a package
on the path of a child process), and the worked example (examples/rank-keywords)
installed in the dev environment and compared in an experiment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from groupmind.testing import ContractError, check_variant, installed, sample_messages
from nodes.deps import Deps
from nodes.variants import UnknownVariant, VariantRefused, builtin_registry, output_problems
from state.context import Context
from state.memory import MemoryState
from state.reply import ReplyState
from state.slots import SLOTS, PlanWrites, RankContextWrites
from tests.groupmind.test_cli import write_jsonl
from tests.groupmind.test_experiment_cli import context_dataset, metric

GROUPMIND = str(Path(sys.executable).parent / "groupmind")


def good(state: ReplyState, ctx: Context, deps: Deps) -> RankContextWrites:
    return {"context_ids": [], "ranked": [], "context_fallback": ""}


def untyped(state, ctx, deps):  # type: ignore[no-untyped-def]
    return {}


def wrong_return(state: ReplyState, ctx: Context, deps: Deps) -> PlanWrites:
    return {}


def wrong_state(state: MemoryState, ctx: Context, deps: Deps) -> RankContextWrites:
    return {}


def two_args(state: ReplyState, ctx: Context) -> RankContextWrites:
    return {}


async def asynchronous(state: ReplyState, ctx: Context, deps: Deps) -> RankContextWrites:
    return {}


@pytest.mark.parametrize(
    ("slot", "name", "fn", "says"),
    [
        ("rank", "x", good, "'rank' is no slot"),
        ("rank_context", "a b", good, "'a b' is not a variant name"),
        ("rank_context", "weighted", good, "'weighted' is taken (by groupmind)"),
        ("rank_context", "x", untyped, "declare its return type: -> RankContextWrites"),
        ("rank_context", "x", wrong_return, "returns PlanWrites, not RankContextWrites"),
        ("rank_context", "x", wrong_state, "reads MemoryState, not ReplyState"),
        ("rank_context", "x", two_args, "must take (state, ctx, deps)"),
        ("rank_context", "x", asynchronous, "is async, but the reply graph runs rank_context"),
    ],
)
def test_a_variant_that_breaks_its_slots_contract_is_refused_saying_why(
    slot: str, name: str, fn: Any, says: str
) -> None:
    reg = builtin_registry()
    with pytest.raises(VariantRefused, match=says.replace("(", r"\(").replace(")", r"\)")):
        reg.add(slot, name, fn, "a-plugin")
    reg.add("rank_context", "mine", good, "a-plugin")
    assert reg.sources["rank_context", "mine"] == "a-plugin"


@pytest.mark.parametrize("slot", list(SLOTS))
def test_every_slots_contract_can_check_what_a_variant_returns(slot: str) -> None:
    """A plugin may fill any slot: its contract builds a validator, which takes an empty
    result and names a key the slot does not write."""
    assert output_problems(SLOTS[slot], {}) == []
    assert output_problems(SLOTS[slot], {"no_such_key": 1}) == [
        f"wrote 'no_such_key', not keys of {SLOTS[slot].writes.__name__}"
    ]


def test_a_refused_variant_is_named_with_its_reason_when_asked_for() -> None:
    reg = builtin_registry()
    reg.plugin("p = pkg:VARIANTS", {"rank_context": {"bad": wrong_return, "ok": good}})
    reg.check({"rank_context": "ok"}, has_model=False)  # the plugin's good variant counts
    with pytest.raises(UnknownVariant, match=r"'bad' was refused: p = pkg:VARIANTS: .*PlanWrites"):
        reg.check({"rank_context": "bad"}, has_model=False)
    with pytest.raises(UnknownVariant, match="variants.plan: 'llm' needs a chat model"):
        reg.check({"plan": "llm"}, has_model=False)
    reg.plugin("q = pkg:NOTHING", [1, 2])
    assert "not a mapping" in reg.refused["q = pkg:NOTHING"]


def test_the_kit_catches_what_a_variant_returns_on_real_states(tmp_path: Path) -> None:
    def extra_key(state: ReplyState, ctx: Context, deps: Deps) -> RankContextWrites:
        return {"context_ids": [], "reply": "hi"}  # type: ignore[typeddict-unknown-key]

    def bad_value(state: ReplyState, ctx: Context, deps: Deps) -> RankContextWrites:
        return {"context_ids": "s1"}  # type: ignore[typeddict-item]

    with pytest.raises(
        ContractError, match="on state 1 of .*'reply', not keys of RankContextWrites"
    ):
        check_variant("rank_context", extra_key, data_dir=tmp_path / "a")
    with pytest.raises(ContractError, match="context_ids: Input should be a valid list"):
        check_variant("rank_context", bad_value, data_dir=tmp_path / "b")
    outputs = check_variant("rank_context", good, data_dir=tmp_path / "c")
    # the runs that reached rank_context: a quiet chat ranks only what addresses the bot
    assert len(outputs) == sum("bot" in m.get("mentions", []) for m in sample_messages()) == 2


PLUGIN = """
from nodes.deps import Deps
from state.context import Context
from state.reply import ReplyState
from state.slots import SLOTS, PlanWrites, RankContextWrites


def lies(state: ReplyState, ctx: Context, deps: Deps) -> RankContextWrites:
    return {"context_ids": [], "ranked": [], "plan": "text_reply"}


def mistyped(state: ReplyState, ctx: Context, deps: Deps) -> PlanWrites:
    return {}


VARIANTS = {"rank_context": {"lies": lies, "mistyped": mistyped}}
"""


def installed_plugin(root: Path) -> dict[str, str]:
    """A package with an entry point in ``groupmind.variants``, as pip would lay it out."""
    root.mkdir()
    (root / "gm_plugin.py").write_text(PLUGIN)
    info = root / "gm_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gm-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[groupmind.variants]\nmine = gm_plugin:VARIANTS\n")
    return {**os.environ, "PYTHONPATH": str(root)}


def test_a_plugin_is_found_by_its_entry_point_and_held_to_its_contract(tmp_path: Path) -> None:
    env = installed_plugin(tmp_path / "site")
    chat = write_jsonl(tmp_path / "chat.jsonl", sample_messages())

    def rank(variant: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [GROUPMIND, "--data-dir", str(tmp_path / variant), "rank", str(chat), "--json",
             "--variant", f"rank_context={variant}"],
            capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip

    refused = rank("mistyped")  # refused at start, naming the slot, the plugin and why
    assert refused.returncode == 2, refused.stderr
    assert "variants.rank_context: 'mistyped' was refused: mine = gm_plugin:VARIANTS" in (
        refused.stderr.replace("\n", "")
    )
    assert "returns PlanWrites, not RankContextWrites" in refused.stderr.replace("\n", "")
    lying = rank("lies")  # registered (its declared type is right), caught on what it returns
    rows = [json.loads(x) for x in lying.stdout.splitlines()]
    assert lying.returncode == 1 and len(rows) == len(sample_messages())
    assert all("wrote 'plan', not keys of RankContextWrites" in r["error"] for r in rows), rows


def test_the_worked_example_is_installed_and_compared_in_an_experiment(tmp_path: Path) -> None:
    assert installed("rank_context")["keywords"] == "keywords = groupmind_rank_keywords:VARIANTS"
    data = context_dataset(tmp_path / "d.jsonl")
    done = subprocess.run(
        [GROUPMIND, "--data-dir", str(tmp_path / "data"), "experiment", str(data), "--mode",
         "rank", "--arm", "weighted:rank_context=weighted", "--arm",
         "keywords:rank_context=keywords", "--local", "--json", "--bootstrap", "200",
         "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    arms = {a["name"]: a for a in report["arms"]}
    assert arms["keywords"]["variants"]["rank_context"] == "keywords"
    r5 = metric(report, "context_R@5")
    assert r5["values"]["keywords"]["n"] == r5["values"]["weighted"]["n"] > 0
    assert r5["comparisons"]["keywords"]["verdict"] in ("better", "worse", "no clear difference")
    assert (tmp_path / "out" / "report.svg").read_text().startswith("<svg")
