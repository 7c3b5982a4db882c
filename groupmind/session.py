"""One process's view of a deployment: stores, the memory graph and its worker."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from graphs.memory import build_memory_graph
from groupmind.checkpoint import make_checkpointer
from groupmind.settings import Settings
from groupmind.wiring import Runtime, build_runtime
from groupmind.worker import MemoryWorker
from nodes.deps import Deps
from state.context import Context
from stores.sql import SqlJobQueue


@dataclass
class Session:
    runtime: Runtime
    memory_graph: CompiledStateGraph[Any, Any, Any, Any]
    worker: MemoryWorker

    @property
    def deps(self) -> Deps:
        return self.runtime.deps

    @property
    def jobs(self) -> SqlJobQueue:
        return self.runtime.jobs


def open_session(
    settings: Settings, *, variants: dict[str, str] | None = None, worker: bool = True
) -> Session:
    runtime = build_runtime(settings)
    checkpointer = make_checkpointer(settings) if worker else None
    graph = build_memory_graph(runtime.deps, checkpointer=checkpointer)
    context = Context(variants=variants or {}, max_gate_attempts=settings.max_gate_attempts)
    return Session(
        runtime, graph, MemoryWorker(graph, runtime.jobs, runtime.deps, settings, context=context)
    )
