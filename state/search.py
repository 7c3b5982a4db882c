"""A search request (CLI options or one line of ``search --batch``), validated."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from domain.limits import Limits
from state.validation import (
    ChatTypeField,
    Text,
    as_id,
    as_key_part,
    context_limits,
    context_tz,
    parse_timestamp,
    validated,
)
from stores.base import EventQuery


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    query: Text = Field(min_length=1, max_length=2000)
    platform: str = Field(min_length=1, max_length=64)
    chat_type: ChatTypeField
    chat_id: str
    user_id: str | None = None
    persona: str | None = None
    top_k: int = Field(default=5, ge=1, le=200)
    time_from: float | None = Field(default=None, alias="from")
    time_to: float | None = Field(default=None, alias="to")

    @field_validator("platform", mode="before")
    @classmethod
    def _platform(cls, value: Any, info: ValidationInfo) -> str:
        if value is None or value == "":
            return context_limits(info).default_platform
        return as_key_part(value, "platform")

    @field_validator("chat_id", "user_id", mode="before")
    @classmethod
    def _ids(cls, value: Any) -> str | None:
        return None if value is None else as_id(value, "id")

    @field_validator("persona", mode="before")
    @classmethod
    def _persona(cls, value: Any) -> str | None:
        return None if value is None else as_key_part(value, "persona")

    @field_validator("time_from", "time_to", mode="before")
    @classmethod
    def _time(cls, value: Any, info: ValidationInfo) -> float | None:
        return None if value is None else parse_timestamp(value, context_tz(info)).timestamp()


def build_query(raw: Any, limits: Limits) -> EventQuery:
    """A search from CLI options or a batch line; ``platform`` defaults to the deployment's."""
    context = {"limits": limits}
    fields = {"platform": None, **raw} if isinstance(raw, dict) else raw
    req = validated(SearchRequest, fields, "search", context)
    return EventQuery(
        text=req.query,
        platform=req.platform,
        chat_type=req.chat_type,
        chat_id=req.chat_id,
        persona_id=req.persona,
        user_id=req.user_id,
        top_k=req.top_k,
        time_from=req.time_from,
        time_to=req.time_to,
    )
