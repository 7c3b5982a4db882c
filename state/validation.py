"""Shared input validation: ids, timestamps and readable errors that name the field."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime, tzinfo
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ValidationError, ValidationInfo

from domain.limits import DEFAULTS, Limits
from domain.scope import DEFAULT_PERSONA, KEY_SEPARATOR

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
        field = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing":
            msg = "missing (required)"
        # a model's own check (no field of its own) says in its message what it is about
        parts.append(f"{field}: {msg}" if field else msg)
    return "; ".join(parts)


M = TypeVar("M", bound=BaseModel)


def validated(model: type[M], raw: Any, what: str, context: Mapping[str, Any]) -> M:
    """``raw`` as ``model``, or an InputError naming ``what`` and every field at fault; a
    ``model`` already (validated at the caller's edge) is taken as it is."""
    if isinstance(raw, model):
        return raw
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


# NUL, C0/C1 control characters (but tab and newlines in text) and lone surrogates: no
# backend stores them all (PostgreSQL refuses NUL, SQLite and JSON choke on surrogates).
_NEVER = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_BREAKS = re.compile("[\t\n\r]")


def clean(text: str, *, multiline: bool) -> str:
    """``text`` unchanged, or a ValueError naming the first character no store can keep."""
    bad = _NEVER.search(text) or (None if multiline else _BREAKS.search(text))
    if bad:
        kind = "a lone surrogate" if "\ud800" <= bad.group() <= "\udfff" else "a control character"
        raise ValueError(f"contains {kind} ({bad.group()!r}) at position {bad.start()}")
    return text


def _line(value: str) -> str:
    return clean(value, multiline=False)


def _text(value: str) -> str:
    return clean(value, multiline=True)


Line = Annotated[str, AfterValidator(_line)]  # names: one line, printable
Text = Annotated[str, AfterValidator(_text)]  # what people say: newlines and tabs allowed


def limited_text(value: Any, limit: int, *, multiline: bool = True) -> str:
    """What people say, as every input carries it (a message's content, a job's texts, an
    import's): a string within the deployment's limit that every store can keep; over the
    limit it is refused, never cut."""
    if not isinstance(value, str):
        raise ValueError(f"must be a string, got {type(value).__name__}")
    if len(value) > limit:
        raise ValueError(f"is {len(value)} characters, over the limit of {limit}")
    return clean(value, multiline=multiline)


def as_id(value: Any, field: str) -> str:
    """Ids arrive as strings or numbers from bots; store them as trimmed strings."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"must be a string or an integer, got {type(value).__name__}")
    text = str(value).strip()
    if not text:
        raise ValueError("must not be empty")
    if len(text) > MAX_ID_CHARS:
        raise ValueError(f"is {len(text)} characters, over the limit of {MAX_ID_CHARS}")
    return clean(text, multiline=False)


def as_ids(value: Any, field: str, limit: int) -> list[str]:
    """A list of user ids (None: none), each as ``as_id`` makes it, at most ``limit``."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"must be a list of user ids, got {type(value).__name__}")
    if len(value) > limit:
        raise ValueError(f"has {len(value)} ids, over the limit of {limit}")
    return [as_id(v, field) for v in value]


def as_key_part(value: Any, field: str) -> str:
    """A platform or persona id: an id that also stands in chat keys, so it may not hold
    the key separator (two chats would otherwise share a key)."""
    text = as_id(value, field)
    if KEY_SEPARATOR in text:
        raise ValueError(f"must not contain {KEY_SEPARATOR!r} (it separates the parts of a key)")
    return text


def chat_id_of(value: Any, info: ValidationInfo) -> str | None:
    """docs/contracts.md: a group needs its id; a private chat's id is the user's (it defaults to
    it, and another id is refused, except on the bot's own messages fed back)."""
    chat_type, user_id = info.data.get("chat_type"), info.data.get("user_id")
    chat_id = None if value is None or value == "" else as_id(value, "chat_id")
    if chat_type == "group" and chat_id is None:
        raise ValueError("missing (required for a group chat)")
    if chat_type == "private" and user_id is not None:
        if chat_id is None:
            return str(user_id)
        bot = context_limits(info).bot_id
        if chat_id != user_id and user_id != bot:
            raise ValueError(f"a private chat's id is the user's id ({user_id!r}), got {chat_id!r}")
    return chat_id


def parse_timestamp(value: Any, tz: tzinfo) -> datetime:
    """ISO 8601 (an offset is expected; a naive time is read in ``tz``) or epoch seconds."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"unparseable timestamp {value!r}")
    if isinstance(value, int | float) or (isinstance(value, str) and _is_number(value)):
        seconds = float(value)
        if not math.isfinite(seconds) or not EARLIEST <= seconds <= LATEST:
            raise ValueError(f"epoch seconds {value!r} out of range (1990 to 2200)")
        return datetime.fromtimestamp(seconds, tz)
    if not isinstance(value, str):
        raise ValueError(f"unparseable timestamp {value!r}")
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(
            f"unparseable timestamp {value!r} (expected ISO 8601 with offset or epoch seconds)"
        ) from None
    parsed = parsed if parsed.tzinfo else parsed.replace(tzinfo=tz)
    try:
        seconds = parsed.timestamp()
    except (OverflowError, ValueError):
        seconds = math.nan
    if not EARLIEST <= seconds <= LATEST:
        raise ValueError(f"timestamp {value!r} out of range (1990 to 2200)")
    return parsed


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def limits_in(context: Mapping[str, Any] | None) -> Limits:
    """The deployment's limits a validation context carries (``Deps.validation``), or the
    defaults when it carries none."""
    limits = (context or {}).get("limits", DEFAULTS)
    if not isinstance(limits, Limits):
        raise TypeError(f"validation context: limits is a {type(limits).__name__}, not Limits")
    return limits


def context_limits(info: ValidationInfo) -> Limits:
    return limits_in(info.context)


def context_tz(info: ValidationInfo) -> tzinfo:
    return context_limits(info).tz


def persona_of(value: Any, info: ValidationInfo) -> str:
    """The persona named, else the one that serves this chat (the validation context's
    ``persona_for(platform, chat_type, chat_id)``: the operator's personas file), else
    ``DEFAULT_PERSONA``."""
    if value is not None and value != "":
        return as_key_part(value, "persona_id")
    choose = (info.context or {}).get("persona_for")
    data = info.data
    if callable(choose) and all(data.get(k) for k in ("platform", "chat_type", "chat_id")):
        return str(choose(data["platform"], data["chat_type"], data["chat_id"]))
    return DEFAULT_PERSONA
