"""recalled: what the reply graph would give its own model for this message, for the
host's: the relationship block, the memories and the ranked live context, each under its
data header, as one text to put in the user part of the host's request (after its stable
system prompt: a changing system prompt defeats providers' prefix caches), and as data."""

from __future__ import annotations

from typing import Any

from nodes.deps import ReplyDeps
from nodes.prompt_blocks import render_context
from state.reply import ReplyState, current_message


def recalled(state: ReplyState, deps: ReplyDeps) -> dict[str, Any]:
    msg = current_message(state)
    deps.process.foreground.leave(msg.stream)  # entered by observe: the host answers, not us
    persona_id = state.get("persona_id", msg.persona_id)
    context = render_context(
        deps.messages.get(msg.stream, persona_id, state.get("context_ids", []))
    )
    parts = (state.get("relation_block", ""), state.get("memory_block", ""), context)
    return {"context_text": context, "recall_text": "\n\n".join(p for p in parts if p)}
