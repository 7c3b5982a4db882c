"""Every chat groupmind has seen, for operators (``groupmind chats``): its state, the
persona speaking there, and how much is kept about it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from domain.scope import ChatScope
from stores.sql.covered import mine
from stores.sql.schema import (
    Base,
    ChatStateRow,
    EventDocRow,
    GroupProfileRow,
    MemoryJobRow,
    MessageRow,
)


@dataclass
class ChatSummary:
    stream: str  # platform:chat_type:chat_id
    name: str = ""
    state: str = "ABSENT"
    persona_id: str = ""  # of the latest message
    messages: int = 0
    last_message_at: float | None = None
    memories: dict[str, int] = field(default_factory=dict)  # persona -> events
    jobs_waiting: int = 0  # queued, running or failed


def _key(platform: str, chat_type: Any, chat_id: str) -> str:
    return ChatScope(platform=platform, chat_type=chat_type, chat_id=chat_id).key


def chat_overview(engine: Engine, bot: str, only: ChatScope | None = None) -> list[ChatSummary]:
    """One bot's chats; ``only``: that chat alone (read by its keys, not by counting every
    chat: a console page of one chat does not pay for a million memories elsewhere)."""
    chats: dict[str, ChatSummary] = {}

    def where(row: Any, stream: bool = False) -> list[Any]:
        if only is None:
            return [mine(row, bot)]
        if stream:
            return [mine(row, bot), row.stream == only.key]
        return [mine(row, bot), row.platform == only.platform, row.chat_type == only.chat_type,
                row.chat_id == only.chat_id]  # fmt: skip

    def chat(stream: str) -> ChatSummary:
        return chats.setdefault(stream, ChatSummary(stream))

    with Session(engine) as s:
        latest = (
            select(MessageRow.stream, func.count(), func.max(MessageRow.seq))
            .where(*where(MessageRow, stream=True), MessageRow.from_bot.is_(False))
            .group_by(MessageRow.stream)
        )
        last_seqs = {}
        for stream, count, seq in s.execute(latest):
            chat(stream).messages = count
            last_seqs[seq] = stream
        for row in s.scalars(
            select(MessageRow).where(mine(MessageRow, bot), MessageRow.seq.in_(list(last_seqs)))
        ):
            chat(row.stream).persona_id = row.persona_id
            chat(row.stream).last_message_at = row.timestamp
        states = select(ChatStateRow.stream, ChatStateRow.state).where(
            *where(ChatStateRow, stream=True)
        )
        for stream, state in s.execute(states):
            chat(stream).state = state
        events = select(
            EventDocRow.platform, EventDocRow.chat_type, EventDocRow.chat_id,
            EventDocRow.persona_id, func.count(), func.max(EventDocRow.chat_name),
        ).where(*where(EventDocRow)).group_by(
            EventDocRow.platform, EventDocRow.chat_type, EventDocRow.chat_id, EventDocRow.persona_id
        )  # fmt: skip
        for platform, chat_type, chat_id, persona, count, name in s.execute(events):
            summary = chat(_key(platform, chat_type, chat_id))
            summary.memories[persona] = count
            summary.name = summary.name or name or ""
        waiting = (
            select(
                MemoryJobRow.platform, MemoryJobRow.chat_type, MemoryJobRow.chat_id, func.count()
            )
            .where(*where(MemoryJobRow), MemoryJobRow.status != "done")
            .group_by(MemoryJobRow.platform, MemoryJobRow.chat_type, MemoryJobRow.chat_id)
        )
        for platform, chat_type, chat_id, count in s.execute(waiting):
            chat(_key(platform, chat_type, chat_id)).jobs_waiting = count
        groups = select(
            GroupProfileRow.platform, GroupProfileRow.group_id, GroupProfileRow.group_name
        ).where(mine(GroupProfileRow, bot))
        if only is not None:
            groups = groups.where(
                GroupProfileRow.platform == only.platform, GroupProfileRow.group_id == only.chat_id
            )
        for platform, group_id, name in s.execute(groups):
            found = chats.get(_key(platform, "group", group_id))
            if found is not None and name:
                found.name = name
    return sorted(chats.values(), key=lambda c: -(c.last_message_at or 0))


def known_bots(engine: Engine) -> list[str]:
    """Every bot with data in this database (in any table)."""
    found: set[str] = set()
    with engine.connect() as conn:
        for table in Base.metadata.sorted_tables:
            if "bot_id" in table.c:
                found.update(conn.execute(select(table.c.bot_id).distinct()).scalars())
    return sorted(found)
