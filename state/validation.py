"""Shared input validation: ids, timestamps and readable errors that name the field."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime, tzinfo
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ValidationError, ValidationInfo

MAX_ID_CHARS = 128
EARLIEST = datetime(1990, 1, 1, tzinfo=UTC).timestamp()
LATEST = datetime(2200, 1, 1, tzinfo=UTC).timestamp()


class InputError(ValueError):
    """Bad input: the message names the field and the reason."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def describe_validation_error(exc: ValidationError) -> str:
    """One line per problem, ``field: reason``, in the order pydantic found them."""
    parts = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "input"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing":
            msg = "missing (required)"
        parts.append(f"{field}: {msg}")
    return "; ".join(parts)


M = TypeVar("M", bound=BaseModel)


def validated(model: type[M], raw: Any, what: str, context: Mapping[str, Any]) -> M:
    """``raw`` as ``model``, or an InputError naming ``what`` and every field at fault."""
    if not isinstance(raw, dict):
        raise InputError(what, f"must be a JSON object, got {type(raw).__name__}")
    try:
        return model.model_validate(raw, context=dict(context))
    except ValidationError as exc:
        raise InputError(what, describe_validation_error(exc)) from None


def _known_chat_type(value: Any) -> Any:
    if value not in ("group", "private"):
        raise ValueError(f"unknown chat type {value!r} (expected 'group' or 'private')")
    return value


ChatTypeField = Annotated[Literal["group", "private"], BeforeValidator(_known_chat_type)]


def as_id(value: Any, field: str) -> str:
    """Ids arrive as strings or numbers from bots; store them as trimmed strings."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"must be a string or an integer, got {type(value).__name__}")
    text = str(value).strip()
    if not text:
        raise ValueError("must not be empty")
    if len(text) > MAX_ID_CHARS:
        raise ValueError(f"is {len(text)} characters, over the limit of {MAX_ID_CHARS}")
    if any(ch in text for ch in "\x00\n\r\t"):
        raise ValueError("contains control characters")
    return text


def parse_timestamp(value: Any, tz: tzinfo) -> datetime:
    """ISO 8601 (an offset is expected; a naive time is read in ``tz``) or epoch seconds."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"unparseable timestamp {value!r}")
    if isinstance(value, int | float) or (isinstance(value, str) and _is_number(value)):
        seconds = float(value)
        if not math.isfinite(seconds) or not EARLIEST <= seconds <= LATEST:
            raise ValueError(f"epoch seconds {value!r} out of range")
        return datetime.fromtimestamp(seconds, tz)
    if not isinstance(value, str):
        raise ValueError(f"unparseable timestamp {value!r}")
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(
            f"unparseable timestamp {value!r} (expected ISO 8601 with offset or epoch seconds)"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=tz)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def context_tz(info: ValidationInfo) -> tzinfo:
    ctx = info.context or {}
    tz = ctx.get("tz")
    return tz if isinstance(tz, tzinfo) else UTC


def context_limit(info: ValidationInfo, key: str, default: int) -> int:
    ctx = info.context or {}
    value = ctx.get(key, default)
    return int(value)
