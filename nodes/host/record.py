"""recorded: the host's own answer, kept as the bot's line (observe stored it: a message
of the bot's, ``reply_to`` the message it answers), then handed to memory as one of the
reply graph's own answers would be: the buffer's jobs, the person answered given the
bot's action, the context record (with the memories the host's model was given: forget
finds the answer by them), those memories recalled, and the answered message's outcome
kept on the thread (a redelivery of it is not taken again)."""

from __future__ import annotations

from typing import Any

from nodes.deps import ReplyDeps
from nodes.reply.hand_off import (
    enqueue,
    jobs_from_buffer,
    recalled,
    record_usage,
    reply_summary,
    switched_out,
)
from state.reply import Handled, ReplyState, current_message, handled
from stores.base import ContextUsage, usage_id


def recorded(state: ReplyState, deps: ReplyDeps) -> dict[str, Any]:
    answer = current_message(state)  # the bot's line, as observe stored it
    persona_id = state.get("persona_id", answer.persona_id)
    variants = state.get("memory_variants")
    pending, jobs = switched_out(
        list(state.get("pending", [])), answer, persona_id, deps.validation, variants
    )
    given = list(state.get("host_memory_ids") or [])
    out: dict[str, Any] = {"host_memory_ids": []}
    parents = deps.messages.get(answer.stream, persona_id, [answer.reply_to or ""])
    if not parents or parents[0].from_bot:  # a line of the bot's that answers nobody
        if len(pending) >= deps.knobs.chat_rules.buffer_max:
            jobs += jobs_from_buffer(pending, answer, persona_id, deps.validation,
                                     variants=variants)  # fmt: skip
            pending = []
        return {**out, "handed_off": enqueue(deps, jobs), "pending": pending}
    asked = parents[0]
    jobs += jobs_from_buffer(
        pending, answer, persona_id, deps.validation, answered_user=asked.user_id,
        action=reply_summary(asked.user_name, answer.content),
        variants=variants,
    )  # fmt: skip
    outcome: Handled = {"action": "text_reply", "reason": "the host answered",
                        "reply": answer.content, "memory_ids": given}  # fmt: skip
    record = ContextUsage(
        context_id=usage_id(asked.stream, persona_id, asked.message_id),
        platform=asked.platform, chat_type=asked.chat_type, chat_id=asked.chat_id,
        persona_id=persona_id, user_id=asked.user_id, trigger_message_id=asked.message_id,
        context_message_ids=[], relevance_scores={}, llm_response=answer.content,
        memory_ids=given, action="text_reply", reason="the host answered",
    )  # fmt: skip
    deps.process.background.submit(record_usage, deps, record)
    deps.process.background.submit(recalled, deps, given, answer.when.timestamp())
    return {
        **out,
        "handed_off": enqueue(deps, jobs),
        "pending": [],
        "handled": handled(state, asked.message_id, outcome),
    }
