"""The input message (docs/contracts.md "Input message") and the reply graph's state."""

from __future__ import annotations

import operator
from collections.abc import Callable
from datetime import datetime
from functools import cache
from typing import Annotated, Any, Literal, NotRequired, get_args, get_origin, get_type_hints

from langchain_core.messages import AnyMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages
from langgraph.types import Overwrite
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from typing_extensions import TypedDict

from domain.scope import ChatScope
from state.reducers import add_usage, inbox, merge_dicts
from state.validation import (
    ChatTypeField,
    Line,
    as_id,
    as_ids,
    as_key_part,
    chat_id_of,
    context_limits,
    context_tz,
    limited_text,
    parse_timestamp,
    persona_of,
)

ChatState = Literal["ABSENT", "CHAT", "FOCUSED"]
Action = Literal["text_reply", "emoji_reply", "no_reply"]
MAX_MENTIONS = 50


class ChatMessage(BaseModel):
    """One incoming message, validated: ids as strings, an aware ISO timestamp."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    message_id: str
    platform: str = Field(min_length=1, max_length=64)
    chat_type: ChatTypeField
    user_id: str  # before chat_id: a private chat's id defaults to it
    user_name: Line = Field(min_length=1, max_length=128)
    chat_id: str | None = Field(default=None, validate_default=True)
    chat_name: Line | None = Field(default=None, max_length=256)
    content: str
    timestamp: str
    reply_to: str | None = None
    mentions: list[str] = Field(default_factory=list)
    persona_id: str = Field(default="", validate_default=True)  # "": the chat's persona

    @field_validator("persona_id", mode="before")
    @classmethod
    def _persona(cls, value: Any, info: ValidationInfo) -> str:
        return persona_of(value, info)

    @field_validator("message_id", "user_id", mode="before")
    @classmethod
    def _ids(cls, value: Any) -> str:
        return as_id(value, "id")

    @field_validator("platform", mode="before")
    @classmethod
    def _platform(cls, value: Any) -> str:
        return as_key_part(value, "platform")

    @field_validator("chat_id", mode="before")
    @classmethod
    def _chat_id(cls, value: Any, info: ValidationInfo) -> str | None:
        return chat_id_of(value, info)

    @field_validator("reply_to", mode="before")
    @classmethod
    def _reply_to(cls, value: Any) -> str | None:
        return None if value is None or value == "" else as_id(value, "reply_to")

    @field_validator("mentions", mode="before")
    @classmethod
    def _mentions(cls, value: Any) -> list[str]:
        return as_ids(value, "mentions", MAX_MENTIONS)

    @field_validator("content", mode="before")
    @classmethod
    def _content(cls, value: Any, info: ValidationInfo) -> str:
        text = limited_text(value, context_limits(info).max_text_chars)
        if not text.strip():
            raise ValueError("empty")
        return text

    @field_validator("timestamp", mode="before")
    @classmethod
    def _timestamp(cls, value: Any, info: ValidationInfo) -> str:
        return parse_timestamp(value, context_tz(info)).isoformat()

    @property
    def stream(self) -> str:
        """The chat stream (``qq:group:123456``): one reply thread per stream and bot."""
        return self.scope.key

    @property
    def scope_chat_id(self) -> str:
        assert self.chat_id is not None  # set by _chat_id
        return self.chat_id

    @property
    def scope(self) -> ChatScope:
        return ChatScope(
            platform=self.platform, chat_type=self.chat_type, chat_id=self.scope_chat_id
        )

    @property
    def when(self) -> datetime:
        return datetime.fromisoformat(self.timestamp)


class PendingMessage(TypedDict):
    """A message waiting in the buffer for the next memory hand-off."""

    message_id: str
    user_id: str
    user_name: str
    content: str
    timestamp: str
    from_bot: bool
    # whose conversation it is: a persona switch hands the others' lines off (hand_off)
    persona_id: NotRequired[str]
    # whom it answered or @-mentioned: the message replied to (and, as observe read it,
    # that message: {user_id, user_name, content}), the user ids it @s
    reply_to: NotRequired[str | None]
    replied: NotRequired[dict[str, str]]
    mentions: NotRequired[list[str]]


class Handled(TypedDict, total=False):
    """What was decided for a message, kept on its thread: a redelivery gets it back."""

    action: Action
    reason: str
    reply: str
    sticker: dict[str, str]
    memory_ids: list[str]  # the memories the reply was given (forget finds it by them)


class ReplyInput(TypedDict):
    # the message as JSON (the SDK, a server), or as a caller in the process validated it
    message: dict[str, Any] | ChatMessage


class ReplyRun(TypedDict, total=False):
    """What one run writes for itself: every field is cleared as a run starts (observe's
    ``fresh``, derived from this class), so nothing of the last run is read, or returned,
    as this one's."""

    relation_block: str
    memory_block: str
    memory_ids: list[str]
    context_ids: list[str]
    ranked: list[list[Any]]  # [[message_id, score], ...] best first
    context_fallback: str  # why the most recent messages were used instead, if they were
    replans: int
    replan: bool  # plan saw newer messages: rank and plan again
    duplicate: bool  # this message was handled before (a redelivery): its outcome again
    from_self: bool  # the bot's own message, fed back: store only
    action: Action
    reason: str
    reply: str
    sticker: dict[str, str]
    tool_calls: list[dict[str, Any]]  # [{name, args, result}] the reply model's tool calls
    # This run's conversation with the model: reply's turns and the tools node's results
    # (the tool loop); cleared at the start and at the end of every run.
    model_messages: Annotated[list[AnyMessage], add_messages]
    fallback: Annotated[list[dict[str, str]], operator.add]  # [{slot, error}]: rules stood in
    usage: Annotated[dict[str, Any], add_usage]  # tokens (and cost) per node and in all
    handed_off: list[str]  # request ids of memory jobs written this run
    variants: Annotated[dict[str, str], merge_dicts]  # slot -> the variant that ran it
    # the host graph's (graphs/host.py): what a recall gives the host, per run
    context_text: str  # the ranked context, rendered as a prompt holds it
    recall_text: str  # relationship, memories and context: ready to inject
    tool_result: str


