"""hand_off: write the exchange's memory jobs to the durable queue, store the bot's reply
as a message, record the context used; never waits for memory (seed 003 §4.1).

Jobs are built from the pending buffer, one per user who spoke in it: their own words are
``new_info``, the bot's action (for the user it answered) ``action_summary``, the buffer
``recent_messages``. Request ids derive from the stream and the last message, so a
replayed message writes the same jobs again, not new ones.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from langchain_core.messages import RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from nodes.deps import Deps, ReplyDeps, need
from state.context import Context
from state.memory import MemoryJob, build_job
from state.reply import (
    ChatMessage,
    Handled,
    PendingMessage,
    ReplyState,
    current_message,
    handled,
)
from state.slots import HandOffWrites
from stores.base import ContextUsage, StoredMessage, usage_id
from stores.script import has_cjk

log = logging.getLogger("groupmind.reply")
MAX_RECENT = 10
STICKER_LABEL = "[表情:"  # how a sticker reply is written (emoji)
TEMPLATE_LABELS = ("[离线规则回复]", STICKER_LABEL)


def _request_id(stream: str, persona_id: str, last_message_id: str, user_id: str) -> str:
    # JSON, not a joined string: ids may hold any separator, and two jobs never share an id.
    raw = json.dumps([stream, persona_id, last_message_id, user_id], ensure_ascii=False)
    return f"mem-{hashlib.sha1(raw.encode()).hexdigest()[:20]}"


def context_id(msg: ChatMessage) -> str:
    """The context-usage record of a reply: one per stream, persona and message."""
    return usage_id(msg.stream, msg.persona_id, msg.message_id)


def jobs_from_buffer(
    pending: list[PendingMessage],
    msg: ChatMessage,
    persona_id: str,
    context: Mapping[str, Any],
    *,
    answered_user: str | None = None,
    action: str = "",
    variants: Mapping[str, str] | None = None,
) -> list[MemoryJob]:
    """One memory job per user who spoke in the buffer (the bot's own lines are context),
    built within the deployment's limits (``context``: ``Deps.validation``). Whom each
    answered or @-mentioned is its ``to``; a message they answered from before the buffer
    (as observe read it) leads its recent messages."""
    if not pending:
        return []
    inside = {p["message_id"]: p["user_id"] for p in pending}
    bots = {p["user_id"] for p in pending if p["from_bot"]}
    last_id = pending[-1]["message_id"]
    recent = [
        {"user_id": p["user_id"], "user_name": p["user_name"], "content": p["content"]}
        for p in pending[-MAX_RECENT:]
    ]
    jobs = []
    speakers = dict.fromkeys(p["user_id"] for p in pending if not p["from_bot"])
    for user_id in speakers:
        said = [p for p in pending if p["user_id"] == user_id]
        parents = [p["replied"] for p in said if "replied" in p and p.get("reply_to") not in inside]
        jobs.append(
            build_job(
                context,
                request_id=_request_id(msg.stream, persona_id, last_id, user_id),
                action_summary=action if user_id == answered_user else "",
                new_info="\n".join(p["content"] for p in said),
                user_id=user_id,
                user_name=said[-1]["user_name"],
                platform=msg.platform,
                chat_type=msg.chat_type,
                chat_id=msg.scope_chat_id,
                chat_name=msg.chat_name,
                persona_id=persona_id,
                timestamp=said[-1]["timestamp"],
                recent_messages=parents + [r for r in recent if r["user_id"] != user_id] or recent,
                to=[u for u in _to(said, inside) if u != user_id and u not in bots],
                new_info_by="user",  # their own words: 我 is the speaker
                variants=dict(variants or {}),
            )
        )
    return jobs


def switched_out(
    pending: list[PendingMessage],
    msg: ChatMessage,
    persona_id: str,
    context: Mapping[str, Any],
    variants: Mapping[str, str] | None = None,
) -> tuple[list[PendingMessage], list[MemoryJob]]:
    """A persona switch (seed 001 §4.4): the buffer's lines of another persona go to memory
    now, as that persona's, whatever this run decides; this persona's lines stay."""
    by_persona: dict[str, list[PendingMessage]] = {}
    for p in pending:
        by_persona.setdefault(p.get("persona_id", persona_id), []).append(p)
    mine = by_persona.pop(persona_id, [])
    jobs = [job for other, lines in by_persona.items()
            for job in jobs_from_buffer(lines, msg, other, context, variants=variants)]  # fmt: skip
    return mine, jobs


def _to(said: list[PendingMessage], inside: Mapping[str, str]) -> list[str]:
    """Whom these messages answered (their authors, in the buffer or as observe read them)
    and @-mentioned."""
    found: list[str] = []
    for p in said:
        if "replied" in p:
            found.append(p["replied"]["user_id"])
        elif (parent := p.get("reply_to")) and parent in inside:
            found.append(inside[parent])
        found += p.get("mentions", [])
    return list(dict.fromkeys(found))


def reply_summary(user_name: str, said: str) -> str:
    """The bot's action in the memory job of the person it answered, in the language of
    its answer (an English memory is not written around a Chinese frame)."""
    if not has_cjk(said):
        return f"I replied to {user_name}: “{said}”"
    return f"我回复了{user_name}：“{said}”"


def enqueue(deps: Deps, jobs: list[MemoryJob]) -> list[str]:
    """Queue jobs (their chat and person kept beside them, for forget) and wake the
    process's memory worker: the one way a memory job is queued."""
    queue = need(deps.jobs, "jobs")
    for job in jobs:
        payload = job.model_dump(mode="json")
        queue.enqueue(job.request_id, payload, scope=job.scope, user_id=job.user_id)
    if jobs:
        deps.process.on_job()
    return [job.request_id for job in jobs]


def hand_off(state: ReplyState, ctx: Context, deps: ReplyDeps) -> HandOffWrites:
    msg = current_message(state)
    action = state.get("action", "no_reply")
    persona_id = state.get("persona_id", msg.persona_id)
    variants = state.get("memory_variants")
    pending, jobs = switched_out(
        list(state.get("pending", [])), msg, persona_id, deps.validation, variants
    )
    deps.process.foreground.leave(msg.stream)  # what follows is quick; memory may run after it
    out: HandOffWrites = {
        "handed_off": list(state.get("handed_off", [])),
        # the tool loop's conversation is this run's only: not kept on the thread
        "model_messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES)],
    }
    said = state.get("reply", "")
    # The message is handled now, with its outcome: a redelivery gets this back.
    outcome: Handled = {"action": action, "reason": state.get("reason", ""), "reply": said,
                        "memory_ids": list(state.get("memory_ids", []))}  # fmt: skip
    if state.get("sticker"):
        outcome["sticker"] = dict(state.get("sticker", {}))
    out["handled"] = handled(state, msg.message_id, outcome)
    replied = action in ("text_reply", "emoji_reply") and bool(said)
    if not replied and state.get("reason") and state.get("ranked"):
        # the plan read the context and chose not to answer: recorded too, so an operator
        # sees why (off the path; an ABSENT chat's unread messages are not)
        deps.process.background.submit(record_usage, deps, usage_of(state, msg, ""))
    if replied:
        bot_line = _store_reply(deps, msg, said, persona_id)
        pending.append(bot_line)
        # A template reply says nothing worth remembering; a model's reply does.
        summary = "" if said.startswith(TEMPLATE_LABELS) else reply_summary(msg.user_name, said)
        jobs += jobs_from_buffer(
            pending, msg, persona_id, deps.validation, answered_user=msg.user_id,
            action=summary, variants=variants,
        )  # fmt: skip
        pending = []
        deps.process.background.submit(record_usage, deps, usage_of(state, msg, said))
        # the memories the reply was given are recalled: they fade slower
        deps.process.background.submit(
            recalled, deps, list(state.get("memory_ids", [])), msg.when.timestamp()
        )
    elif len(pending) >= deps.knobs.chat_rules.buffer_max:
        jobs += jobs_from_buffer(pending, msg, persona_id, deps.validation, variants=variants)
        pending = []
    out["handed_off"] += enqueue(deps, jobs)
    return {**out, "pending": pending}


def _store_reply(deps: ReplyDeps, msg: ChatMessage, text: str, persona_id: str) -> PendingMessage:
    store = deps.messages
    when = datetime.fromtimestamp(msg.when.timestamp() + 0.001, msg.when.tzinfo)
    reply_id = f"{msg.message_id}#reply"
    name = deps.persona_name(persona_id, msg.content)
    store.add(
        StoredMessage(
            stream=msg.stream,
            message_id=reply_id,
            platform=msg.platform,
            chat_type=msg.chat_type,
            chat_id=msg.scope_chat_id,
            user_id=deps.limits.bot_id,
            user_name=name,
            content=text,
            timestamp=when.timestamp(),
            reply_to=msg.message_id,
            persona_id=persona_id,
            from_bot=True,
        )
    )
    return PendingMessage(
        message_id=reply_id,
        user_id=deps.limits.bot_id,
        user_name=name,
        content=text,
        timestamp=when.isoformat(),
        from_bot=True,
        persona_id=persona_id,
    )


def recalled(deps: ReplyDeps, ids: list[str], at: float) -> None:
    """Memories given to a reply (or read back by a tool) were recalled; off the reply
    path, and a failure is logged, never raised."""
    if not ids:
        return
    try:
        deps.events.recalled(ids, at)
    except Exception:
        log.exception("recording %d recalled memories failed", len(ids))


def usage_of(state: ReplyState, msg: ChatMessage, said: str) -> ContextUsage:
    """seed 004 §4.2's record of what this reply was given and decided."""
    scores = {str(i): float(s) for i, s in state.get("ranked", [])}
    usage = state.get("usage") or {}
    return ContextUsage(
        context_id=context_id(msg),
        platform=msg.platform,
        chat_type=msg.chat_type,
        chat_id=msg.scope_chat_id,
        persona_id=msg.persona_id,
        user_id=msg.user_id,
        trigger_message_id=msg.message_id,
        context_message_ids=list(state.get("context_ids", [])),
        relevance_scores={i: scores[i] for i in state.get("context_ids", []) if i in scores},
        llm_response=said,
        prompt_tokens=int(usage.get("prompt_tokens", 0)),
        completion_tokens=int(usage.get("completion_tokens", 0)),
        cost=usage.get("cost"),
        memory_ids=list(state.get("memory_ids", [])),
        action=state.get("action", ""),
        reason=state.get("reason", ""),
    )


def record_usage(deps: ReplyDeps, record: ContextUsage) -> None:
    """Off the reply path; a failure here is logged, never raised (the record is for
    tuning and for forget's provenance; the answer already went out)."""
    if deps.context_usage is None:
        return
    try:
        deps.context_usage.record(record)
    except Exception:  # noqa: BLE001
        log.exception("context-usage record for %s failed", record.trigger_message_id)


VARIANTS = {"hand_off": {"default": hand_off}}
