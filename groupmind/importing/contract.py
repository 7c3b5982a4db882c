"""The input contract, for imports: every imported text, time and id goes through the
validators messages and memory jobs go through (``state.validation``), and a failure is an
``InputError`` naming the record's field. Files are read the same way by every importer:
a BOM is taken, a line that does not decode or parse is that line's error, JSON nested
past any real record's depth is refused, not a traceback."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any, TypeVar

from domain.limits import Limits
from domain.scope import ChatScope
from state.validation import InputError, as_id, as_key_part, clean, limited_text, parse_timestamp

T = TypeVar("T")
MAX_PLATFORM_CHARS = 64
MAX_NAME_CHARS = 128  # a person's name or card, as a message's user_name
MAX_CHAT_NAME_CHARS = 256
MAX_FILE_BYTES = 512 * 1024 * 1024  # a file read whole (JSON); lines are streamed


def field(name: str, check: Callable[[], T]) -> T:
    """``check()``, its ValueError as an InputError naming the field."""
    try:
        return check()
    except InputError:
        raise
    except ValueError as exc:
        raise InputError(name, str(exc)) from None


def an_id(value: Any, name: str) -> str:
    return field(name, lambda: as_id(value, name))


def a_platform(value: Any, name: str = "platform") -> str:
    def check() -> str:
        text = as_key_part(value, name)
        if len(text) > MAX_PLATFORM_CHARS:
            raise ValueError(f"is {len(text)} characters, over the limit of {MAX_PLATFORM_CHARS}")
        return text

    return field(name, check)


def a_text(value: Any, name: str, limits: Limits) -> str:
    """What someone said or the bot remembered: within the limit, storable, trimmed."""
    return field(name, lambda: limited_text(value, limits.max_text_chars).strip())


def a_name(value: Any, name: str, limit: int = MAX_NAME_CHARS) -> str:
    """A name (one line), as a message's ``user_name`` is held to."""

    def check() -> str:
        text = limited_text(str(value), limit, multiline=False).strip()
        return clean(text, multiline=False)

    return field(name, check)


def a_time(value: Any, name: str, tz: tzinfo) -> datetime:
    """ISO 8601 or epoch seconds, 1990 to 2200, as every input's timestamp."""
    return field(name, lambda: parse_timestamp(value, tz))


def a_chat(value: str, platform: str, name: str = "--chat") -> ChatScope:
    """``group:1001`` or ``private:42`` on ``platform``, its id normalised as input ids are
    (``group: 1001`` is ``group:1001``)."""
    kind, sep, chat_id = value.partition(":")
    if not sep or kind.strip() not in ("group", "private"):
        raise InputError(name, f"{value!r}: expected group:ID or private:USER_ID")
    return ChatScope(platform=platform, chat_type=kind.strip(), chat_id=an_id(chat_id, name))  # type: ignore[arg-type]


def chat_map(pairs: list[str], platform: str) -> dict[str, ChatScope]:
    """``NAME=group:1001`` pairs: which chat a record's chat name means; a name given
    twice is an error (which one was meant?)."""
    named: dict[str, ChatScope] = {}
    for pair in pairs:
        name, sep, chat = pair.rpartition("=")
        if not sep or not name.strip():
            raise InputError("--map", f"{pair!r}: expected NAME=group:ID or NAME=private:ID")
        name = name.strip()
        if name in named:
            raise InputError("--map", f"{name!r} is mapped twice: give each name one chat")
        named[name] = a_chat(chat, platform, "--map")
    return named


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deep to be a record") from None


def read_json(path: Path) -> Any:
    """A whole JSON file (a BOM taken), or InputError naming the file; JSON that does not
    parse raises ValueError (the caller may read it as lines instead)."""
    size = _size(path)
    if size > MAX_FILE_BYTES:
        raise InputError(str(path), f"{size} bytes, over the limit of {MAX_FILE_BYTES}")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 ({exc})") from None
    try:
        return _parsed(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg})") from None


def read_lines(path: Path, what: str = "line") -> Iterator[Any]:
    """A JSON-lines file, streamed: each line's value, or an InputError (naming ``what``)
    for a line that does not decode or parse (that line is refused; the rest go on)."""
    _size(path)
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, 1):
            if n == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")
            if not raw.strip():
                continue
            try:
                yield _parsed(raw.decode("utf-8"))
            except UnicodeDecodeError:
                yield InputError(what, f"not UTF-8, line {n}")
            except json.JSONDecodeError as exc:
                yield InputError(what, f"not JSON ({exc.msg}), line {n}")
            except ValueError as exc:
                yield InputError(what, f"{exc}, line {n}")


def _size(path: Path) -> int:
    try:
        if not path.is_file():
            raise InputError(str(path), "no such file")
        return path.stat().st_size
    except OSError as exc:
        raise InputError(str(path), f"not readable ({exc.strerror})") from None
