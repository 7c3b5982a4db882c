"""The memory job (docs/contracts.md "Memory job") and the memory graph's state."""

from __future__ import annotations

import operator
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
)
from typing_extensions import TypedDict

from domain.people import KEY_FACT_TYPES
from domain.scope import ChatScope
from state.reducers import add_usage, merge_dicts
from state.validation import (
    ChatTypeField,
    Line,
    Text,
    as_id,
    as_ids,
    as_key_part,
    chat_id_of,
    context_limits,
    context_tz,
    limited_text,
    limits_in,
    parse_timestamp,
    persona_of,
)

MAX_RECENT_MESSAGES = 50
MAX_RECENT_CHARS = 500  # each recent message: context for the historian, not memory
MAX_IMPRESSION_CHARS = 500  # seed 000: an impression is 200-500 characters
MAX_VARIANTS = 20


class RecentMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    user_name: Line = Field(min_length=1, max_length=128)
    content: Text = Field(max_length=MAX_RECENT_CHARS)
    user_id: str | None = None

    @field_validator("user_id", mode="before")
    @classmethod
    def _id(cls, value: Any) -> str | None:
        return None if value is None else as_id(value, "user_id")


class KeyFact(BaseModel):
    """seed 000 §2.2: one long-lived fact about a person."""

    type: str = Field(json_schema_extra={"enum": list(KEY_FACT_TYPES)})
    value: Line = Field(min_length=1, max_length=100)

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value not in KEY_FACT_TYPES:
            raise ValueError(
                f"unknown key fact type {value!r} (one of {', '.join(KEY_FACT_TYPES)})"
            )
        return value


class MemoryJob(BaseModel):
    """A validated memory job. Ids become strings, the timestamp an aware ISO string."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    request_id: str
    action_summary: str
    new_info: str
    user_id: str
    user_name: Line = Field(min_length=1, max_length=128)
    # docs/contracts.md: optional; a job without one is on the deployment's default platform.
    platform: str = Field(default="", validate_default=True)
    chat_type: ChatTypeField
    chat_id: str | None = Field(default=None, validate_default=True)
    chat_name: Line | None = Field(default=None, max_length=256)
    persona_id: str = Field(default="", validate_default=True)  # "": the chat's persona
    timestamp: str
    recent_messages: list[RecentMessage] = Field(default_factory=list)
    # Whom the speaker answered or @-mentioned (user ids): the replies and @s they sent, as
    # the reply graph saw them; none given, the last other speaker is whom they answered.
    to: list[str] = Field(default_factory=list)
    # Who wrote new_info (seed 003): "bot", the bot's end tool (我 = the bot, 你 = the user),
    # the seed's contract and the default; "user", the user's own words (我 = the user), as
    # groupmind's hand-off passes them.
    new_info_by: Literal["bot", "user"] = "bot"
    # From the reply model's tools (seed 000 §3): applied to the profile as given.
    key_facts: list[KeyFact] = Field(default_factory=list, max_length=10)
    impression_update: Text = Field(default="", max_length=MAX_IMPRESSION_CHARS)
    # The memory graph's variants this job was queued with (slot -> variant): a retry, or
    # another worker, runs the same arms.
    variants: dict[str, str] = Field(default_factory=dict, max_length=MAX_VARIANTS)

    @field_validator("variants", mode="before")
    @classmethod
    def _variants(cls, value: Any) -> dict[str, str]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise ValueError(f"must be an object of slot -> variant, got {type(value).__name__}")
        return {as_id(k, "slot"): as_id(v, "variant") for k, v in value.items()}

    @field_validator("to", mode="before")
    @classmethod
    def _to(cls, value: Any) -> list[str]:
        return list(dict.fromkeys(as_ids(value, "to", MAX_RECENT_MESSAGES)))

    @field_validator("request_id", "user_id", mode="before")
    @classmethod
    def _ids(cls, value: Any) -> str:
        return as_id(value, "id")

    @field_validator("persona_id", mode="before")
    @classmethod
    def _persona(cls, value: Any, info: ValidationInfo) -> str:
        return persona_of(value, info)

    @field_validator("platform", mode="before")
    @classmethod
    def _platform(cls, value: Any, info: ValidationInfo) -> str:
        if value is None or value == "":
            return context_limits(info).default_platform
        text = as_key_part(value, "platform")
        if len(text) > 64:
            raise ValueError(f"is {len(text)} characters, over the limit of 64")
        return text

    @field_validator("chat_id", mode="before")
    @classmethod
    def _chat_id(cls, value: Any, info: ValidationInfo) -> str | None:
        return chat_id_of(value, info)

    @field_validator("timestamp", mode="before")
    @classmethod
    def _timestamp(cls, value: Any, info: ValidationInfo) -> str:
        return parse_timestamp(value, context_tz(info)).isoformat()

    @field_validator("action_summary", "new_info", mode="before")
    @classmethod
    def _text(cls, value: Any, info: ValidationInfo) -> str:
        text = limited_text(value, context_limits(info).max_text_chars).strip()
        if info.field_name == "new_info" and not text and not info.data.get("action_summary"):
            raise ValueError("empty, and so is action_summary: nothing to remember")
        return text

    @field_validator("recent_messages", mode="before")
    @classmethod
    def _recent(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, list) and len(value) > MAX_RECENT_MESSAGES:
            raise ValueError(f"has {len(value)} messages, over the limit of {MAX_RECENT_MESSAGES}")
        return value

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

    def addressed(self) -> RecentMessage | None:
        """Whom the speaker's 你 means: the last one in recent_messages they replied to or
        @-mentioned (``to``), else the last other speaker (None: nobody else spoke, so it
        is the bot)."""
        others = [
            m
            for m in self.recent_messages
            if m.user_id != self.user_id and m.user_name != self.user_name
        ]
        answered = [m for m in others if m.user_id in self.to]
        return (answered or others)[-1] if others else None

    @property
    def place(self) -> str:
        """What 这里/here means in this job: the group's name, or the private chat."""
        if self.chat_type == "group":
            return self.chat_name or f"group {self.chat_id}"
        return f"private chat with {self.user_name}"

    @property
    def place_zh(self) -> str:
        if self.chat_type == "group":
            return self.chat_name or f"群{self.chat_id}"
        return f"与{self.user_name}的私聊"

    @property
    def raw_text(self) -> str:
        """The job's own words, as stored when the rewrite cannot be trusted."""
        return "\n".join(part for part in (self.action_summary, self.new_info) if part)


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def build_job(context: Mapping[str, Any], **fields: Any) -> MemoryJob:
    """The one way the reply graph makes a memory job (hand-off, persona switch, tools):
    texts cut to the deployment's limits, so whatever observe accepted becomes a job that
    validates and can be stored. Raises like validation would for anything else."""
    limit = limits_in(context).max_text_chars
    fields["action_summary"] = cut(fields.get("action_summary", ""), limit)
    fields["new_info"] = cut(fields.get("new_info", ""), limit)
    fields["impression_update"] = cut(fields.get("impression_update", ""), MAX_IMPRESSION_CHARS)
    recent = fields.get("recent_messages") or []
    fields["recent_messages"] = [
        {**m, "content": cut(m["content"], MAX_RECENT_CHARS)} for m in recent
    ][-MAX_RECENT_MESSAGES:]
    return MemoryJob.model_validate(fields, context=dict(context))


