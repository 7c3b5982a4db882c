"""The bridge's journal: every message event written durably the moment it arrives, then
what groupmind decided and whether the answer went out, so a bridge killed at any point
loses nothing and answers nothing twice.

OneBot v11 implementations push each event once and never resend it: an event the bridge
held only in memory dies with it. Here, an event is committed (SQLite, synchronous=FULL)
before anything else happens to it; on restart every event not yet answered is taken up
again, in its chat's order. An answer is recorded as ``sending`` just before its frame is
written: one found in that state after a crash, or whose confirmation never came, may or
may not have reached the implementation, and is not sent again (at most once; logged as
``unconfirmed``). The id the implementation returns for a sent answer is kept, so a user
quoting the bot's message is replying to the bot.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    Engine,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    inspect,
    null,
    select,
    update,
)
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import OperationalError
from sqlalchemy.sql.elements import ColumnElement

from domain.scope import ForgetTarget
from stores.said import Said
from stores.sql.covered import chunks

KEEP_S = 7 * 86400  # finished events are kept a week: quotes of the bot's answers resolve
metadata = MetaData()
events = Table(
    "events",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),  # arrival order
    Column("bot", String(64), nullable=False, server_default=""),  # '': journaled before bots
    Column("self_id", String(64), nullable=False),
    Column("message_id", String(128), nullable=False),
    Column("chat", String(300), nullable=False),
    Column("event", JSON, nullable=False),
    # received -> decided -> sending -> sent | unconfirmed; done (nothing to send); refused
    Column("state", String(16), nullable=False),
    Column("action", JSON),  # the send action groupmind's answer became
    Column("reply_id", String(160)),  # groupmind's id of the bot's answer
    Column("sent_id", String(128)),  # the implementation's id of the sent answer
    Column("error", Text),
    Column("received_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    UniqueConstraint("self_id", "message_id", name="uq_events_message"),
    Index("ix_events_state", "state", "seq"),
    Index("ix_events_sent", "self_id", "sent_id"),
)
OPEN_STATES = ("received", "decided")
# erased: forget blanked it (no content, no answer, no chat): its id alone stays, so a
# redelivery of it is taken once and never answered again
FINISHED = ("done", "sent", "unconfirmed", "refused", "failed", "erased")


@dataclass(frozen=True)
class Entry:
    seq: int
    self_id: str
    message_id: str
    chat: str
    event: dict[str, Any]
    state: str
    action: tuple[str, dict[str, Any]] | None


class Journal:
    """One file; ``bot``: the groupmind bot whose bridge writes it (one file may serve
    several bots' bridges: each one's forget erases its own rows)."""

    def __init__(self, path: Path, bot: str = "") -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.bot = path, bot
        self.engine: Engine = create_engine(f"sqlite:///{path}", hide_parameters=True)

        @event.listens_for(self.engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=FULL")  # committed means on disk
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        metadata.create_all(self.engine)
        with self.engine.begin() as conn:  # a journal from before rows named their bot
            if "bot" not in {c["name"] for c in inspect(conn).get_columns("events")}:
                with contextlib.suppress(OperationalError):  # another bridge added it first
                    conn.exec_driver_sql(
                        "ALTER TABLE events ADD COLUMN bot VARCHAR(64) NOT NULL DEFAULT ''"
                    )
        self._lock = threading.Lock()

    def receive(self, arrivals: list[tuple[str, dict[str, Any], str]]) -> list[int | None]:
        """Commit arriving message events ``(self_id, event, chat)``, all in one transaction
        (one write to disk however many came together); each one's seq, or None when it was
        journaled before (an implementation that does resend, or a duplicate frame)."""
        now = time.time()
        seqs: list[int | None] = []
        with self._lock, self.engine.begin() as conn:
            for self_id, event_value, chat in arrivals:
                row = {"bot": self.bot, "self_id": self_id,
                       "message_id": str(event_value.get("message_id")), "chat": chat,
                       "event": event_value, "state": "received", "received_at": now,
                       "updated_at": now}  # fmt: skip
                stmt = sqlite_insert(events).values(**row).on_conflict_do_nothing()
                seqs.append(conn.execute(stmt.returning(events.c.seq)).scalar())
        return seqs

    def refuse(self, seq: int, error: str) -> None:
        self._set(seq, state="refused", error=error)

    def decide(self, seq: int, action: tuple[str, dict[str, Any]] | None, reply_id: str) -> None:
        """groupmind's answer, before it is sent (None: nothing to send)."""
        if action is None:
            self._set(seq, state="done")
        else:
            self._set(seq, state="decided", action=list(action), reply_id=reply_id)

    def sending(self, seq: int) -> None:
        self._set(seq, state="sending")

    def not_sent(self, seq: int) -> None:
        """The frame never left (no connection): it may be sent again."""
        self._set(seq, state="decided")

    def sent(self, seq: int, sent_id: str | None) -> None:
        self._set(seq, state="sent", sent_id=sent_id)

    def unconfirmed(self, seq: int, error: str) -> None:
        self._set(seq, state="unconfirmed", error=error)

    def failed(self, seq: int, error: str) -> None:
        self._set(seq, state="failed", error=error)

    def _set(self, seq: int, **values: Any) -> None:
        with self._lock, self.engine.begin() as conn:
            conn.execute(
                update(events).where(events.c.seq == seq).values(**values, updated_at=time.time())
            )

    def resume(self) -> tuple[list[Entry], int]:
        """After a restart: the events still to answer or to send, oldest first; answers
        found mid-send are marked ``unconfirmed`` (their count is returned), never resent.
        Finished events older than a week are dropped."""
        with self._lock, self.engine.begin() as conn:
            torn = conn.execute(
                update(events)
                .where(events.c.state == "sending")
                .values(state="unconfirmed", error="the bridge stopped while it was sending",
                        updated_at=time.time())
            ).rowcount  # fmt: skip
            conn.execute(
                events.delete().where(
                    events.c.state.in_(FINISHED), events.c.updated_at < time.time() - KEEP_S
                )
            )
            rows = conn.execute(
                select(events).where(events.c.state.in_(OPEN_STATES)).order_by(events.c.seq)
            ).all()
        return [_entry(r) for r in rows], int(torn)

    def reply_for(self, self_id: str, sent_id: str) -> str | None:
        """groupmind's id of the bot answer the implementation knows as ``sent_id``."""
        query = select(events.c.reply_id).where(
            events.c.self_id == self_id, events.c.sent_id == sent_id
        )
        with self.engine.connect() as conn:
            found = conn.execute(query).scalar()
        return None if found is None else str(found)

    def forget(self, target: ForgetTarget, said: Said) -> int:
        """Erase what a forget covers, of this bot's rows (and of rows from before rows
        named their bot): a chat's every event; a person's events, and events whose frame
        or answer quotes or names them (``said``: their words, or what memory made of
        them). Each is blanked to its id, state ``erased``: the frame, the answer and the
        chat go, and an implementation that delivers the event again (after a reconnect)
        finds it taken, so the erased answer is never sent again. Unanswered ones are not
        answered. How many rows were erased."""
        chats: ColumnElement[bool] = events.c.chat.like(f"{target.platform}:%")
        if target.chat is not None:
            chats = events.c.chat == target.chat.key
        mine = (events.c.bot.in_((self.bot, "")), chats)
        with self._lock, self.engine.begin() as conn:
            rows = conn.execute(select(events.c.seq, events.c.event, events.c.action).where(*mine))
            gone = [
                seq
                for seq, frame, action in rows
                if target.user_id is None
                or str(frame.get("user_id")) == target.user_id
                or said.mentioned_in(json.dumps([frame, action], ensure_ascii=False))
            ]
            blank = {"chat": "", "event": {}, "action": null(), "error": None,
                     "state": "erased", "updated_at": time.time()}  # fmt: skip
            for part in chunks(gone):
                conn.execute(update(events).where(events.c.seq.in_(part)).values(**blank))
        return len(gone)

    def counts(self) -> dict[str, int]:
        from sqlalchemy import func

        with self.engine.connect() as conn:
            rows = conn.execute(select(events.c.state, func.count()).group_by(events.c.state))
            return {state: int(n) for state, n in rows}

    def close(self) -> None:
        self.engine.dispose()


@dataclass(frozen=True)
class JournalAt:
    """One bot's rows of the journal at ``path``, for forget (``stores.base.BridgeJournal``):
    the file is opened only when there is one, beside a bridge that may be running."""

    path: Path
    bot: str

    def forget(self, target: ForgetTarget, said: Said) -> int:
        if not self.path.exists():
            return 0
        journal = Journal(self.path, self.bot)
        try:
            return journal.forget(target, said)
        finally:
            journal.close()


def _entry(row: Any) -> Entry:
    event_value = row.event if isinstance(row.event, dict) else json.loads(row.event)
    action = None
    if row.action:
        name, params = row.action
        action = (str(name), dict(params))
    return Entry(row.seq, row.self_id, row.message_id, row.chat, event_value, row.state, action)
