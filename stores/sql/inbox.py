"""The run inbox in SQL (``stores.base.RunInbox``)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine, delete, insert, select
from sqlalchemy.exc import IntegrityError

from domain.scope import ChatScope, ForgetTarget
from stores.sql.covered import covered, mine, tenant
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
                    insert(RunInboxRow).values(
                        bot_id=self.bot,
                        thread_id=thread_id,
                        message_id=str(message["message_id"]),
                        payload=message,
                        platform=scope.platform,
                        chat_type=scope.chat_type,
                        chat_id=scope.chat_id,
                        user_id=str(message.get("user_id", "")),
                        received_at=time.time(),
                    )
                )
        except IntegrityError:
            pass  # journaled already (the same message sent again)

    def waiting(self, thread_id: str) -> list[dict[str, Any]]:
        query = (
            select(RunInboxRow.payload)
            .where(mine(RunInboxRow, self.bot), RunInboxRow.thread_id == thread_id)
            .order_by(RunInboxRow.received_at)
        )
        with self.reads.connect() as conn:
            return [dict(p) for p in conn.execute(query).scalars()]

    def take(self, thread_id: str, message_ids: Sequence[str]) -> None:
        if not message_ids:
            return
        with self.engine.begin() as conn:
            conn.execute(
                delete(RunInboxRow).where(
                    mine(RunInboxRow, self.bot),
                    RunInboxRow.thread_id == thread_id,
                    RunInboxRow.message_id.in_(list(message_ids)),
                )
            )

    def forget(self, target: ForgetTarget) -> int:
        with self.engine.begin() as conn:
            return int(
                conn.execute(
                    delete(RunInboxRow).where(*covered(RunInboxRow, target, self.bot))
                ).rowcount
            )
