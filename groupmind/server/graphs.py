"""The graph factories named in ``langgraph.json``.

The server calls a factory for every run with the run's config, which carries the
authenticated bot (``groupmind.server.auth``): each bot's runs get graphs built over that
bot's own stores, so a run can only ever read, write or erase its own bot's data, whatever
its input, command or state says. A server without keys serves the deployment's own bot
(``GROUPMIND_BOT_ID``). Graphs are built once per bot and process, off the event loop;
the server supplies the checkpointer.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig

from graphs.forget import ForgetGraph, build_forget_graph
from graphs.host import HostGraph, build_host_graph
from graphs.memory import MemoryGraph, build_memory_graph
from graphs.reply import ReplyGraph, build_reply_graph
from groupmind.server.identity import run_bot
from groupmind.server.threads import ServerThreads
from groupmind.wiring import Deployment, open_runtime

G = TypeVar("G")

_BUILDING = threading.Lock()  # runs that come in side by side build each graph once
_BUILT: dict[tuple[str, str], Any] = {}


def _once(kind: str, bot: str, build: Callable[[Deployment, str], G]) -> G:
    with _BUILDING:
        if (kind, bot) not in _BUILT:
            _BUILT[kind, bot] = build(open_runtime(), bot)
        graph: G = _BUILT[kind, bot]
        return graph


def _bot(config: RunnableConfig | None) -> str:
    return run_bot(config, open_runtime().settings)


async def make_reply_graph(config: RunnableConfig) -> ReplyGraph:
    """The reply graph over the run's bot's stores."""
    bot = await asyncio.to_thread(_bot, config)
    return await asyncio.to_thread(_once, "reply", bot, _reply_graph)


async def make_memory_graph(config: RunnableConfig) -> MemoryGraph:
    bot = await asyncio.to_thread(_bot, config)
    return await asyncio.to_thread(_once, "memory", bot, _memory_graph)


async def make_forget_graph(config: RunnableConfig) -> ForgetGraph:
    """Erase a person or a chat of the run's bot: ``{"platform", "user_id"?, "chat_type"?,
    "chat_id"?}``."""
    bot = await asyncio.to_thread(_bot, config)
    return await asyncio.to_thread(_once, "forget", bot, _forget_graph)


async def make_host_graph(config: RunnableConfig) -> HostGraph:
    """A host bot framework's memory (docs/contracts.md, "Hosts"): capture, recall, record
    and tools over the run's bot's stores, on the chat's reply thread."""
    bot = await asyncio.to_thread(_bot, config)
    return await asyncio.to_thread(_once, "host", bot, _host_graph)


def _host_graph(runtime: Deployment, bot: str) -> HostGraph:
    if runtime.settings.server_memory_worker:
        runtime.start_background_worker()
    return build_host_graph(runtime.deps_for(bot))


def _reply_graph(runtime: Deployment, bot: str) -> ReplyGraph:
    if runtime.settings.server_memory_worker:  # else separate `groupmind worker`s (deploy/)
        runtime.start_background_worker()
    return build_reply_graph(runtime.deps_for(bot))


def _memory_graph(runtime: Deployment, bot: str) -> MemoryGraph:
    return build_memory_graph(runtime.deps_for(bot))


def _forget_graph(runtime: Deployment, bot: str) -> ForgetGraph:
    """The bot's forget: its stores, then this server's reply threads of the bot (from
    inside the server), then what the engines keep on disk."""
    threads = ServerThreads(bot, owned=bool(runtime.settings.bots))
    return build_forget_graph(runtime.forget_deps(bot, threads))
