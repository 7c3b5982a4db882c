"""Settings the nodes read (seed 002 and 004 knobs): plain pydantic models, filled from
the deployment's settings (``groupmind.settings``) under ``GROUPMIND_RANK__*`` and
``GROUPMIND_CHAT_STATES__*``."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# How structured answers are asked of the model (nodes/model.py); auto tries each in turn.
StructuredMode = Literal["auto", "json_schema", "function_calling", "json_mode"]


class RankWeights(BaseModel):
    """seed 004 §3.2: the five features and their default weights."""

    model_config = ConfigDict(frozen=True)

    reply_chain: float = Field(default=0.4, ge=0, description="in the message's reply chain")
    user_continuity: float = Field(default=0.15, ge=0, description="the author's own lines")
    time_decay: float = Field(default=0.2, ge=0, description="recent, in seconds and messages")
    mention_relation: float = Field(default=0.15, ge=0, description="who mentions whom")
    keyword_overlap: float = Field(default=0.1, ge=0, description="words shared")


class RankSettings(BaseModel):
    """seed 004 §6.1: context selection (GROUPMIND_RANK__THRESHOLD, ...)."""

    model_config = ConfigDict(frozen=True)

    weights: RankWeights = Field(default=RankWeights(), description="seed 004's weights")
    # The seed's 0.3 keeps ~1 message with these features (IRC dev: the parent in it 62%
    # of the time); 0.15 keeps ~7.5 (the parent in it 93.5%) at ~15% of the window's tokens.
    threshold: float = Field(
        default=0.15, ge=0, le=1, description="a candidate's score to be kept (the seed: 0.3)"
    )
    max_messages: int = Field(default=20, ge=1, le=200, description="messages kept at most")
    window_hours: float = Field(default=24.0, gt=0, description="candidates: the last hours")
    window_max: int = Field(default=50, ge=1, le=500, description="… and at most this many")
    chain_max: int = Field(default=15, ge=0, le=200, description="reply-chain candidates")
    half_life_s: float = Field(default=1800.0, gt=0, description="time_decay's clock half-life")
    timeout_ms: float = Field(
        default=200.0, gt=0, description="past it, the most recent messages, saying why"
    )


class ChatRules(BaseModel):
    """seed 002: chat states, willingness, re-planning, buffers, tools."""

    model_config = ConfigDict(frozen=True)

    focus_interest: float = Field(default=0.7, ge=0, le=1, description="CHAT -> FOCUSED")
    focused_cap: int = Field(default=3, ge=0, description="chats FOCUSED at once")
    absent_after_no_reply: int = Field(default=5, ge=1, description="FOCUSED -> ABSENT")
    willingness_chat: float = Field(
        default=0.3,
        ge=0,
        le=1,
        description="the `rules` plan answers a message nobody addressed to the bot with "
        "chance interest × willingness (+0.2 for a question), by a die seeded with the "
        "message id",
    )
    willingness_focused: float = Field(default=0.8, ge=0, le=1, description="the same, FOCUSED")
    interest_half_life_s: float = Field(
        default=900.0, gt=0, description="a chat's interest halves in this without messages"
    )
    max_replans: int = Field(
        default=2, ge=0, le=10, description="plans again when newer messages came meanwhile"
    )
    buffer_max: int = Field(default=20, ge=1, description="hand off after this many messages")
    max_tool_rounds: int = Field(default=3, ge=0, le=10, description="tool rounds of reply=llm")
    allow_cross_scope_search: bool = Field(
        default=False, description="let search_events read other groups of the same platform"
    )
