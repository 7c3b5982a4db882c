"""What every benchmark prints: the machine, medians and percentiles."""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import numpy as np
from langchain_core.callbacks import BaseCallbackHandler

from groupmind.machine import machine

__all__ = ["SHARED_DATA", "NodeTimer", "asked_after", "machine", "pct"]

SHARED_DATA = Path(
    os.environ.get("GROUPMIND_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of one running process (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (float(fields[11]) + float(fields[12])) / os.sysconf("SC_CLK_TCK")


def sched_s(pid: int) -> dict[int, tuple[float, float]]:
    """Per thread of a running process: (seconds on a core, seconds runnable but waiting
    for one), the scheduler's own nanoseconds (/proc/PID/task/TID/schedstat)."""
    threads = {}
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            ran, waited, _ = stat.read_text().split()
        except (OSError, ValueError):  # that thread ended while we looked
            continue
        threads[int(stat.parent.name)] = (int(ran) / 1e9, int(waited) / 1e9)
    return threads


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process and its running descendants (a server's workers)."""
    children: dict[int, list[int]] = defaultdict(list)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except OSError:  # the process ended while we looked
            continue
        children[parent].append(int(stat.parent.name))
    total, todo = 0.0, [pid]
    while todo:
        one = todo.pop()
        try:
            total += process_cpu_s(one)
        except OSError:
            continue
        todo += children[one]
    return total


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


class NodeTimer(BaseCallbackHandler):
    """Wall time of each graph node, from LangChain's callbacks."""

    def __init__(self, nodes: tuple[str, ...]) -> None:
        self.nodes = nodes
        self.started: dict[UUID, tuple[str, float]] = {}
        self.ms: dict[str, list[float]] = defaultdict(list)

    def on_chain_start(
        self, serialized: Any, inputs: Any, *, run_id: UUID, metadata: Any = None, **kw: Any
    ) -> None:
        node = (metadata or {}).get("langgraph_node")
        if node in self.nodes and kw.get("name") == node:
            self.started[run_id] = (node, time.perf_counter())

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kw: Any) -> None:
        if run_id in self.started:
            node, t0 = self.started.pop(run_id)
            self.ms[node].append((time.perf_counter() - t0) * 1000)


def asked_after(jobs: Iterable[Mapping[str, Any]], days: float = 1.0) -> dict[str, float]:
    """When each chat's questions are asked (epoch seconds): ``days`` after its last memory
    job, as a member would ask once the conversation is over (memories fade from then)."""
    last: dict[str, float] = {}
    for job in jobs:
        when = datetime.fromisoformat(job["timestamp"]).timestamp()
        last[job["chat_id"]] = max(last.get(job["chat_id"], when), when)
    return {chat: t + days * 86_400 for chat, t in last.items()}


class PrefixMeter(BaseCallbackHandler):
    """What a provider's prefix cache could reuse: for each model request, the share of it
    (its messages and tools, serialised as sent) that is an identical prefix of the
    previous request of the same slot in the same chat."""

    def __init__(self, nodes: tuple[str, ...]) -> None:
        self.nodes = nodes
        self.last: dict[tuple[str, str], str] = {}
        self.shares: dict[str, list[float]] = defaultdict(list)
        self.same_system: dict[str, list[bool]] = defaultdict(list)

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, metadata: Any = None, **kw: Any
    ) -> None:
        meta = metadata or {}
        node = meta.get("langgraph_node")
        if node not in self.nodes or not messages:
            return
        turns = [(m.type, m.content) for m in messages[0]]
        tools = (kw.get("invocation_params") or {}).get("tools") or []
        sent = json.dumps({"tools": tools, "messages": turns}, ensure_ascii=False)  # as sent
        key = (str(meta.get("thread_id", "")), node)
        before = self.last.get(key)
        self.last[key] = sent
        if before is None:
            return  # the chat's first request of this slot: nothing to reuse yet
        common = len(os.path.commonprefix([before, sent]))
        self.shares[node].append(common / len(sent))
        now = json.loads(sent)["messages"][:1]
        self.same_system[node].append(json.loads(before)["messages"][:1] == now)
