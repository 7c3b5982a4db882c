"""observe: validate and store the message, find who it addresses, update interest.
A persona switch keeps the old persona's lines in the buffer, each under its persona:
hand_off hands them off (seed 001 §4.4).

A bad message fails here with the field and the reason, before anything is stored.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from typing import Any, Literal

from langgraph.types import Overwrite

from nodes.deps import Deps, ReplyDeps
from nodes.reply.arrivals import Seen, catch_up, journaled_before, pending_of, stored_message
from nodes.variants import memory_arms
from state.context import Context
from state.reply import ChatMessage, PendingMessage, ReplyState, handled, run_start
from state.validation import InputError, validated
from stores.base import EventQuery, StoredMessage

LEADING_NAME = re.compile(r"^\s*@?([^\s:：,，]{1,32})\s*[:：,，]")
AT_NAME = re.compile(r"@([^\s:：,，@]{1,32})")
_QUESTION = re.compile(
    r"[?？]|吗\s*$|呢\s*$|什么|怎么|为什么|哪里|哪儿|多少|几点|能不能|可不可以|是不是"
    r"|^(?:how|what|why|when|where|who|which|can|could|does|do|is|are|should)\b",
    re.IGNORECASE,
)
INTEREST_MENTION = 0.5
INTEREST_REPLY_TO_BOT = 0.4
INTEREST_QUESTION = 0.15
INTEREST_TOPIC = 0.1


def fresh() -> ReplyState:
    """Every per-run field (``state.reply.ReplyRun``) cleared, accumulating ones (tool loop,
    fallbacks, usage, the variants that ran) too: written past their reducers."""
    return run_start(past_reducers=True)


def validate_message(raw: Any, deps: Deps) -> ChatMessage:
    return validated(ChatMessage, raw, "message", deps.validation)


def textual_mentions(content: str, names: dict[str, str]) -> list[str]:
    """Ids of the people a text addresses: ``@name`` anywhere, ``name:`` / ``name,`` first."""
    lowered = {name.lower(): uid for name, uid in names.items() if name}
    found = []
    head = LEADING_NAME.match(content)
    for token in ([head.group(1)] if head else []) + AT_NAME.findall(content):
        uid = lowered.get(token.lower())
        if uid and uid not in found:
            found.append(uid)
    return found


def called_by_name(content: str, names: Collection[str]) -> bool:
    """Whether a message opens with one of these names, punctuation or not ("小爱睡着了吗";
    a name of two characters or more, so a lone character is not taken for one)."""
    head = content.lstrip().lstrip("@＠").lstrip().lower()
    return any(len(n) >= 2 and head.startswith(n.lower()) for n in names)


def without_addressing(text: str, names: Collection[str] = ()) -> str:
    """The text minus whom it addresses: ``@name`` anywhere, a leading ``name:`` when
    ``name`` is someone known (so "大家早，" stays)."""
    head = LEADING_NAME.match(text)
    known = {n.lower() for n in names}
    if head and head.group(1).lower() in known:
        text = text[head.end() :]
    return AT_NAME.sub(" ", text).strip()


def decayed(interest: float, since: float | None, now: float, half_life_s: float) -> float:
    if since is None or now <= since:
        return interest
    return interest * math.pow(0.5, (now - since) / half_life_s)


def observe(state: ReplyState, ctx: Context, deps: ReplyDeps) -> ReplyState:
    waiting: Any = state.get("message")
    inbox = list(waiting) if isinstance(waiting, list) else [waiting]  # the run's own is last
    msg = validate_message(inbox[-1] if inbox else None, deps)
    held = state.get("stream")
    if held and held != msg.stream:
        # A thread is one chat's: its buffer must never be filed under another chat.
        raise InputError(
            "message",
            f"its chat {msg.stream!r} is not this thread's ({held!r}): send each chat's "
            "messages on that chat's own thread",
        )
    store = deps.messages
    seen = Seen(state)
    out: ReplyState = {**fresh(), "message": Overwrite([]), "msg": msg}  # type: ignore[typeddict-item]
    pending = list(state.get("pending", []))
    done = state.get("handled", {}).get(msg.message_id)
    if done is not None:  # a redelivery of a message handled before: what was decided
        why = f"already handled (a redelivered message): {done.get('reason', '')}"
        return {**out, **done, "message_id": msg.message_id, "duplicate": True, "reason": why}
    # Taken as context earlier (its own run had not come), or observed by a run that failed
    # before it ended: not handled, so it is answered now; in the buffer it already is (or
    # was, and went to memory with it).
    first_time = msg.message_id not in seen
    persona_id = msg.persona_id
    # The memory graph's variants for jobs this run writes: they travel with each job.
    memory_variants = memory_arms(ctx.variants, None, deps)
    out["memory_variants"] = memory_variants
    if previous := state.get("persona_id"):  # lines buffered before lines knew their persona
        pending = [p if "persona_id" in p else {**p, "persona_id": previous} for p in pending]
    said_before = list(pending)
    thread_id, journaled = journaled_before(deps, msg)
    pending += catch_up([*journaled, *inbox[:-1]], msg, store, seen, deps)

    from_self = msg.user_id == deps.limits.bot_id
    if not from_self:
        deps.process.foreground.enter(msg.stream)  # left by hand_off: memory waits for replies
    names = {name: uid for uid, name in store.members(msg.stream).items()}
    bot_names = [deps.limits.bot_id, *deps.persona_names(persona_id)]
    names.update({name: deps.limits.bot_id for name in bot_names})
    mentions = list(dict.fromkeys([*msg.mentions, *textual_mentions(msg.content, names)]))
    if called_by_name(msg.content, bot_names) and deps.limits.bot_id not in mentions:
        mentions.append(deps.limits.bot_id)
    mentions = [m for m in mentions if m != msg.user_id]
    parent = store.get(msg.stream, persona_id, [msg.reply_to]) if msg.reply_to else []
    reply_to_bot = bool(parent) and (parent[0].from_bot or parent[0].user_id == deps.limits.bot_id)
    addressed = not from_self and (deps.limits.bot_id in mentions or msg.chat_type == "private")
    chat_state: Literal["ABSENT", "CHAT", "FOCUSED"] = state.get("chat_state", "ABSENT")
    if not from_self and (addressed or reply_to_bot or chat_state != "ABSENT"):
        # retrieve will search: its query's embedding runs (off the GIL) while we store
        deps.events.prefetch(memory_query(msg, persona_id, ctx, deps, bot_names))
    stored = store.add(stored_message(msg, mentions, from_bot=from_self))
    seen.add(msg.message_id, stored.seq)
    question = bool(_QUESTION.search(msg.content.strip()))
    now = msg.when.timestamp()
    interest = decayed(
        state.get("interest", 0.0),
        state.get("interest_at"),
        now,
        deps.knobs.chat_rules.interest_half_life_s,
    )
    if not from_self:
        interest += INTEREST_MENTION * addressed + INTEREST_REPLY_TO_BOT * reply_to_bot
        on_topic = _on_topic(said_before, persona_id, stored)
        interest += INTEREST_QUESTION * question + INTEREST_TOPIC * on_topic
    if first_time:
        pending.append(pending_of(msg, deps, from_self, parent[0] if parent else None))
    if thread_id is not None and deps.run_inbox is not None:
        deps.run_inbox.take(
            thread_id, [str(m.get("message_id")) for m in journaled] + [msg.message_id]
        )
    if from_self:  # stored, nothing to decide: handled here
        out["handled"] = handled(state, msg.message_id, {"action": "no_reply", "reason": ""})
    return {
        **out,
        **seen.as_state(),
        "message_id": msg.message_id,
        "stream": msg.stream,
        "observed_seq": stored.seq,
        "from_self": from_self,
        "addressed": addressed,
        "reply_to_bot": reply_to_bot,
        "question": question,
        "interest": round(min(1.0, interest), 4),
        "interest_at": now,
        "persona_id": persona_id,
        "pending": pending,
        "chat_state": chat_state,
        "no_reply_count": state.get("no_reply_count", 0),
    }


def memory_query(
    msg: ChatMessage,
    persona_id: str,
    ctx: Context,
    deps: ReplyDeps,
    names: Collection[str] | None = None,
) -> EventQuery:
    """What retrieve searches for this message: strictly this chat and persona. ``names``:
    the bot's (its id, the persona's names), when the caller has them already."""
    addressing = {*(names or [deps.limits.bot_id, *deps.persona_names(persona_id)])}
    return EventQuery.asked(
        without_addressing(msg.content, addressing) or msg.content,  # "@小爱" is no topic
        msg.when,  # "上周" is a span in the message's own zone; memories fade relative to it
        platform=msg.platform,
        chat_type=msg.chat_type,
        chat_id=msg.scope_chat_id,
        persona_id=persona_id,  # strict: only this persona's conversations
        top_k=ctx.auto_top_k or deps.knobs.auto_top_k,
        asker_id=msg.user_id,  # 我 in the message is them
        asker_name=msg.user_name,
    )


def _on_topic(pending: list[PendingMessage], persona_id: str, stored: StoredMessage) -> bool:
    """Shares a keyword with what was said (to this persona) since the last hand-off: the
    talk goes on."""
    mine = [p["content"] for p in pending if p.get("persona_id") == persona_id]
    recent = " ".join(mine[-5:])
    return bool(recent) and any(k in recent.lower() for k in stored.keywords[:6])


def route_after_observe(state: ReplyState) -> str | list[str]:
    if state.get("from_self") or state.get("duplicate"):
        return "__end__"  # the bot's own message, fed back: stored, nothing to decide
    woken = state.get("addressed") or state.get("reply_to_bot")
    if state.get("chat_state") == "ABSENT" and not woken:
        return "plan"  # an ABSENT chat is not read closely: the short path
    # Independent reads, side by side (the query's embedding already runs: observe).
    # LangGraph starts a thread per run for these; one after the other measured no faster.
    return ["retrieve", "rank_context"]


VARIANTS = {"observe": {"default": observe}}
