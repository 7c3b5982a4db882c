"""What observe takes besides the run's own message, so nothing said is lost:

- earlier messages still in the thread's inbox: their runs were cut short by a newer one
  (a LangGraph server's ``multitask_strategy="interrupt"``) or failed before observe;
- messages journaled when their server run was created (``RunInbox``) before this run's
  own: runs the server cancelled or rolled back before they started;
- messages of this chat and persona stored by a run whose checkpoint was lost (the process
  was killed, or the server rolled the run back) after the newest one this thread saw.

Both join the pending buffer as context for the next memory hand-off. A message observe
already took (a bot redelivering it) is recognised and not taken twice.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from langgraph.config import get_config
from pydantic import ValidationError

from nodes.deps import ReplyDeps
from state.reply import ChatMessage, PendingMessage, ReplyState
from state.validation import InputError, validated
from stores.base import MessageStore, StoredMessage

log = logging.getLogger("groupmind.reply")
SEEN_KEPT = 200


class Seen:
    """The latest message ids observe took, those of them taken as context only (their own
    run never came, or has not yet), and the newest stored seq among them."""

    def __init__(self, state: ReplyState) -> None:
        self.ids = list(state.get("seen_ids", []))
        self.as_context = list(state.get("seen_as_context", []))
        self.seq: int | None = state.get("seen_seq")

    def __contains__(self, message_id: object) -> bool:
        return message_id in self.ids

    def add(self, message_id: str, seq: int, *, context: bool = False) -> None:
        self.ids = [*self.ids, message_id][-SEEN_KEPT:]
        if context:
            self.as_context = [*self.as_context, message_id][-SEEN_KEPT:]
        elif message_id in self.as_context:
            self.as_context.remove(message_id)
        self.seq = max(seq, self.seq or 0)

    def as_state(self) -> ReplyState:
        return {"seen_ids": self.ids, "seen_as_context": self.as_context, "seen_seq": self.seq or 0}


def pending_of(
    m: StoredMessage | ChatMessage,
    deps: ReplyDeps,
    from_bot: bool = False,
    replied: StoredMessage | None = None,
) -> PendingMessage:
    """``replied``: the message ``m`` replies to, when the caller read it already."""
    when = m.timestamp if isinstance(m, ChatMessage) else _iso(m.timestamp, deps)
    pending = PendingMessage(
        message_id=m.message_id,
        user_id=m.user_id,
        user_name=m.user_name,
        content=m.content,
        timestamp=when,
        from_bot=from_bot or (isinstance(m, StoredMessage) and m.from_bot),
        persona_id=m.persona_id,
        reply_to=m.reply_to,
        mentions=list(m.mentions),
    )
    if replied is not None:
        pending["replied"] = {"user_id": replied.user_id, "user_name": replied.user_name,
                              "content": replied.content}  # fmt: skip
    return pending


def _iso(seconds: float, deps: ReplyDeps) -> str:
    return datetime.fromtimestamp(seconds, deps.limits.tz).isoformat()


def catch_up(
    earlier: Sequence[Any], msg: ChatMessage, store: MessageStore, seen: Seen, deps: ReplyDeps
) -> list[PendingMessage]:
    """Store and take the inbox's earlier messages, then those lost runs left in the
    store; returns them for the pending buffer, oldest first."""
    taken: list[PendingMessage] = []
    for raw in earlier:
        try:
            early = validated(ChatMessage, raw, "message", deps.validation)
        except (InputError, ValidationError) as exc:
            log.warning("%s: an earlier message in the inbox was refused: %s", msg.stream, exc)
            continue
        if (
            early.stream != msg.stream
            or early.persona_id != msg.persona_id
            or early.message_id in seen
        ):
            continue
        stored = store.add(
            stored_message(early, early.mentions, from_bot=early.user_id == deps.limits.bot_id)
        )
        seen.add(early.message_id, stored.seq, context=True)
        taken.append(pending_of(early, deps, from_bot=stored.from_bot))
    if seen.seq is not None:
        for lost in store.newer_than(msg.stream, msg.persona_id, seen.seq):
            mine = (
                lost.from_bot or lost.user_id == deps.limits.bot_id
            )  # the bot's lines: not memory
            if mine or lost.message_id in seen or lost.message_id == msg.message_id:
                continue
            seen.add(lost.message_id, lost.seq, context=True)
            taken.append(pending_of(lost, deps))
    return taken


def journaled_before(deps: ReplyDeps, msg: ChatMessage) -> tuple[str | None, list[Any]]:
    """This run's thread id and the messages journaled for it before this run's own (none
    in-process, where nothing journals)."""
    if deps.run_inbox is None:
        return None, []
    try:
        thread_id = get_config().get("configurable", {}).get("thread_id")
    except RuntimeError:  # called outside a graph run
        return None, []
    if not thread_id:
        return None, []
    journal = deps.run_inbox.waiting(str(thread_id))
    ids = [str(m.get("message_id")) for m in journal]
    if msg.message_id not in ids:
        return str(thread_id), []
    return str(thread_id), journal[: ids.index(msg.message_id)]


def stored_message(msg: ChatMessage, mentions: list[str], *, from_bot: bool) -> StoredMessage:
    return StoredMessage(
        stream=msg.stream,
        message_id=msg.message_id,
        platform=msg.platform,
        chat_type=msg.chat_type,
        chat_id=msg.scope_chat_id,
        user_id=msg.user_id,
        user_name=msg.user_name,
        content=msg.content,
        timestamp=msg.when.timestamp(),
        reply_to=msg.reply_to,
        mentions=mentions,
        persona_id=msg.persona_id,
        from_bot=from_bot,
    )
