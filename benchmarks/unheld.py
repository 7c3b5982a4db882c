"""The dense search of a chat whose vectors are not held (over `VECTORS_HELD`, or 0), in
`make bench-latency`: chats of 200 to 10,000 memories added among a scale's events (their
writes interleaved, as busy chats' are), each searched exactly over its vectors read from
SQL (row by row, then sealed in blocks: ``stores.sql.blocks``) and by Chroma given its ids
(``ChromaEventVectors.nearest``: unnarrowed where the chat is a large share of its shard).
The store takes exact search up to ``ANN_MIN``, and up to ``EXACT_MAX`` where Chroma would
narrow (``HybridEventStore.exact_first``). Each search asks one of ``QUESTIONS`` in turn: Chroma's cost depends on the query (narrowed to a 20k chat among 1M, 10.6 ms p50 for
stored vectors with noise, 28.7 for reply texts, p95 16.4 against 69.3), exact search's
does not."""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from benchmarks.common import pct
from stores.base import EventQuery, EventRecord
from stores.hybrid import LOOSE_MAX, HybridEventStore

SIZES = (200, 1000, 5000, 10000, 20000, 50000)
QUESTIONS = (
    "小明最近是不是在去北京出差？", "上次说的那个火锅店在哪", "周末一起去爬山吗",
    "你还记得小王的生日吗", "推荐一本书吧", "明天会下雨吗", "我们上次讨论的项目进展如何",
    "谁说过想养猫", "群里谁会弹吉他", "上个月聚餐是在哪里", "阿强换工作了吗",
    "有人去过成都吗", "那部电影好看吗", "考试是哪天", "你们觉得新出的手机怎么样",
)  # fmt: skip


def sizes_for(n: int) -> list[int]:
    """The chat sizes a scale of ``n`` events gets (up to a twentieth of it; 200 at least)."""
    return [s for s in SIZES if s <= max(SIZES[0], n // 20)]


def add_chats(
    events: HybridEventStore, texts: list[str], vectors: np.ndarray, sizes: list[int]
) -> None:
    """The chats ``u<size>``, their events interleaved; ids are fixed, so a reused data dir
    is written again, not grown."""
    rng = np.random.default_rng(11)
    order = [(size, i) for i in range(max(sizes, default=0)) for size in sizes if i < size]
    for start in range(0, len(order), 2000):
        batch = order[start : start + 2000]
        idx = np.asarray([i for _, i in batch]) % len(texts)
        noisy = vectors[idx] + rng.normal(0, 0.01, (len(batch), vectors.shape[1])).astype(
            np.float32
        )
        noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
        records = [
            EventRecord(id=f"unheld-{size}-{i}", text=texts[i % len(texts)], timestamp=1_790_000_000.0 + i,
                        user_id=f"u{i % 8}", user_name="小明", platform="qq", chat_type="group",
                        chat_id=f"u{size}", persona_id="default")
            for size, i in batch
        ]  # fmt: skip
        events.upsert_many(records, noisy)


def timed(run: Any, vectors: list[list[float]], repeats: int) -> list[float]:
    """ms of ``run(vector)``, the vectors taken in turn."""
    out = []
    for i in range(repeats):
        vector = vectors[i % len(vectors)]
        t0 = time.perf_counter()
        run(vector=vector)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def unheld_searches(
    events: HybridEventStore, texts: list[str], vectors: np.ndarray, n: int, repeats: int = 30
) -> dict[str, dict[str, Any]]:
    """{size: {"by row" | "sealed" | "chroma": [ms, ...], "takes": "exact" | "Chroma"}} for
    each chat size of this scale."""
    sizes = sizes_for(n)
    add_chats(events, texts, vectors, sizes)
    asked = [events.vector.embed_query(q) for q in QUESTIONS]
    results = {}
    for size in sizes:
        query = EventQuery(text=QUESTIONS[0], platform="qq", chat_type="group", chat_id=f"u{size}",
                           persona_id="default", top_k=events.depth)  # fmt: skip
        members = events.lexical.scope_members(query, 100_000)
        assert members is not None and len(members.ids) == size
        ids = list(members.ids)
        # by row first (blocks of an earlier run are stale: rewritten), however many
        events.seal, events.loose_max = False, size
        by_row = timed(partial(events.search_exact, query, members), asked, repeats)
        events.lexical.seal(query.scope, "default")
        events.seal, events.loose_max = True, LOOSE_MAX
        results[str(size)] = {
            "by row": by_row,
            "sealed": timed(partial(events.search_exact, query, members), asked, repeats),
            "chroma": timed(partial(events.vector.nearest, query, ids), asked, repeats),
            "takes": "exact" if events.exact_first(query, size) else "Chroma",
        }
    return results


def print_unheld(console: Console, n: int, results: dict[str, dict[str, Any]]) -> None:
    table = Table("memories in the chat", "exact, SQL rows", "exact, sealed blocks",
                  "Chroma, given its ids", "the store takes",
                  title=f"a chat not held, among {n:,} events: dense search, ms p50 / p95")  # fmt: skip
    for size, arms in results.items():
        cells = [
            f"{pct(arms[a], 50):.1f} / {pct(arms[a], 95):.1f}"
            for a in ("by row", "sealed", "chroma")
        ]
        table.add_row(f"{int(size):,}", *cells, arms["takes"])
    console.print(table)