# where a run's field does not start as its type's zero
RUN_STARTS: dict[str, Callable[[], Any]] = {"action": lambda: "no_reply"}


def run_start(*, past_reducers: bool) -> ReplyState:
    """Every ``ReplyRun`` field as a run starts: its type's zero (``RUN_STARTS`` where that
    is not it). ``past_reducers``: as a run's first write to a thread must be, so a field
    with a reducer is not merged with the last run's (every model message removed, the
    others overwritten); without, as a new thread takes them (forget's rebuilt threads)."""
    start: dict[str, Any] = {}
    for name, zero, reducer in _run_fields():
        value = zero()
        if reducer is not None and past_reducers:
            value = (
                [RemoveMessage(id=REMOVE_ALL_MESSAGES)]
                if reducer is add_messages
                else Overwrite(value)
            )
        start[name] = value
    return start  # type: ignore[return-value]


ZEROS: dict[Any, Callable[[], Any]] = {str: str, bool: bool, int: int, list: list, dict: dict}


@cache
def _run_fields() -> tuple[tuple[str, Callable[[], Any], Any], ...]:
    """(name, a new zero, its reducer or None) per ``ReplyRun`` field, read off the class
    once (a run only builds the values: the reply path pays no annotation parsing)."""
    out = []
    for name, hint in get_type_hints(ReplyRun, include_extras=True).items():
        reduced = get_origin(hint) is Annotated
        kind = get_origin(get_args(hint)[0] if reduced else hint)
        zero = RUN_STARTS.get(name) or ZEROS[kind or hint]
        out.append((name, zero, get_args(hint)[1] if reduced else None))
    return tuple(out)


