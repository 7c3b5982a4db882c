"""bench-latency times a chat's first replies apart from the rest: what it waits for."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from benchmarks.latency import held, pool, populate
from groupmind.settings import Settings
from groupmind.wiring import build_runtime
from stores.base import EventQuery
from stores.hybrid import HybridEventStore


def test_a_chat_is_held_only_once_its_postings_and_vectors_are(tmp_path: Path) -> None:
    runtime = build_runtime(Settings(data_dir=tmp_path / "data"), checkpoints=False)
    texts, vectors = pool(tmp_path / "cache", runtime.embeddings, size=20)
    populate(runtime, 100, texts, vectors, chats=2)
    deps = runtime.deps
    assert not held(deps, "1001")  # nothing searched yet
    query = EventQuery(
        text="小明去北京出差",
        platform="qq",
        chat_type="group",
        chat_id="1001",
        persona_id="default",
    )
    deps.events.search(query)  # read into memory in the background
    deadline = time.monotonic() + 30
    while not held(deps, "1001") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert held(deps, "1001") and not held(deps, "1002")
    # a store that holds no vectors waits for the postings alone
    cold = HybridEventStore(
        deps.events.vector, deps.events.lexical, bot=deps.limits.bot_id, max_vectors_held=0
    )
    assert held(replace(deps, events=cold), "1001")
    assert not held(replace(deps, events=cold), "1002")
    # a store that holds vectors but has not read this chat's yet: its postings are not enough
    fresh = HybridEventStore(deps.events.vector, deps.events.lexical, bot=deps.limits.bot_id)
    assert not held(replace(deps, events=fresh), "1001")
