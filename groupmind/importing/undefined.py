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
from datetime import datetime
from pathlib import Path
from typing import Any

from domain.scope import ChatScope
from groupmind.importing.contract import (
    MAX_CHAT_NAME_CHARS,
    a_name,
    a_platform,
    a_text,
    a_time,
    an_id,
    read_json,
)
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
        data = read_json(path)
    except ValueError as exc:  # a file that is not JSON at all: nothing to read
        raise InputError(str(path), str(exc)) from None
    if not isinstance(data, list):
        raise InputError(str(path), f"expected a JSON list, got {type(data).__name__}")
    return data


def to_event(record: Any, target: Target, deps: Deps, file_time: float) -> EventRecord:
    """One record as an event, or InputError naming the record's field (the input
    contract: ``groupmind.importing.contract``)."""
    if isinstance(record, str):
        record = {"summary": record}
    if not isinstance(record, dict):
        raise InputError("record", f"expected a string or an object, got {type(record).__name__}")
    summary = a_text(record.get("summary"), "summary", deps.limits) if "summary" in record else ""
    if not summary:
        raise InputError("summary", "missing or empty")
    when = _when(record, file_time, deps)
    scope, user_id, user_name, chat_name = _scope(record, target)
    persona = deps.persona_name(target.persona_id, summary)
    place = chat_name or (f"群{scope.chat_id}" if scope.chat_type == "group" else "")
    scene = Scene(
        when=when,
        speaker=persona,
        addressee=user_name or "大家",
        place_zh=place if scope.chat_type == "group" else f"与{user_name}的私聊",
        place_en=place or f"the private chat with {user_name}",
        names=tuple(n for n in (persona, user_name, chat_name) if n),
        others=(user_name,) if user_name else (),
        here_of=user_name or place,  # the bot has no place: its company's, or the chat
    )
    text = absolutize(summary, scene)
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


def _when(record: dict[str, Any], file_time: float, deps: Deps) -> datetime:
    if "timestamp" not in record:  # a bare string: when the file was last written
        return a_time(file_time, "timestamp", deps.limits.tz)
    return a_time(record["timestamp"], "timestamp", deps.limits.tz)


def _scope(record: dict[str, Any], target: Target) -> tuple[ChatScope, str, str, str]:
    """The record's chat, and who it was with (private) when known; a chat the record
    states itself that contradicts the one ``--map`` gives it is refused."""
    user_id = an_id(record["user_id"], "user_id") if record.get("user_id") else ""
    user_name = a_name(record["user_name"], "user_name") if record.get("user_name") else ""
    if record.get("platform") not in (None, "", target.platform):
        found = a_platform(record["platform"])
        raise InputError("platform", f"{found!r} is not the import's ({target.platform!r})")
    own = _own_chat(record, target, user_id)
    location = record.get("location")
    if location is None:
        if own is not None:
            return own, user_id, user_name, _own_name(record, own, user_name)
        if target.default is None:
            raise InputError("location", "the record names no chat: pass --chat TYPE:ID")
        scope = target.default
        if scope.chat_type == "private":
            return scope, scope.chat_id, user_name, user_name
        return scope, user_id, user_name, ""
    if not isinstance(location, dict) or location.get("type") not in ("group", "private"):
        raise InputError("location.type", f"expected group or private in {location!r}")
    name = a_name(location.get("name") or "", "location.name", MAX_CHAT_NAME_CHARS)
    mapped = target.named.get(name)
    if mapped is None:
        raise InputError("location.name", f"{name!r} is not mapped: pass --map '{name}=TYPE:ID'")
    if mapped.chat_type != location["type"]:
        raise InputError(
            "location.type", f"{location['type']} chat {name!r} mapped to {mapped.chat_type}"
        )
    if own is not None and own != mapped:
        raise InputError("group_id", f"the record's chat {own.key} is not {mapped.key}, which "
                         f"--map gives {name!r}")  # fmt: skip
    if mapped.chat_type == "private":
        return mapped, mapped.chat_id, user_name or name, name
    return mapped, user_id, user_name, name


def _own_chat(record: dict[str, Any], target: Target, user_id: str) -> ChatScope | None:
    """The chat seed 003 §3.2's metadata names (``request_type``, ``group_id``), if any."""
    kind = record.get("request_type")
    if kind not in ("group", "private"):
        return None
    if kind == "group":
        chat_id = an_id(record.get("group_id") or "", "group_id")
    elif not user_id:
        raise InputError("user_id", "missing (a private chat's id is its user's)")
    else:
        chat_id = user_id
    return ChatScope(platform=target.platform, chat_type=kind, chat_id=chat_id)


def _own_name(record: dict[str, Any], own: ChatScope, user_name: str) -> str:
    if own.chat_type == "private":
        return user_name
    name = record.get("group_name")
    return a_name(name, "group_name", MAX_CHAT_NAME_CHARS) if name else ""


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
        except (InputError, ValueError) as exc:  # a ValueError left: an id no store keeps
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
