"""The run inbox in SQL (``stores.base.RunInbox``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine, bindparam, delete, insert, select
from sqlalchemy.exc import IntegrityError

from domain.scope import ChatScope, ForgetTarget
from stores.sql.covered import BOT, covered, mine, tenant
from stores.sql.engine import reads
from stores.sql.schema import RunInboxRow


class SqlRunInbox:
    """One bot's journaled run inputs."""

    def __init__(self, engine: Engine, *, bot: str) -> None:
        self.engine = engine
        self.reads = reads(engine)  # single reads: no transaction (stores/sql/engine.py)
        self.bot = tenant(bot)

    def put(self, thread_id: str, message: dict[str, Any], *, scope: ChatScope) -> None:
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    _PUT,
                    {
                        "bot_id": self.bot,
                        "thread_id": thread_id,
                        "message_id": str(message["message_id"]),
                        "payload": message,
                        "platform": scope.platform,
                        "chat_type": scope.chat_type,
                        "chat_id": scope.chat_id,
                        "user_id": str(message.get("user_id", "")),
                        "received_at": time.time(),
                    },
                )
        except IntegrityError:
            pass  # journaled already (the same message sent again)

    def waiting(self, thread_id: str) -> list[dict[str, Any]]:
        key = {"k_bot": self.bot, "k_thread": thread_id}
        with self.reads.connect() as conn:
            return [dict(p) for p in conn.execute(_WAITING, key).scalars()]

    def take(self, thread_id: str, message_ids: Sequence[str]) -> None:
        if not message_ids:
            return
        with self.engine.begin() as conn:
            key = {"k_bot": self.bot, "k_thread": thread_id, "k_ids": list(message_ids)}
            conn.execute(_TAKE, key)

    def forget(self, target: ForgetTarget) -> int:
        with self.engine.begin() as conn:
            return int(
                conn.execute(
                    delete(RunInboxRow).where(*covered(RunInboxRow, target, self.bot))
                ).rowcount
            )


# Every message goes through these: built once, bound per call (stores/sql/covered.py: BOT).
_PUT = insert(RunInboxRow)
_THREAD = (mine(RunInboxRow, BOT), RunInboxRow.thread_id == bindparam("k_thread"))
_WAITING = select(RunInboxRow.payload).where(*_THREAD).order_by(RunInboxRow.received_at)
_TAKE = delete(RunInboxRow).where(
    *_THREAD, RunInboxRow.message_id.in_(bindparam("k_ids", expanding=True))
)
