"""Feeding messages to the reply graph (``replay``) or to observe + rank_context only
(``rank``): shared by the CLI, the demo and the benchmarks."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from graphs.reply import ReplyGraph
from groupmind.threads import thread_config
from nodes.deps import Deps
from nodes.reply import VARIANTS
from nodes.reply.observe import validate_message
from nodes.variants import choose, resolve_all
from state.context import Context
from state.validation import InputError

REPLAY_KEYS = ("message_id", "action", "reason", "chat_state", "context_ids", "memory_ids", "reply")


def reply_context(deps: Deps, variants: dict[str, str] | None = None) -> Context:
    """Every slot's variant resolved up front, so run metadata names the exact arm."""
    return Context(variants=resolve_all(VARIANTS, Context(variants=variants or {}), deps))


def reply_to(graph: ReplyGraph, deps: Deps, raw: Any, context: Context) -> dict[str, Any]:
    """One message through the reply graph on its stream's thread; a bad message raises
    InputError before anything is stored."""
    msg = validate_message(raw, deps)
    adopt_legacy_thread(graph, msg.stream, deps.bot_id)
    config: Any = {
        **thread_config(msg.stream, deps.bot_id),
        "run_name": "reply",
        "metadata": {
            "stream": msg.stream,
            "message_id": msg.message_id,
            "variants": dict(context.variants),
        },
    }
    # One checkpoint per message: a run is short and its writes (message, jobs) idempotent.
    out = graph.invoke({"message": raw}, config, context=context, durability="exit")
    return {key: out.get(key) for key in REPLAY_KEYS} | {
        "message_id": msg.message_id,
        "sticker": out.get("sticker") or None,
        "handed_off": out.get("handed_off", []),
    }


_checked: set[tuple[int, str]] = set()


def adopt_legacy_thread(graph: ReplyGraph, stream: str, bot: str) -> None:
    """Threads used to be named by the stream alone; the first time a stream is seen here,
    its old thread's state (chat state, persona, the pending buffer not yet remembered) moves
    to the bot's thread, so an upgrade loses nothing."""
    saver = graph.checkpointer
    key = (id(saver), stream)
    if key in _checked or not isinstance(saver, BaseCheckpointSaver):
        return
    _checked.add(key)
    new = thread_config(stream, bot)
    old: Any = {"configurable": {"thread_id": stream}}
    if saver.get_tuple(new) is not None or saver.get_tuple(old) is None:
        return
    values = graph.get_state(old).values
    graph.update_state(new, dict(values), as_node="hand_off")
    saver.delete_thread(stream)


def rank_only(deps: Deps, raw: Any, context: Context) -> dict[str, Any]:
    """Store the message and rank its context, whatever the chat's state."""
    if not isinstance(raw, dict):
        raise InputError("message", f"must be a JSON object, got {type(raw).__name__}")
    observed = VARIANTS["observe"]["default"]({"message": raw}, context, deps)
    ranker = VARIANTS["rank_context"][choose("rank_context", VARIANTS, context, deps)]
    ranked = ranker(observed, context, deps)
    return {
        "message_id": observed["message_id"],
        "context_ids": ranked["context_ids"],
        "ranked": ranked["ranked"],
    }
