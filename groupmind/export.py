"""``groupmind export``: a chat's messages as an experiment dataset (docs/experiments.md),
so arms can be compared on an operator's own group.

Every message a person sent becomes an example in the order groupmind saw it. What is
known goes with it: the message it quoted (``reply_to``), as a label the arms are not
told by default (the ranker is then asked to find it), and what the bot did (a reply, a
sticker, or nothing), as ``metadata.bot_action`` (with ``--actions-from-bot``, also as the
``action`` label: agreement with the bot as deployed). The bot's own lines are not
examples: every arm makes its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from domain.scope import ChatScope
from nodes.deps import ReplyDeps
from nodes.reply.hand_off import STICKER_LABEL
from stores.base import StoredMessage

REPLY_SUFFIX = "#reply"  # the id hand_off gives the bot's answer to a message


def bot_action(answer: StoredMessage | None) -> str:
    if answer is None:
        return "no_reply"
    return "emoji_reply" if answer.content.startswith(STICKER_LABEL) else "text_reply"


def export_chat(
    deps: ReplyDeps,
    chat: ChatScope,
    persona_id: str,
    *,
    chat_name: str = "",
    keep_reply_to: bool = False,
    actions_from_bot: bool = False,
) -> Iterator[dict[str, Any]]:
    """The chat's examples, oldest first."""
    messages = deps.messages.newer_than(chat.key, persona_id, 0)
    answers = {m.message_id: m for m in messages if m.from_bot}
    for m in messages:
        if m.from_bot:
            continue
        message: dict[str, Any] = {
            "message_id": m.message_id,
            "platform": m.platform,
            "chat_type": m.chat_type,
            "chat_id": m.chat_id,
            "user_id": m.user_id,
            "user_name": m.user_name,
            "content": m.content,
            "timestamp": datetime.fromtimestamp(m.timestamp, deps.limits.tz).isoformat(),
            "persona_id": m.persona_id,
        }
        if chat_name:
            message["chat_name"] = chat_name
        if m.mentions:
            message["mentions"] = list(m.mentions)
        outputs: dict[str, Any] = {}
        if m.reply_to:
            if keep_reply_to:
                message["reply_to"] = m.reply_to
            else:
                outputs["reply_to"] = m.reply_to
        did = bot_action(answers.get(m.message_id + REPLY_SUFFIX))
        if actions_from_bot:
            outputs["action"] = did
        yield {
            "inputs": {"message": message},
            "outputs": outputs,
            "metadata": {"stream": chat.key, "bot_action": did},
        }
