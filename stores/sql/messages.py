"""Chat messages, chat members, chat states and context-usage records in SQL."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Engine, Select, bindparam, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from domain.scope import ForgetTarget
from stores.base import ContextUsage, StoredMessage
from stores.said import Said
from stores.sql.covered import BOT, chunks, covered, mine, tenant
from stores.sql.engine import reads
from stores.sql.schema import ChatMemberRow, ChatStateRow, ContextUsageRow, MessageRow
from stores.text import keywords_of


class SqlMessageStore:
    """One bot's messages: every read, write and erase is this bot's only."""

    def __init__(self, engine: Engine, *, bot: str) -> None:
        self.engine = engine
        self.reads = reads(engine)  # single reads: no transaction (stores/sql/engine.py)
        self.bot = tenant(bot)

    def add(self, message: StoredMessage) -> StoredMessage:
        kw = message.keywords or keywords_of(message.content)
        values = {
            "stream": message.stream,
            "message_id": message.message_id,
            "platform": message.platform,
            "chat_type": message.chat_type,
            "chat_id": message.chat_id,
            "user_id": message.user_id,
            "user_name": message.user_name,
            "content": message.content,
            "timestamp": message.timestamp,
            "reply_to": message.reply_to,
            "mentions": message.mentions,
            "persona_id": message.persona_id,
            "from_bot": message.from_bot,
            "keywords": kw,
        }
        try:
            with self.engine.begin() as conn:
                seq = conn.execute(_ADD, {**values, "bot_id": self.bot}).scalar_one()
                self._seen(conn, message)
        except IntegrityError:  # the same message again (a replay): keep the first copy
            existing = self.get(message.stream, message.persona_id, [message.message_id])
            return existing[0]
        return StoredMessage(**{**values, "seq": int(seq)})  # type: ignore[arg-type]

    def _seen(self, conn: Connection, message: StoredMessage) -> None:
        seen = {"user_name": message.user_name, "last_seen": message.timestamp}
        key = {"k_bot": self.bot, "k_stream": message.stream, "k_user": message.user_id}
        if not conn.execute(_SEEN, {**seen, **key}).rowcount:
            conn.execute(
                _MEMBER,
                {**seen, "bot_id": self.bot, "stream": message.stream, "user_id": message.user_id},
            )

    def get(self, stream: str, persona_id: str, message_ids: Sequence[str]) -> list[StoredMessage]:
        if not message_ids:
            return []
        query = select(MessageRow).where(
            *self._scope(stream, persona_id), MessageRow.message_id.in_(list(message_ids))
        )
        return self._fetch(query)

    def window(
        self,
        stream: str,
        persona_id: str,
        *,
        before: float,
        since: float,
        limit: int,
        exclude: str | None = None,
    ) -> list[StoredMessage]:
        query = (
            select(MessageRow)
            .where(
                *self._scope(stream, persona_id),
                MessageRow.timestamp <= before,
                MessageRow.timestamp >= since,
            )
            .order_by(MessageRow.timestamp.desc(), MessageRow.seq.desc())
            .limit(limit + (1 if exclude else 0))
        )
        rows = [m for m in self._fetch(query) if m.message_id != exclude][:limit]
        return rows[::-1]

    def older(
        self, stream: str, persona_id: str, *, before_seq: int | None, limit: int
    ) -> list[StoredMessage]:
        query = select(MessageRow).where(*self._scope(stream, persona_id))
        if before_seq is not None:
            query = query.where(MessageRow.seq < before_seq)
        return self._fetch(query.order_by(MessageRow.seq.desc()).limit(limit))[::-1]

    def replies_to(
        self, stream: str, persona_id: str, message_ids: Sequence[str], limit: int
    ) -> list[StoredMessage]:
        if not message_ids:
            return []
        query = (
            select(MessageRow)
            .where(*self._scope(stream, persona_id), MessageRow.reply_to.in_(list(message_ids)))
            .order_by(MessageRow.seq.desc())
            .limit(limit)
        )
        return self._fetch(query)

    def newer_than(self, stream: str, persona_id: str, seq: int) -> list[StoredMessage]:
        key = {"k_bot": self.bot, "k_stream": stream, "k_persona": persona_id, "k_seq": seq}
        with self.reads.connect() as conn:
            return [_message(row) for row in conn.execute(_NEWER, key)]

    def members(self, stream: str) -> dict[str, str]:
        with self.reads.connect() as conn:
            rows = conn.execute(_MEMBERS, {"k_bot": self.bot, "k_stream": stream})
            return {user_id: name for user_id, name in rows}

    def forget(self, target: ForgetTarget, said: Said | None = None) -> dict[str, int]:
        """A chat: all its messages and members. A person: what they said (in one chat or
        on the whole platform), the bot's replies to it, the bot's lines that quote or name
        them (``said``: a reply to someone else may repeat what they said) and their
        memberships."""
        messages = [mine(MessageRow, self.bot), MessageRow.platform == target.platform]
        members = [mine(ChatMemberRow, self.bot)]
        if target.chat is not None:
            messages.append(MessageRow.stream == target.chat.key)
            members.append(ChatMemberRow.stream == target.chat.key)
        else:
            members.append(ChatMemberRow.stream.like(f"{target.platform}:%"))
        bot_lines = [*messages, MessageRow.from_bot.is_(True)]
        if target.user_id is not None:
            messages.append(MessageRow.user_id == target.user_id)
            members.append(ChatMemberRow.user_id == target.user_id)
        removed: Counter[str] = Counter()
        with self.engine.begin() as conn:
            conn.execute(delete(ChatMemberRow).where(*members))
            said_ids = conn.execute(
                select(MessageRow.stream, MessageRow.message_id).where(*messages)
            )
            for stream, message_id in said_ids.all():
                removed[stream] += 1
                if target.user_id is not None:
                    removed[stream] += conn.execute(
                        delete(MessageRow).where(
                            mine(MessageRow, self.bot),
                            MessageRow.stream == stream,
                            MessageRow.reply_to == message_id,
                            MessageRow.from_bot.is_(True),
                        )
                    ).rowcount
            conn.execute(delete(MessageRow).where(*messages))
            if target.user_id is not None and said is not None:
                rows = conn.execute(
                    select(MessageRow.seq, MessageRow.stream, MessageRow.content).where(*bot_lines)
                ).all()
                quoting = [(seq, stream) for seq, stream, text in rows if said.mentioned_in(text)]
                removed.update(stream for _, stream in quoting)
                for part in chunks([seq for seq, _ in quoting]):
                    conn.execute(delete(MessageRow).where(*bot_lines, MessageRow.seq.in_(part)))
        return dict(removed)

    def said_by(self, target: ForgetTarget) -> Said:
        assert target.user_id is not None, "said_by: a person"
        where = [mine(MessageRow, self.bot), MessageRow.platform == target.platform,
                 MessageRow.user_id == target.user_id]  # fmt: skip
        if target.chat is not None:
            where.append(MessageRow.stream == target.chat.key)
        columns = (MessageRow.user_name, MessageRow.content, MessageRow.message_id)
        with self.reads.connect() as conn:
            said = conn.execute(select(*columns).where(*where)).all()
            names = conn.execute(
                select(ChatMemberRow.user_name).where(
                    mine(ChatMemberRow, self.bot), ChatMemberRow.user_id == target.user_id
                )
            ).scalars()
            known = {*names, *(name for name, _, _ in said)}
        texts, ids = tuple(text for _, text, _ in said), frozenset(i for _, _, i in said)
        return Said(target.user_id, frozenset(known), texts, ids)

    def _fetch(self, query: Select[Any]) -> list[StoredMessage]:
        # Rows, not ORM objects: a reply reads about a hundred messages, and building each
        # as an ORM instance was a measurable part of a reply (docs/benchmarks/constants.md).
        with self.reads.connect() as conn:
            return [_message(row) for row in conn.execute(_as_rows(query))]

    def _scope(self, stream: str, persona_id: str) -> tuple[Any, Any, Any]:
        return (
            mine(MessageRow, self.bot),
            MessageRow.stream == stream,
            MessageRow.persona_id == persona_id,
        )


def _as_rows(query: Select[Any]) -> Select[Any]:
    return query.with_only_columns(*MessageRow.__table__.columns)


# Run on every message, so built once and bound per call (stores/sql/covered.py: BOT).
# An UPDATE's SET takes the parameters named as columns; its WHERE's are ``k_``.
_ADD = insert(MessageRow).returning(MessageRow.seq)
_SEEN = update(ChatMemberRow).where(
    mine(ChatMemberRow, BOT),
    ChatMemberRow.stream == bindparam("k_stream"),
    ChatMemberRow.user_id == bindparam("k_user"),
)
_MEMBER = insert(ChatMemberRow)
_USAGE_SET = update(ContextUsageRow).where(  # SET: the columns the parameters name
    mine(ContextUsageRow, BOT), ContextUsageRow.context_id == bindparam("k_context")
)
_USAGE_NEW = insert(ContextUsageRow)
_IN_STATE = (
    select(func.count())
    .select_from(ChatStateRow)
    .where(
        mine(ChatStateRow, BOT),
        ChatStateRow.state == bindparam("k_state"),
        ChatStateRow.stream != bindparam("k_stream"),
    )
)
_MEMBERS = select(ChatMemberRow.user_id, ChatMemberRow.user_name).where(
    mine(ChatMemberRow, BOT), ChatMemberRow.stream == bindparam("k_stream")
)
_NEWER = _as_rows(
    select(MessageRow)
    .where(
        mine(MessageRow, BOT),
        MessageRow.stream == bindparam("k_stream"),
        MessageRow.persona_id == bindparam("k_persona"),
        MessageRow.seq > bindparam("k_seq"),
    )
    .order_by(MessageRow.seq)
)


def _message(row: Any) -> StoredMessage:
    return StoredMessage(
        stream=row.stream,
        message_id=row.message_id,
        platform=row.platform,
        chat_type=row.chat_type,
        chat_id=row.chat_id,
        user_id=row.user_id,
        user_name=row.user_name,
        content=row.content,
        timestamp=row.timestamp,
        reply_to=row.reply_to,
        mentions=list(row.mentions or []),
        persona_id=row.persona_id,
        from_bot=row.from_bot,
        keywords=list(row.keywords or []),
        seq=row.seq,
    )


class SqlChatStates:
    """One bot's chat states (its FOCUSED cap counts its own chats)."""

    def __init__(self, engine: Engine, *, bot: str) -> None:
        self.engine = engine
        self.bot = tenant(bot)

    def set_state(self, stream: str, state: str) -> None:
        now = time.time()
        key = (mine(ChatStateRow, self.bot), ChatStateRow.stream == stream)
        with self.engine.begin() as conn:
            changed = conn.execute(
                update(ChatStateRow).where(*key).values(state=state, updated_at=now)
            ).rowcount
            if not changed:
                try:
                    with conn.begin_nested():
                        conn.execute(
                            insert(ChatStateRow).values(
                                bot_id=self.bot, stream=stream, state=state, updated_at=now
                            )
                        )
                except IntegrityError:
                    conn.execute(
                        update(ChatStateRow).where(*key).values(state=state, updated_at=now)
                    )

    def count(self, state: str, *, excluding: str | None = None) -> int:
        # a stream id is never empty: excluding "" excludes nothing
        params = {"k_bot": self.bot, "k_state": state, "k_stream": excluding or ""}
        with self.engine.connect() as conn:
            return int(conn.execute(_IN_STATE, params).scalar_one())

    def forget(self, stream: str) -> int:
        key = (mine(ChatStateRow, self.bot), ChatStateRow.stream == stream)
        with self.engine.begin() as conn:
            return int(conn.execute(delete(ChatStateRow).where(*key)).rowcount)


