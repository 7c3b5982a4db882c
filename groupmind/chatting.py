"""Feeding messages to the reply graph (``replay``) or to observe + rank_context only
(``rank``): shared by the CLI, the demo and the benchmarks."""

from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Durability

from graphs.reply import ReplyGraph
from groupmind.checkpoint import ThreadPruner
from groupmind.threads import thread_config
from nodes.deps import Deps
from nodes.reply.observe import validate_message
from nodes.variants import choose, registry, resolve_all
from state.context import Context
from state.validation import InputError

REPLAY_KEYS = ("message_id", "action", "reason", "chat_state", "context_ids", "memory_ids", "reply")
EXTRA_KEYS = ("tool_calls", "fallback", "usage")  # shown when not empty


def checked_variants(asked: dict[str, str], deps: Deps) -> dict[str, str]:
    """Variants asked for by name (``--variant``), for any slot of either graph; raises
    UnknownVariant naming the first slot or variant that does not exist, was refused, or
    cannot run (``llm`` without a model)."""
    registry().check(asked, has_model=deps.model.chat is not None)
    return asked


def reply_context(deps: Deps, variants: dict[str, str] | None = None) -> Context:
    """Every reply slot's variant resolved up front, so run metadata names the exact arm;
    memory slots named here travel with the memory jobs the run writes."""
    asked = variants or {}
    reply = registry().graph("reply")
    return Context(variants={**asked, **resolve_all(reply, Context(variants=asked), deps)})


def reply_to(
    graph: ReplyGraph,
    deps: Deps,
    raw: Any,
    context: Context,
    callbacks: list[Any] | None = None,
    durability: Durability = "exit",
) -> dict[str, Any]:
    """One message through the reply graph on its stream's thread; a bad message raises
    InputError before anything is stored. ``callbacks``: LangChain handlers (tracing,
    timing). ``durability``: one checkpoint per message by default (a run is short and its
    writes idempotent); a server checkpoints every step (``async``)."""
    out = run_reply(graph, deps, raw, context, callbacks, durability)
    extra = {key: out[key] for key in EXTRA_KEYS if out.get(key)}
    return {key: out.get(key) for key in REPLAY_KEYS} | {
        "message_id": out["message_id"],
        "sticker": out.get("sticker") or None,
        "handed_off": out.get("handed_off", []),
        "duplicate": bool(out.get("duplicate")),
        **extra,
    }


def run_reply(
    graph: ReplyGraph,
    deps: Deps,
    raw: Any,
    context: Context,
    callbacks: list[Any] | None = None,
    durability: Durability = "exit",
) -> dict[str, Any]:
    """The reply graph's whole output for one message (``ReplyOutput``: the ranking, usage
    and fallbacks included), with the message's id."""
    msg = validate_message(raw, deps)
    adopt_legacy_thread(graph, msg.stream, deps.limits.bot_id)
    config: Any = {
        **thread_config(msg.stream, deps.limits.bot_id),
        "run_name": "reply",
        "metadata": {
            "stream": msg.stream,
            "message_id": msg.message_id,
            "bot_id": deps.limits.bot_id,
            "variants": dict(context.variants),
        },
        "callbacks": callbacks or [],
    }
    # the message as validated here: observe takes the model as it is (validated once)
    out = graph.invoke({"message": msg}, config, context=context, durability=durability)
    _pruned(graph, deps, config["configurable"]["thread_id"])
    return {**out, "message_id": msg.message_id}


_pruners: WeakKeyDictionary[BaseCheckpointSaver[str], ThreadPruner] = WeakKeyDictionary()


def _pruned(graph: ReplyGraph, deps: Deps, thread_id: str) -> None:
    """The thread ran once more: its history goes every ``deps.knobs.reply_history`` runs."""
    saver = graph.checkpointer
    if not isinstance(saver, BaseCheckpointSaver) or not deps.knobs.reply_history:
        return
    pruner = _pruners.get(saver)
    if pruner is None:
        pruner = _pruners[saver] = ThreadPruner(
            saver, deps.knobs.reply_history, deps.process.background.submit
        )
    pruner.ran(thread_id)


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
    reg = registry()
    variants = reg.graph("reply")
    observed = variants["observe"]["default"]({"message": raw}, context, deps)
    name = choose("rank_context", variants, context, deps)
    ranked = reg.checked(
        "rank_context", name, variants["rank_context"][name](observed, context, deps)
    )
    return {
        "message_id": observed["message_id"],
        "context_ids": ranked["context_ids"],
        "ranked": ranked["ranked"],
    }
