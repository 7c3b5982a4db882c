"""What each node slot may write: one TypedDict per slot (``<Slot>Writes``), the contract
every variant of the slot keeps, built-in or a plugin's (docs/variants.md).

A variant is ``fn(state, ctx: Context, deps: Deps) -> <Slot>Writes`` (or an ``async def``):
it reads the graph's state (``ReplyState``, ``MemoryState``, ``ForgetState``) and returns
only keys of its slot's contract; the node records which variant ran (``variants``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import BaseMessage
from langgraph.types import Overwrite
from typing_extensions import TypedDict  # pydantic checks these on Python 3.11 (typing's it cannot)

from state.forget import EraseWrites, ForgetState
from state.memory import MemoryJob, MemoryState
from state.reply import Action, ChatState, Handled, PendingMessage, ReplyState

Graph = Literal["reply", "memory", "forget"]
Usage = dict[str, Any]  # tokens (and cost) per node and in all: ``state.reducers.add_usage``
Fallback = list[dict[str, str]]  # [{slot, kind, error}]: the rules stood in for the model


class RetrieveWrites(TypedDict, total=False):
    relation_block: str
    memory_block: str
    memory_ids: list[str]


class RankContextWrites(TypedDict, total=False):
    context_ids: list[str]  # the selected context, oldest first
    ranked: list[list[Any]]  # every candidate as [message_id, score], best first
    context_fallback: str  # why the most recent messages stand in ("" when they do not)


class PlanWrites(TypedDict, total=False):
    action: Action
    reason: str
    chat_state: ChatState
    no_reply_count: int
    replan: bool  # newer messages arrived: rank and plan again
    replans: int
    observed_seq: int
    addressed: bool
    usage: Usage
    fallback: Fallback


class ReplyWrites(TypedDict, total=False):
    reply: str
    tool_calls: list[dict[str, Any]]
    model_messages: list[BaseMessage]  # the tool loop's turns (``tools`` runs the calls)
    usage: Usage
    fallback: Fallback


class EmojiWrites(TypedDict, total=False):
    sticker: dict[str, str]
    reply: str


class HandOffWrites(TypedDict, total=False):
    handed_off: list[str]
    model_messages: list[BaseMessage]  # a removal of the run's tool loop
    handled: dict[str, Handled]
    pending: list[PendingMessage]


class IntakeWrites(TypedDict, total=False):
    job: MemoryJob
    persona_name: str
    text: str
    attempts: int
    offending: list[str]
    reasons: list[str]
    # a run starts them afresh: written past their reducers (checked as the value wrapped)
    tried: list[dict[str, Any]] | Overwrite
    usage: Usage | Overwrite
    degraded: bool
    written_by: str
    notes: list[str]
    profile: str


class RewriteWrites(TypedDict, total=False):
    text: str
    attempts: int
    usage: Usage


class QualityGateWrites(TypedDict, total=False):
    offending: list[str]
    reasons: list[str]
    tried: list[dict[str, Any]]
    degraded: bool
    text: str
    written_by: str
    notes: list[str]


class EmbedWrites(TypedDict, total=False):
    status: Literal["stored", "degraded"]


class MergeProfileWrites(TypedDict, total=False):
    profile: str  # "updated", "duplicate", "skipped: <why>"
    usage: Usage


@dataclass(frozen=True)
class Slot:
    """A node slot's contract: its graph, the state its variants read, what they write,
    and the variant that runs when nothing else is asked (and no model is configured)."""

    name: str
    graph: Graph
    state: type[Any]
    writes: type[Any]
    baseline: str
    asynchronous: bool = False  # its node is a coroutine: plugins may be ``async def``


# Every slot of every graph, in graph order. observe writes a run's whole fresh state
# (any key of ReplyState), so its contract is the state itself.
SLOTS: dict[str, Slot] = {
    s.name: s
    for s in (
        Slot("observe", "reply", ReplyState, ReplyState, "default"),
        Slot("retrieve", "reply", ReplyState, RetrieveWrites, "default"),
        Slot("rank_context", "reply", ReplyState, RankContextWrites, "weighted"),
        Slot("plan", "reply", ReplyState, PlanWrites, "rules"),
        Slot("reply", "reply", ReplyState, ReplyWrites, "rules"),
        Slot("emoji", "reply", ReplyState, EmojiWrites, "default"),
        Slot("hand_off", "reply", ReplyState, HandOffWrites, "default"),
        Slot("intake", "memory", MemoryState, IntakeWrites, "default"),
        Slot("rewrite", "memory", MemoryState, RewriteWrites, "rules"),
        Slot("quality_gate", "memory", MemoryState, QualityGateWrites, "rules"),
        Slot("embed", "memory", MemoryState, EmbedWrites, "default"),
        Slot("merge_profile", "memory", MemoryState, MergeProfileWrites, "rules"),
        Slot("erase", "forget", ForgetState, EraseWrites, "default", asynchronous=True),
    )
}


def graph_slots(graph: Graph) -> list[str]:
    return [name for name, s in SLOTS.items() if s.graph == graph]
