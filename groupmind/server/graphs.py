"""The graph factories named in ``langgraph.json``: stores and models from the deployment's
settings, built once per process and off the event loop (the server calls a factory for
every run). The server supplies the checkpointer."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from functools import lru_cache
from typing import TypeVar

from graphs.forget import ForgetGraph, build_forget_graph
from graphs.memory import MemoryGraph, build_memory_graph
from graphs.reply import ReplyGraph, build_reply_graph
from groupmind.wiring import open_runtime

G = TypeVar("G")


_BUILDING = threading.Lock()  # runs that come in side by side build each graph once


def _once(build: Callable[[], G]) -> G:
    with _BUILDING:
        return build()


async def make_reply_graph() -> ReplyGraph:
    """The reply graph; an in-process memory worker runs the jobs hand_off writes."""
    return await asyncio.to_thread(_once, _reply_graph)


async def make_memory_graph() -> MemoryGraph:
    return await asyncio.to_thread(_once, _memory_graph)


async def make_forget_graph() -> ForgetGraph:
    """Erase a person or a chat: ``{"platform", "user_id"?, "chat_type"?, "chat_id"?}``."""
    return await asyncio.to_thread(_once, _forget_graph)


@lru_cache(maxsize=1)
def _reply_graph() -> ReplyGraph:
    runtime = open_runtime()
    if runtime.settings.server_memory_worker:  # else separate `groupmind worker`s (deploy/)
        runtime.start_background_worker()
    return build_reply_graph(runtime.deps)


@lru_cache(maxsize=1)
def _memory_graph() -> MemoryGraph:
    return build_memory_graph(open_runtime().deps)


@lru_cache(maxsize=1)
def _forget_graph() -> ForgetGraph:
    return build_forget_graph(open_runtime().deps)