class ReplyState(ReplyRun, total=False):
    message: Annotated[list[Any], inbox]  # raw inputs not yet observed (the run's is last)
    msg: ChatMessage  # the message, validated once by observe (read it with current_message)
    message_id: str
    stream: str
    # kept across runs on the thread (one chat stream)
    chat_state: ChatState
    no_reply_count: int
    interest: float
    interest_at: float  # when interest was last updated, for its decay
    persona_id: str  # the persona currently speaking in this chat
    pending: list[PendingMessage]  # since the last memory hand-off
    seen_ids: list[str]  # the latest messages observe took (a redelivery is not taken twice)
    seen_as_context: list[str]  # of those, taken as context before their own run came
    seen_seq: int  # the store's newest seq observe took: later ones were left by lost runs
    # A message counts as handled only with its outcome, recorded as the run ends: one
    # observed by a run that failed later is handled again when it comes back.
    handled: dict[str, Handled]
    # written by observe every run (besides ReplyRun's)
    observed_seq: int
    addressed: bool  # @bot, "bot:", a private message
    reply_to_bot: bool
    question: bool
    memory_variants: dict[str, str]  # the memory graph's, recorded in the jobs written
    # inputs of a host run: the memories the host's answer was given (record), a tool call
    host_memory_ids: list[str]
    host_tool: dict[str, Any]


class HostInput(TypedDict, total=False):
    """A host graph run's input (``Context.op`` says what it does)."""

    message: dict[str, Any]  # the message (capture, recall, tool), or the host's answer (record)
    host_memory_ids: list[str]  # record: the memories its recall gave the host's model
    host_tool: dict[str, Any]  # tool: {"name", "args"}


class HostOutput(TypedDict, total=False):
    message_id: str
    duplicate: bool
    recall_text: str  # what to inject into the host's request (its user part)
    relation_block: str
    memory_block: str
    context_text: str
    context_ids: list[str]
    ranked: list[list[Any]]
    memory_ids: list[str]
    handed_off: list[str]
    tool_result: str
    variants: dict[str, str]


class ReplyOutput(TypedDict, total=False):
    message_id: str
    duplicate: bool
    action: Action
    reason: str
    chat_state: ChatState
    context_ids: list[str]
    ranked: list[list[Any]]
    memory_ids: list[str]
    reply: str
    sticker: dict[str, str]
    tool_calls: list[dict[str, Any]]
    fallback: list[dict[str, str]]
    usage: dict[str, Any]
    handed_off: list[str]
    variants: dict[str, str]


def current_message(state: ReplyState) -> ChatMessage:
    """The run's message as observe validated it. A checkpoint read back by a strict
    serializer may hold it as a dict: rebuilt without validating again (observe did, with
    the deployment's limits)."""
    msg: Any = state["msg"]
    return msg if isinstance(msg, ChatMessage) else ChatMessage.model_construct(**msg)


def reply_platforms(state: ReplyState, default: str) -> set[str]:
    """Every platform a reply run's state would act on: the observed message's and those of
    the raw messages waiting in the inbox (an id that is not a string is left to validation)."""
    found: set[str] = set()
    msg: Any = state.get("msg")
    if msg is not None:
        found.add(str(msg.platform if isinstance(msg, ChatMessage) else msg.get("platform", "")))
    waiting: Any = state.get("message")
    for raw in waiting if isinstance(waiting, list) else [waiting]:
        if isinstance(raw, ChatMessage):  # validated already (in-process callers)
            found.add(raw.platform)
        elif isinstance(raw, dict) and isinstance(raw.get("platform"), str):
            found.add(raw["platform"])
    return found - {""}


HANDLED_KEPT = 200  # messages whose outcome a thread remembers (redeliveries come soon)


def handled(state: ReplyState, message_id: str, outcome: Handled) -> dict[str, Handled]:
    """The thread's record of handled messages with this one's outcome (the latest kept)."""
    kept = {k: v for k, v in state.get("handled", {}).items() if k != message_id}
    kept[message_id] = outcome
    return dict(list(kept.items())[-HANDLED_KEPT:])
