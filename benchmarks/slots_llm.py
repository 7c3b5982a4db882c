"""The `llm` profile merge beside the offline rules, on the slot benches' test parts: what a
turn says about its speaker, in DuLeMon's turns (``benchmarks.turn_slots``, Chinese, hand
labels) and MSC's utterances (``benchmarks.msc_slots``, English, the annotators' persona
lines). Each arm reads the same sample: test turns with something to learn about their
speaker and as many without (seeded), so precision meets turns that state nothing. The
`llm` arm is the merge's own prompt and schema (``nodes.memory.merge_profile``) on a chat
it has no profile in yet; what the merge keeps of its key facts and preferences (those the
turn says) is what it learned.

    make bench-slots-llm                          # the local model of make model
    make bench-slots-llm ARGS="--url http://127.0.0.1:8080/v1 --model qwen --n 10"
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from rich.console import Console
from rich.table import Table

from benchmarks import msc_slots, turn_slots
from benchmarks.common import machine, pct
from benchmarks.memory_sets import START, job
from benchmarks.model import endpoint, settings_for
from groupmind.providers import make_chat_model
from groupmind.wiring import model_of
from nodes import model
from nodes.memory.merge_profile import ProfileUpdate, render_profile_prompt, said_in
from nodes.memory.profile_change import Current
from state.memory import MemoryJob
from stores.script import has_cjk

console = Console()
Learned = list[tuple[str, str]]  # (slot, value) about the speaker


@dataclass(frozen=True)
class Item:
    key: str
    text: str
    gold: dict[str, list[str]]  # slot -> the values that count (empty: states nothing)


@dataclass(frozen=True)
class SlotSet:
    name: str
    items: list[Item]
    rules: Callable[[str], Learned]
    matches: Callable[[str, str], bool]
    persona: str


def dulemon(n: int, rng: random.Random) -> SlotSet:
    labels = turn_slots.labels()
    test = [t for t in turn_slots.turns() if t.test]
    said = [
        Item(t.key, t.text, {s: v for (w, s), v in labels[t.key].items() if w == "s"})
        for t in test
        if any(w == "s" for w, _ in labels.get(t.key, {}))
    ]
    empty = [Item(t.key, t.text, {}) for t in test if t.key not in labels]
    return SlotSet(
        "DuLeMon turns (zh)",
        _sample(said, empty, n, rng),
        lambda text: [(s, v) for w, s, v in turn_slots.learned(text) if w == "s"],
        turn_slots.matches,
        "小助手",
    )


def msc(n: int, rng: random.Random) -> SlotSet:
    test = [u for u in msc_slots.utterances() if u.test]
    said = [Item(u.key, u.text, u.gold) for u in test if u.gold]
    empty = [Item(u.key, u.text, {}) for u in test if not u.gold]
    return SlotSet(
        "MSC utterances (en)", _sample(said, empty, n, rng), msc_slots.learned,
        msc_slots.matches, "the assistant",
    )  # fmt: skip


def _sample(said: list[Item], empty: list[Item], n: int, rng: random.Random) -> list[Item]:
    return rng.sample(said, min(n, len(said))) + rng.sample(empty, min(n, len(empty)))


def job_of(item: Item) -> MemoryJob:
    """The turn as a memory job of its speaker (bench-memory's own job builder)."""
    name = "阿明" if has_cjk(item.text) else "Sam"
    return MemoryJob.model_validate(
        job(f"slots:{item.key}", "slots", "u1", name, item.text, START, [])
    )


def llm_arm(chat: Any, policy: model.StructuredOutput) -> Callable[[Item, str], Learned | None]:
    """What the merge learns about the speaker (None: no usable answer)."""

    def learn(item: Item, persona: str) -> Learned | None:
        prompt = render_profile_prompt(job_of(item), Current(None, None, None), persona)
        try:
            update = model.structured(
                chat, ProfileUpdate, [HumanMessage(prompt)], policy, model.Usage()
            )
        except model.ModelError:
            return None
        facts, liked = said_in(job_of(item), update)  # what the merge keeps of the answer
        return [(f.type, f.value) for f in facts] + [("like", p) for p in liked]

    return learn


def rules_arm(slots: SlotSet) -> Callable[[Item, str], Learned | None]:
    return lambda item, _: slots.rules(item.text)


def score(
    items: list[Item], got: list[Learned], matches: Callable[[str, str], bool]
) -> dict[str, Any]:
    """Recall and precision, strict (slot and value) and loose (the value, any slot)."""
    gold = sum(len(i.gold) for i in items)
    found = loose_found = right = loose_right = learned = 0
    for item, facts in zip(items, got, strict=True):
        for slot, values in item.gold.items():
            found += any(s == slot and any(matches(v, g) for g in values) for s, v in facts)
            loose_found += any(any(matches(v, g) for g in values) for _, v in facts)
        for slot, value in facts:
            learned += 1
            right += any(matches(value, g) for g in item.gold.get(slot, []))
            loose_right += any(matches(value, g) for vs in item.gold.values() for g in vs)
    return {
        "gold": gold, "learned": learned,
        "recall": found / gold if gold else float("nan"),
        "recall_any_slot": loose_found / gold if gold else float("nan"),
        "precision": right / learned if learned else float("nan"),
        "precision_any_slot": loose_right / learned if learned else float("nan"),
    }  # fmt: skip


def run_arm(
    slots: SlotSet, learn: Callable[[Item, str], Learned | None]
) -> tuple[dict[str, Any], Iterator[str]]:
    got: list[Learned] = []
    failed, times = 0, []
    for item in slots.items:
        t0 = time.perf_counter()
        facts = learn(item, slots.persona)
        times.append((time.perf_counter() - t0) * 1000)
        failed += facts is None
        got.append(facts or [])
    result = score(slots.items, got, slots.matches)
    result |= {"no_answer": failed, "ms_p50": pct(times, 50), "ms_p95": pct(times, 95)}
    wrong = (
        f"{i.key} {s}={v}  {i.text[:60]}"
        for i, facts in zip(slots.items, got, strict=True)
        for s, v in facts
        if not any(slots.matches(v, g) for g in i.gold.get(s, []))
    )
    return result, wrong


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="an OpenAI-compatible base URL (default: make model's)")
    parser.add_argument("--model", default="local", help="the model name the endpoint expects")
    parser.add_argument(
        "--n", type=int, default=15, help="turns with a label, and as many without, per set"
    )
    parser.add_argument("--seed", type=int, default=60)
    parser.add_argument("--show", action="store_true", help="each value an arm got wrong")
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    sets = [dulemon(args.n, rng), msc(args.n, rng)]
    report: dict[str, Any] = {"machine": machine(), "model": args.model, "n": args.n, "sets": {}}
    with endpoint(args.url) as url:
        settings = settings_for(args.out, url, args.model)  # no store is opened
        chat = make_chat_model(settings)
        assert chat is not None
        llm = llm_arm(chat, model_of(settings).structured)
        console.print(
            f"profile slots, llm merge beside the rules · {args.model} at {url} · {machine()}"
        )
        for slots in sets:
            table = Table("arm", "gold", "recall", "any slot", "learned", "precision",
                          "any slot", "no answer", "ms p50 / p95",
                          title=f"{slots.name}: {len(slots.items)} test turns")  # fmt: skip
            for arm, learn in (("rules", rules_arm(slots)), ("llm", llm)):
                r, wrong = run_arm(slots, learn)
                report["sets"].setdefault(slots.name, {})[arm] = r
                table.add_row(arm, str(r["gold"]), f"{r['recall']:.3f}",
                              f"{r['recall_any_slot']:.3f}", str(r["learned"]),
                              f"{r['precision']:.3f}", f"{r['precision_any_slot']:.3f}",
                              str(r["no_answer"]), f"{r['ms_p50']:.0f} / {r['ms_p95']:.0f}")  # fmt: skip
                if args.show:
                    for line in wrong:
                        console.print(f"  {arm} wrong {line}")
            console.print(table)
    args.out.mkdir(exist_ok=True)
    out = args.out / f"slots-llm-{datetime.now():%Y%m%d-%H%M%S}.json"
    out.write_text(json.dumps(report, indent=2, ensure_ascii=False))
    console.print(f"written: {out}")


if __name__ == "__main__":
    main()
