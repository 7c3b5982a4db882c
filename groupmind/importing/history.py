"""A chat history as stored messages and memory jobs (docs/import.md): OneBot v11 message
events (a JSON list, ``get_group_msg_history``'s answer, or one event per line) or JSON
lines of groupmind's input messages.

Messages are stored as the reply graph stores them (the bot's own lines as the bot's), and
each chat's history is cut into buffers of ``CHAT_STATES__BUFFER_MAX`` messages, each handed off
as the graph hands off a full buffer: one memory job per person who spoke in it. Buffers,
and so job ids, follow from the file alone: a second run, or one after a crash, stores and
queues only what is missing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from groupmind.importing.contract import read_json, read_lines
from groupmind.importing.report import Report
from groupmind.onebot.events import Malformed, to_message
from nodes.deps import ReplyDeps
from nodes.reply.arrivals import pending_of, stored_message
from nodes.reply.hand_off import enqueue, jobs_from_buffer
from nodes.reply.observe import validate_message
from state.reply import ChatMessage
from state.validation import InputError, describe_validation_error


@dataclass(frozen=True)
class Source:
    platform: str  # OneBot events carry none
    self_id: str | None  # the bot's own QQ number in OneBot events (else each event's)


def read_records(path: Path) -> list[Any]:
    """The file's records: a JSON list (or an action's answer holding one), else JSON
    lines, each line's own (a line that does not decode or parse is that record's error)."""
    try:
        data = read_json(path)
    except ValueError:  # not one JSON value: JSON lines
        return list(read_lines(path))
    if isinstance(data, dict):  # an action's answer: {"data": {"messages": [...]}}
        inner = data.get("data", data)
        data = inner.get("messages") if isinstance(inner, dict) else inner
    if not isinstance(data, list):
        raise InputError(str(path), "expected a list of messages (or {data: {messages: [...]}})")
    return data


def message_of(record: Any, source: Source, deps: ReplyDeps) -> ChatMessage:
    """A record as a validated input message, or InputError naming the field."""
    if isinstance(record, InputError):
        raise record
    if not isinstance(record, dict):
        raise InputError("record", f"expected an object, got {type(record).__name__}")
    raw = record
    if "message_type" in record:  # a OneBot event
        self_id = source.self_id or str(record.get("self_id") or "")
        if not self_id:
            raise InputError("self_id", "missing: pass --self-id (the bot's own account)")
        try:
            raw = to_message(
                record, self_id=self_id, bot_id=deps.limits.bot_id, platform=source.platform
            )
        except Malformed as exc:
            field, _, reason = str(exc).partition(": ")
            raise InputError(field, reason) from None
        if str(record.get("user_id")) == self_id:
            raw["user_id"] = deps.limits.bot_id  # the bot's own line, as the bridge stores it
    try:
        return validate_message(raw, deps)
    except ValidationError as exc:
        raise InputError("message", describe_validation_error(exc)) from None


def import_history(
    records: list[Any],
    source: Source,
    deps: ReplyDeps,
    *,
    dry_run: bool = False,
    tick: Callable[[int], None] = lambda n: None,
) -> tuple[Report, list[str]]:
    """Store the messages and queue the jobs that are missing; returns the report and the
    ids of every job the history makes (those queued before included: a crashed run's
    jobs are run by the next)."""
    report = Report(dry_run=dry_run)
    chats: dict[tuple[str, str], list[tuple[int, ChatMessage]]] = defaultdict(list)
    for n, record in enumerate(records):
        try:
            msg = message_of(record, source, deps)
        except InputError as exc:
            report.refuse(_name(n, record), exc)
            tick(1)
            continue
        chats[(msg.stream, msg.persona_id)].append((n, msg))
    job_ids: list[str] = []
    size = deps.knobs.chat_rules.buffer_max
    for messages in chats.values():
        ordered = [m for _, m in sorted(messages, key=lambda nm: (nm[1].when, nm[0]))]
        for start in range(0, len(ordered), size):
            buffer = ordered[start : start + size]
            _store(buffer, deps, report, dry_run)
            job_ids += _queue(buffer, deps, report, dry_run)
            tick(len(buffer))
    return report, job_ids


def _store(buffer: list[ChatMessage], deps: ReplyDeps, report: Report, dry_run: bool) -> None:
    first = buffer[0]
    have = {
        m.message_id
        for m in deps.messages.get(first.stream, first.persona_id, [m.message_id for m in buffer])
    }
    for msg in buffer:
        if msg.message_id in have:
            report.found("messages")
            continue
        if not dry_run:
            deps.messages.add(stored_message(msg, msg.mentions, from_bot=_from_bot(msg, deps)))
        report.add("messages")


def _queue(buffer: list[ChatMessage], deps: ReplyDeps, report: Report, dry_run: bool) -> list[str]:
    pending = [pending_of(m, deps, from_bot=_from_bot(m, deps)) for m in buffer]
    jobs = jobs_from_buffer(pending, buffer[-1], buffer[-1].persona_id, deps.validation)
    new = [job for job in jobs if deps.jobs.get(job.request_id) is None]
    if not dry_run:
        enqueue(deps, new)
    report.add("jobs", len(new))
    report.found("jobs", len(jobs) - len(new))
    return [job.request_id for job in jobs]


def _from_bot(msg: ChatMessage, deps: ReplyDeps) -> bool:
    return msg.user_id == deps.limits.bot_id


def _name(n: int, record: Any) -> str:
    message_id = record.get("message_id") if isinstance(record, dict) else None
    return f"#{n}" + (f" (message_id {message_id})" if message_id is not None else "")
