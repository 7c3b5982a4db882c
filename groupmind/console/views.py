"""What each page shows, read from one bot's stores (the deps of the bot the request's key
names: every read below is that bot's only, in the scope the page names)."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, case, func, select

from domain.scope import ChatScope
from groupmind.experiment.report import table
from groupmind.profiles import profile_json
from nodes.deps import ReplyDeps
from stores.base import EventQuery, EventRecord, profile_view, usage_id
from stores.sql.chats import chat_overview
from stores.sql.covered import mine
from stores.sql.schema import LearnedProfileRow, MessageRow

PAGE = 50  # rows a page shows: chats, a chat's messages


def chats(
    engine: Engine, bot: str, only: ChatScope | None = None, platforms: frozenset[str] | None = None
) -> list[dict[str, Any]]:
    """The bot's chats, newest first; ``platforms``: only those (a key's own)."""
    found = [asdict(c) for c in chat_overview(engine, bot, only)]
    if platforms is None:
        return found
    return [c for c in found if c["stream"].split(":", 1)[0] in platforms]


def paged(rows: list[Any], page: int, size: int = PAGE) -> tuple[list[Any], int]:
    """The rows of one page (1-based, clamped) and how many pages there are."""
    pages = max(1, -(-len(rows) // size))
    page = min(max(page, 1), pages)
    return rows[(page - 1) * size : page * size], pages


def person_chats(engine: Engine, bot: str, platform: str, user_id: str) -> list[str]:
    """Every chat of the platform where the person spoke or something was learned of them:
    what forgetting them everywhere on it reaches."""
    with engine.connect() as conn:
        spoke = conn.execute(
            select(MessageRow.stream).distinct().where(
                mine(MessageRow, bot), MessageRow.platform == platform,
                MessageRow.user_id == user_id,
            )
        ).scalars()  # fmt: skip
        learned = conn.execute(
            select(LearnedProfileRow.chat_type, LearnedProfileRow.chat_id).where(
                mine(LearnedProfileRow, bot), LearnedProfileRow.platform == platform,
                LearnedProfileRow.user_id == user_id,
            )
        )  # fmt: skip
        keys = {*spoke, *(f"{platform}:{t}:{c}" for t, c in learned)}
    return sorted(keys)


def chat_messages(
    deps: ReplyDeps, stream: str, persona_id: str, before_seq: int | None = None,
    limit: int = PAGE,
) -> list[dict[str, Any]]:  # fmt: skip
    """A page of a chat's messages (the latest, or those stored before ``before_seq``),
    each with what its reply was given and decided (the context-usage record), the
    memories named by their text."""
    messages = deps.messages.older(stream, persona_id, before_seq=before_seq, limit=limit)
    # One read of the records and one of the memories for the page, not two per message.
    keys = {m.message_id: usage_id(stream, persona_id, m.message_id) for m in messages}
    usages = deps.context_usage.get_many([keys[m.message_id] for m in messages if not m.from_bot])
    named = {i for u in usages.values() for i in u.memory_ids}
    memories = {e.id: e.text for e in deps.events.get(sorted(named))} if named else {}
    rows = []
    for m in messages:
        row: dict[str, Any] = {**asdict(m), "usage": None}
        usage = None if m.from_bot else usages.get(keys[m.message_id])
        if usage is not None:
            row["usage"] = {
                "action": usage.action,
                "reason": usage.reason,
                "context": [(i, usage.relevance_scores.get(i)) for i in usage.context_message_ids],
                "memories": [(i, memories.get(i, "")) for i in usage.memory_ids],
                "reply": usage.llm_response or "",
            }
        rows.append(row)
    return rows


def memories(
    deps: ReplyDeps, scope: ChatScope, query: str, persona_id: str | None, top_k: int = 20
) -> list[dict[str, Any]]:
    """Search within one chat (the same scope rules as every search): each event with its
    status, age, weight and source."""
    if not query.strip():
        return []
    q = EventQuery.within(scope, query, persona_id=persona_id, top_k=top_k)
    hits = deps.events.search(q)
    return [event_row(deps, h.event, h.score) for h in hits]


def event_row(deps: ReplyDeps, event: EventRecord, score: float | None = None) -> dict[str, Any]:
    found = deps.events.strengths([event.id]).get(event.id)
    job = deps.jobs.get(event.id)
    result = (job.result or {}) if job is not None else {}
    sources = (job.payload.get("recent_messages") or []) if job is not None else []
    return {
        "id": event.id,
        "text": event.text,
        "score": score,
        "user": event.user_name or event.user_id,
        "status": "degraded" if event.degraded else "stored",
        "why": "; ".join(result.get("reasons") or result.get("offending") or [])
        if event.degraded
        else "",
        "age_days": round((time.time() - event.timestamp) / 86400, 1),
        "importance": event.importance,
        "recalls": found.recalls if found else 0,
        "pinned": found.pinned if found else False,
        "said": (job.payload.get("new_info") or "") if job is not None else "",
        "sources": sources,
        "answered": event.context,
    }


def person(
    deps: ReplyDeps, platform: str, user_id: str, shown_in: ChatScope | None
) -> dict[str, Any] | None:
    data = profile_json(deps, platform, user_id, None)
    if data is None:
        return None
    if shown_in is not None:
        view = profile_view(deps.profiles, user_id, shown_in, deps.limits.profile_sharing)
        data["view"] = {"chat": shown_in.key, "sharing": deps.limits.profile_sharing,
                        "learned_in": [lp.scope.key for lp in view.learned],
                        "key_facts": view.key_facts}  # fmt: skip
    return data


def status(deps: ReplyDeps, engine: Engine, window_s: float = 600.0) -> dict[str, Any]:
    """Counts that a replayed chat moves: users' messages and the bot's replies (totals, and
    per minute over the last ten minutes by message time), the queue, the memories."""
    recent = func.sum(case((MessageRow.timestamp >= time.time() - window_s, 1), else_=0))
    with engine.connect() as conn:
        said = {
            from_bot: (int(total), int(late or 0))
            for from_bot, total, late in conn.execute(
                select(MessageRow.from_bot, func.count(), recent)
                .where(mine(MessageRow, deps.limits.bot_id))
                .group_by(MessageRow.from_bot)
            )
        }
    (messages, new), (replies, answered) = said.get(False, (0, 0)), said.get(True, (0, 0))
    minutes = window_s / 60
    return {
        "messages": messages,
        "replies": replies,
        "messages_per_minute": round(new / minutes, 2),
        "replies_per_minute": round(answered / minutes, 2),
        "jobs": deps.jobs.counts(),
        "memories": deps.events.count(),
    }


def experiments(folder: Path, bot: str) -> list[dict[str, Any]]:
    """The reports ``groupmind experiment`` wrote for this bot (newest first), each with its
    comparison table."""
    found = []
    for path in sorted(folder.glob("*/report.json"), key=lambda p: -p.stat().st_mtime):
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
            if report.get("bot") != bot:
                continue
            head, rows = table(report)
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a report being written, or of another version: not shown
        found.append({"folder": path.parent.name, "report": report, "head": head, "rows": rows,
                      "plot": (path.parent / "report.svg").exists()})  # fmt: skip
    return found