class MemoryJobInput(TypedDict, total=False):
    """What a caller sends to the memory graph: one memory job (docs/contracts.md)."""

    request_id: str
    action_summary: str
    new_info: str
    user_id: str
    user_name: str
    platform: str
    chat_type: str
    chat_id: str | None
    chat_name: str | None
    persona_id: str
    timestamp: str | float
    recent_messages: list[dict[str, Any]]
    to: list[str]
    new_info_by: str
    key_facts: list[dict[str, str]]
    impression_update: str
    # The variants the job was queued with; in the state, the record of which variant ran
    # in each slot (the same, since the worker runs the job's).
    variants: Annotated[dict[str, str], merge_dicts]


class MemoryState(MemoryJobInput, total=False):
    job: MemoryJob  # validated once by intake (read it with current_job)
    persona_name: str
    text: str  # the latest rewrite (or the raw text when degraded)
    attempts: int  # rewrites done; the limit is Context.max_gate_attempts
    offending: list[str]  # the relative words the gate found in the latest rewrite
    reasons: list[str]  # everything the gate held against it ([] = passed)
    tried: Annotated[list[dict[str, Any]], operator.add]  # every rewrite judged, this run
    degraded: bool  # the stored text itself fails the gate (its reasons say why)
    written_by: str  # what wrote the stored text: a rewrite variant ("llm", "rules"), "raw"
    notes: list[str]  # how it came to be stored (a fallback, and what it stood in for)
    status: Literal["stored", "degraded"]
    profile: str  # what merge_profile did: "updated", "duplicate", "skipped: <why>"
    usage: Annotated[dict[str, Any], add_usage]  # model tokens (and cost) per node and in all


class MemoryOutput(TypedDict, total=False):
    request_id: str
    status: Literal["stored", "degraded"]
    text: str
    written_by: str
    notes: list[str]
    attempts: int
    offending: list[str]
    reasons: list[str]
    profile: str
    usage: dict[str, Any]
    variants: dict[str, str]


def memory_platforms(state: MemoryState, default: str) -> set[str]:
    """The platform a memory run acts on: its validated job's, else the one it was sent with
    (the deployment's default when it names none)."""
    if state.get("job") is not None:
        return {current_job(state).platform}
    platform: Any = state.get("platform")
    return {platform if isinstance(platform, str) and platform else default}


def job_variants(state: MemoryState) -> dict[str, str]:
    """The variants a job was queued with (none before intake has validated it)."""
    return current_job(state).variants if state.get("job") is not None else {}


def current_job(state: MemoryState) -> MemoryJob:
    """The job as intake validated it (rebuilt, not validated again, from a dict)."""
    job: Any = state["job"]
    return job if isinstance(job, MemoryJob) else MemoryJob.model_construct(**job)
