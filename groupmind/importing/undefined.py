"""Undefined's ``data/end_summaries.json``: what the bot did, one summary per conversation,
as event memories (docs/import.md).

The file is a JSON list. Older versions hold bare strings; newer ones objects
``{"summary", "timestamp" (ISO 8601), "location"?: {"type": "group"|"private", "name"}}``.
A location names its chat by display name only, so the operator maps names to chats
(``--map NAME=group:ID``); records that name no chat go to ``--chat``, when given. Records
carrying seed 003 §3.2's metadata (``request_type``, ``group_id``, ``user_id``,
``user_name``) need no map. The summary is the bot's own voice (我 = the bot): it is put in
absolute form as the rules historian would (names, not pronouns; dates, not 昨天).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from domain.scope import ChatScope
from groupmind.importing.report import Report
from nodes.deps import Deps
from nodes.memory.absolute import absolutize
from nodes.memory.coref import Scene
from nodes.memory.importance import importance
from state.validation import InputError
from stores.base import EventRecord

BATCH = 64  # events looked up together (Undefined keeps its last 200 summaries)


@dataclass(frozen=True)
class Target:
    """Where the records go: named chats, the chat of records that name none, the persona."""

    platform: str
    named: Mapping[str, ChatScope]
    default: ChatScope | None
    persona_id: str


def read_summaries(path: Path) -> list[Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(str(path), f"not a readable JSON file ({exc})") from None
    if not isinstance(data, list):
        raise InputError(str(path), f"expected a JSON list, got {type(data).__name__}")
    return data


def to_event(record: Any, target: Target, deps: Deps, file_time: float) -> EventRecord:
    """One record as an event, or InputError naming the record's field."""
    if isinstance(record, str):
        record = {"summary": record}
    if not isinstance(record, dict):
        raise InputError("record", f"expected a string or an object, got {type(record).__name__}")
    summary = record.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise InputError("summary", "missing or empty")
    when = _when(record, file_time)
    scope, user_id, user_name, chat_name = _scope(record, target)
    persona = deps.persona_name(target.persona_id)
    place = chat_name or (f"群{scope.chat_id}" if scope.chat_type == "group" else "")
    scene = Scene(
        when=when,
        speaker=persona,
        addressee=user_name or "大家",
        place_zh=place if scope.chat_type == "group" else f"与{user_name}的私聊",
        place_en=place or f"the private chat with {user_name}",
        names=tuple(n for n in (persona, user_name, chat_name) if n),
        others=(user_name,) if user_name else (),
    )
    text = absolutize(summary.strip(), scene)
    raw = json.dumps([scope.key, target.persona_id, when.isoformat(), summary], ensure_ascii=False)
    return EventRecord(
        id=f"undefined-{hashlib.sha1(raw.encode()).hexdigest()[:20]}",
        text=text,
        timestamp=when.timestamp(),
        user_id=user_id,
        user_name=user_name,
        platform=scope.platform,
        chat_type=scope.chat_type,
        chat_id=scope.chat_id,
        chat_name=chat_name,
        persona_id=target.persona_id,
        importance=importance(text),
    )


def _when(record: dict[str, Any], file_time: float) -> datetime:
    if "timestamp" not in record:  # a bare string: when the file was last written
        return datetime.fromtimestamp(file_time).astimezone()
    value = record["timestamp"]
    try:
        when = (
            datetime.fromtimestamp(float(value), UTC)
            if isinstance(value, int | float)
            else datetime.fromisoformat(str(value).strip())
        )
    except (ValueError, OverflowError, OSError):
        raise InputError("timestamp", f"{value!r} is not ISO 8601 or epoch seconds") from None
    return when if when.tzinfo else when.astimezone()


def _scope(record: dict[str, Any], target: Target) -> tuple[ChatScope, str, str, str]:
    """The record's chat, and who it was with (private) when known."""
    user_id = str(record.get("user_id") or "")
    user_name = str(record.get("user_name") or "")
    kind = record.get("request_type")
    if kind in ("group", "private"):  # seed 003 §3.2's metadata: the chat itself
        chat_id = str(record.get("group_id") or "") if kind == "group" else user_id
        if not chat_id:
            raise InputError("group_id" if kind == "group" else "user_id", "missing")
        name = str(record.get("group_name") or "") if kind == "group" else user_name
        scope = ChatScope(platform=target.platform, chat_type=kind, chat_id=chat_id)
        return scope, user_id, user_name, name
    location = record.get("location")
    if location is None:
        if target.default is None:
            raise InputError("location", "the record names no chat: pass --chat TYPE:ID")
        scope = target.default
    else:
        if not isinstance(location, dict) or location.get("type") not in ("group", "private"):
            raise InputError("location.type", f"expected group or private in {location!r}")
        name = str(location.get("name") or "").strip()
        scope = target.named.get(name)  # type: ignore[assignment]
        if scope is None:
            raise InputError(
                "location.name", f"{name!r} is not mapped: pass --map '{name}=TYPE:ID'"
            )
        if scope.chat_type != location["type"]:
            raise InputError(
                "location.type", f"{location['type']} chat {name!r} mapped to {scope.chat_type}"
            )
        if scope.chat_type == "private":
            return scope, scope.chat_id, user_name or name, name
        return scope, user_id, user_name, name
    if scope.chat_type == "private":
        return scope, scope.chat_id, user_name, user_name
    return scope, user_id, user_name, ""


def import_summaries(
    records: Sequence[Any],
    target: Target,
    deps: Deps,
    *,
    file_time: float,
    dry_run: bool = False,
    tick: Callable[[int], None] = lambda n: None,
) -> Report:
    """Each record once: events already stored (an earlier run, or one that crashed after
    some batches) are counted, not written again."""
    report = Report(dry_run=dry_run)
    events: list[EventRecord] = []
    for n, record in enumerate(records):
        try:
            events.append(to_event(record, target, deps, file_time))
        except (InputError, ValueError) as exc:
            error = exc if isinstance(exc, InputError) else InputError("record", str(exc))
            report.refuse(f"#{n}", error)
            tick(1)
    unique = list({e.id: e for e in events}.values())
    report.found("events", len(events) - len(unique))  # the same record twice in the file
    tick(len(events) - len(unique))
    for start in range(0, len(unique), BATCH):
        batch = unique[start : start + BATCH]
        # whole on both sides; one a crash left in Chroma only is written again
        stored = deps.events.stored([e.id for e in batch])
        new = [e for e in batch if e.id not in stored]
        for event in [] if dry_run else new:
            deps.events.upsert(event)  # embedded and stored on both sides, one by one
        report.add("events", len(new))
        report.found("events", len(stored))
        tick(len(batch))
    return report