class SqlContextUsage:
    """One bot's context-usage records."""

    def __init__(self, engine: Engine, *, bot: str) -> None:
        self.engine = engine
        self.bot = tenant(bot)

    def record(self, usage: ContextUsage) -> None:
        values = {
            "bot_id": self.bot,
            "context_id": usage.context_id,
            "platform": usage.platform,
            "chat_type": usage.chat_type,
            "chat_id": usage.chat_id,
            "persona_id": usage.persona_id,
            "user_id": usage.user_id,
            "trigger_message_id": usage.trigger_message_id,
            "context_message_ids": usage.context_message_ids,
            "relevance_scores": usage.relevance_scores,
            "llm_response": usage.llm_response,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "cost": usage.cost,
            "memory_ids": usage.memory_ids,
            "action": usage.action,
            "reason": usage.reason,
            "created_at": time.time(),
        }
        key = {"k_bot": self.bot, "k_context": usage.context_id}
        with self.engine.begin() as conn:
            if not conn.execute(_USAGE_SET, {**values, **key}).rowcount:
                conn.execute(_USAGE_NEW, values)

    def get(self, context_id: str) -> ContextUsage | None:
        return self.get_many([context_id]).get(context_id)

    def get_many(self, context_ids: Sequence[str]) -> dict[str, ContextUsage]:
        found: dict[str, ContextUsage] = {}
        with Session(self.engine) as s:
            for part in chunks(list(context_ids)):
                query = select(ContextUsageRow).where(
                    mine(ContextUsageRow, self.bot), ContextUsageRow.context_id.in_(part)
                )
                found.update((row.context_id, _usage(row)) for row in s.scalars(query))
        return found

    def forget(self, target: ForgetTarget, said: Said | None = None) -> int:
        """The records of a chat, or of the replies to a person (in one chat or all) and,
        with ``said``, those in their chats whose reply quotes or names them, or was given
        one of their memories."""
        with self.engine.begin() as conn:
            where = covered(ContextUsageRow, target, self.bot)
            gone = int(conn.execute(delete(ContextUsageRow).where(*where)).rowcount)
            if target.user_id is None or said is None:
                return gone
            chats = covered(ContextUsageRow, target, self.bot, everyone=True)
            columns = (ContextUsageRow.context_id, ContextUsageRow.llm_response,
                       ContextUsageRow.memory_ids)  # fmt: skip
            rows = conn.execute(select(*columns).where(*chats)).all()
            quoting = [
                cid
                for cid, reply, memory_ids in rows
                if said.mentioned_in(reply or "") or said.drew_on(memory_ids or [])
            ]
            for part in chunks(quoting):
                conn.execute(
                    delete(ContextUsageRow).where(*chats, ContextUsageRow.context_id.in_(part))
                )
            return gone + len(quoting)


def _usage(row: ContextUsageRow) -> ContextUsage:
    return ContextUsage(
        context_id=row.context_id,
        platform=row.platform,
        chat_type=row.chat_type,  # type: ignore[arg-type]
        chat_id=row.chat_id,
        persona_id=row.persona_id,
        user_id=row.user_id,
        trigger_message_id=row.trigger_message_id,
        context_message_ids=list(row.context_message_ids),
        relevance_scores=dict(row.relevance_scores),
        llm_response=row.llm_response,
        prompt_tokens=row.prompt_tokens,
        completion_tokens=row.completion_tokens,
        cost=row.cost,
        memory_ids=list(row.memory_ids or []),
        action=row.action,
        reason=row.reason,
    )
