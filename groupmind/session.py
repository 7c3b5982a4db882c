"""One process's view of a deployment: stores, both graphs and the memory worker."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from graphs.memory import build_memory_graph
from graphs.reply import ReplyGraph, build_reply_graph
from groupmind.checkpoint import make_checkpointer
from groupmind.settings import Settings
from groupmind.wiring import Runtime, build_runtime
from groupmind.worker import MemoryWorker
from nodes.deps import Deps
from stores.sql import SqlJobQueue


@dataclass
class Session:
    runtime: Runtime
    worker: MemoryWorker

    @property
    def deps(self) -> Deps:
        return self.runtime.deps

    @property
    def jobs(self) -> SqlJobQueue:
        return self.runtime.jobs

    @property
    def memory_graph(self) -> CompiledStateGraph[Any, Any, Any, Any]:
        return self.worker.graph

    def reply_graph(self) -> ReplyGraph:
        # Its own connection: replies never queue behind the memory worker's checkpoints.
        return build_reply_graph(self.deps, checkpointer=make_checkpointer(self.runtime.settings))


def open_session(
    settings: Settings, *, variants: dict[str, str] | None = None, worker: bool = True
) -> Session:
    runtime = build_runtime(settings)
    if worker:
        return Session(runtime, runtime.memory_worker(variants=variants))
    graph = build_memory_graph(runtime.deps)  # search-only: no checkpointer needed
    return Session(runtime, MemoryWorker(graph, runtime.jobs, runtime.deps, settings))
