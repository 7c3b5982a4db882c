"""The fault suite at larger N (``benchmarks/fault_suite.py``): real processes killed with SIGKILL
(memory workers, a bot, the OneBot bridge mid-storm), a throwaway PostgreSQL cluster stopped
hard, a `chroma run` server and an OpenAI-compatible endpoint taken down and brought back,
a store down in the middle of replies. A table: fault, N, lost, stored twice, time to
drain, process alive, notes.

    make bench-faults
    make bench-faults ARGS="--jobs 100 --kills 10"
"""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from benchmarks import fault_suite as faults
from benchmarks.common import machine

console = Console(width=160)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=400, help="memory jobs per worker fault")
    parser.add_argument("--kills", type=int, default=30, help="SIGKILLs of the worker")
    parser.add_argument("--messages", type=int, default=200, help="messages per bot fault")
    parser.add_argument("--bot-kills", type=int, default=10)
    parser.add_argument("--storm", type=int, default=1000, help="OneBot events in 10 s")
    parser.add_argument("--only", action="append", help="a scenario by name (the smoke run)")
    args = parser.parse_args()
    console.print(f"machine: {machine()}")
    every = {
        "worker_kill9": lambda: faults.worker_kill9(args.jobs, args.kills),
        "worker_postgres_restart": lambda: faults.worker_postgres_restart(args.jobs),
        "worker_chroma_restart": lambda: faults.worker_chroma_restart(args.jobs),
        "worker_model_outage": lambda: faults.worker_model_outage(args.jobs // 4),
        "bot_kill9": lambda: faults.bot_kill9(args.messages, args.bot_kills),
        "bot_postgres_restart": lambda: faults.bot_postgres_restart(args.messages),
        "bridge_kill9": lambda: faults.bridge_kill9(args.storm, chats=20, rate=args.storm / 10),
        "bot_store_down": lambda: faults.bot_store_down(args.messages),
    }
    unknown = sorted(set(args.only or []) - set(every))
    if unknown:
        parser.error(f"--only: no scenario {unknown[0]!r} (scenarios: {', '.join(every)})")
    scenarios = [run for name, run in every.items() if not args.only or name in args.only]
    table = Table("fault", "N", "lost", "stored twice", "time to drain (s)", "process alive",
                  "notes")  # fmt: skip
    failed = False
    for run in scenarios:
        result = run()
        notes = "; ".join(n for n in result.notes if len(n) < 200)
        table.add_row(*result.row(), notes)
        console.print(f"{result.fault}: {result.row()[2:]} {notes}")
        failed |= (result.lost, result.twice, result.alive) != (0, 0, True)
    console.print(table)
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
