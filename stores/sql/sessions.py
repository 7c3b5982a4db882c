"""Console sessions in SQL: every process of a deployment (a server's console, a
``groupmind console`` beside it) sees the same logins, and a logout ends one everywhere.

The cookie carries a random id; the table keeps only its SHA-256, so a copy of the
database opens no session. A session expires (``ttl_s``) and is deleted by logout.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass

from sqlalchemy import Engine, delete, select, update
from sqlalchemy.orm import Session

from stores.sql.schema import ConsoleSessionRow

TTL_S = 12 * 3600  # a working day; then the operator logs in again


@dataclass(frozen=True)
class ConsoleSession:
    bot: str
    key_hash: str  # of the key it was opened with ('' on a console without keys)
    csrf: str  # what every form of this session carries back
    notice: str  # shown once, on the next page (then cleared)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class SqlConsoleSessions:
    def __init__(self, engine: Engine, ttl_s: float = TTL_S) -> None:
        self.engine, self.ttl_s = engine, ttl_s

    def open(self, bot: str, key: str | None) -> str:
        """A new session for ``bot``, opened with ``key`` (None: a console without keys);
        returns the id for the cookie (kept nowhere else)."""
        session_id, now = secrets.token_urlsafe(32), time.time()
        row = ConsoleSessionRow(
            id_hash=digest(session_id), bot_id=bot, key_hash=digest(key) if key else "",
            csrf=secrets.token_urlsafe(32),
            notice="", created_at=now, expires_at=now + self.ttl_s,
        )  # fmt: skip
        with Session(self.engine) as s, s.begin():
            s.execute(delete(ConsoleSessionRow).where(ConsoleSessionRow.expires_at < now))
            s.add(row)
        return session_id

    def get(self, session_id: str | None) -> ConsoleSession | None:
        """The live session of this id, or None (unknown, expired or logged out)."""
        if not session_id:
            return None
        query = select(ConsoleSessionRow).where(ConsoleSessionRow.id_hash == digest(session_id))
        with Session(self.engine) as s:
            row = s.scalars(query).first()
        if row is None or row.expires_at < time.time():
            return None
        return ConsoleSession(
            bot=row.bot_id, key_hash=row.key_hash, csrf=row.csrf, notice=row.notice
        )

    def tell(self, session_id: str, notice: str) -> None:
        """A notice for the session's next page (a form's outcome after its redirect)."""
        self._set(session_id, notice=notice[:500])

    def told(self, session_id: str) -> None:
        self._set(session_id, notice="")

    def close(self, session_id: str | None) -> None:
        if session_id:
            with Session(self.engine) as s, s.begin():
                s.execute(
                    delete(ConsoleSessionRow).where(ConsoleSessionRow.id_hash == digest(session_id))
                )

    def _set(self, session_id: str, **values: str) -> None:
        with Session(self.engine) as s, s.begin():
            s.execute(
                update(ConsoleSessionRow)
                .where(ConsoleSessionRow.id_hash == digest(session_id))
                .values(**values)
            )
