"""One process's view of a deployment for one bot: its stores, both graphs and the memory
worker (which serves every bot's queue)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from graphs.reply import ReplyGraph, build_reply_graph
from groupmind.checkpoint import make_checkpointer
from groupmind.settings import Settings
from groupmind.wiring import Deployment, build_runtime
from groupmind.worker import MemoryWorker
from nodes.deps import ReplyDeps
from stores.base import JobQueue


@dataclass
class Session:
    runtime: Deployment
    worker: MemoryWorker

    @property
    def bot(self) -> str:
        return self.worker.bot

    @property
    def deps(self) -> ReplyDeps:
        """This bot's stores (the worker's are the same, as a memory graph reads them)."""
        return self.runtime.deps_for(self.worker.bot)

    @property
    def jobs(self) -> JobQueue:
        """This bot's memory jobs."""
        return self.worker.jobs

    @property
    def memory_graph(self) -> CompiledStateGraph[Any, Any, Any, Any]:
        return self.worker.graph

    def reply_graph(self) -> ReplyGraph:
        # Its own connection: replies never queue behind the memory worker's checkpoints.
        return build_reply_graph(self.deps, checkpointer=make_checkpointer(self.runtime.settings))


def open_session(
    settings: Settings,
    *,
    variants: dict[str, str] | None = None,
    worker: bool = True,
    bot: str | None = None,
) -> Session:
    """``bot``: whose data the session reads and writes (default: ``settings.bot_id``).
    ``worker=False``: search, profile and listings only (no checkpointer is opened)."""
    runtime = build_runtime(settings, checkpoints=worker)
    return Session(runtime, runtime.memory_worker(variants=variants, bot=bot))
