"""``groupmind forget`` in-process: erase a person or a chat from the stores (the forget
graph's work, ``nodes.forget``) and from the reply threads this deployment's checkpointer
keeps: a forgotten chat's thread is deleted; a thread where a forgotten person spoke is
rebuilt without their pending lines (its history, which held them, goes)."""

from __future__ import annotations

from typing import Any

from graphs.reply import ReplyGraph
from groupmind.threads import thread_config
from nodes.deps import Deps
from nodes.forget import erase_for
from nodes.reply.observe import FRESH
from state.forget import ForgetRequest
from stores.base import ForgetTarget


def forget(
    deps: Deps, reply_graph: ReplyGraph, request: ForgetRequest, *, wait_s: float = 30.0
) -> dict[str, Any]:
    """Erase; returns ``removed`` (counts per kind), the chat ``streams`` touched and any
    memory jobs ``still_running`` after ``wait_s`` (run forget again once they are done)."""
    erased = erase_for(request, deps, wait_s)
    target = request.target()
    streams = set(erased.streams) | ({target.chat.key} if target.chat else set())
    scrubbed = sum(_scrub(reply_graph, stream, deps.bot_id, target) for stream in sorted(streams))
    return {
        "removed": {**erased.counts, "reply_threads": scrubbed},
        "streams": sorted(streams),
        "still_running": erased.still_running,
    }


def _scrub(graph: ReplyGraph, stream: str, bot: str, target: ForgetTarget) -> int:
    """1 when this bot's thread for the stream held something of the target."""
    config = thread_config(stream, bot)
    checkpointer = graph.checkpointer
    values = dict(graph.get_state(config).values)
    if not values or checkpointer is None or checkpointer is True:
        return 0
    checkpointer.delete_thread(config["configurable"]["thread_id"])  # type: ignore[union-attr]
    if target.user_id is None:
        return 1  # the chat is forgotten: its thread goes whole
    pending = [p for p in values.get("pending", []) if p["user_id"] != target.user_id]
    kept = {k: v for k, v in values.items() if k not in ("message", "msg")}
    graph.update_state(config, {**kept, **FRESH, "pending": pending}, as_node="hand_off")
    return 1
