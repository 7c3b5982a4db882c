"""Who may see what: the same per-bot keys as the LangGraph server (``GROUPMIND_BOTS``).

A program names its key in a header (``x-api-key`` or ``Authorization: Bearer``); a
browser logs in once with it and then holds a session: the cookie is a random id mapped to
the bot server-side (``stores.sql.sessions``), never the key itself (cookies are not kept
apart by port: every other web service on the host would receive it). A session ends at
logout, after ``TTL_S``, or when the key it was opened with is taken away. With no keys
configured the console answers this machine only: a connection from elsewhere, or one a
proxy says it forwarded, is refused.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from starlette.datastructures import Headers

from groupmind.console.guard import proxied
from groupmind.exposure import loopback
from groupmind.settings import BotKey
from stores.sql.sessions import ConsoleSession, SqlConsoleSessions, digest

COOKIE = "groupmind_session"
OLD_COOKIE = "groupmind_key"  # held the raw key before sessions: deleted wherever seen


def bot_for(keys: tuple[BotKey, ...], key: str | None) -> BotKey | None:
    """The bot whose key this is (compared in constant time), or None."""
    if not key:
        return None
    for bot in keys:
        if hmac.compare_digest(bot.api_key.get_secret_value().encode(), key.encode()):
            return bot
    return None


def header_key(authorization: str | None, api_key: str | None) -> str | None:
    scheme, _, token = (authorization or "").strip().partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return (api_key or "").strip() or None


@dataclass(frozen=True)
class Who:
    """Whom a request is for: the bot, the key's own entry (None without keys), and the
    browser session it came with, if any. A request keyed in a header is a program's,
    not a page's: it needs no form token."""

    bot: str
    key: BotKey | None = None
    session_id: str | None = None
    session: ConsoleSession | None = None

    @property
    def by_header(self) -> bool:
        return self.key is not None and self.session is None


@dataclass(frozen=True)
class Access:
    keys: tuple[BotKey, ...]
    open_bot: str  # whose data a keyless console (this machine only) shows

    def open_to(self, client_host: str | None, headers: Headers) -> bool:
        """A console without keys: only a connection from this machine that no proxy
        forwarded."""
        return (
            not self.keys and bool(client_host) and loopback(client_host or "")
        ) and not proxied(headers)

    def who(
        self,
        headers: Headers,
        client_host: str | None,
        session_id: str | None,
        sessions: SqlConsoleSessions,
    ) -> Who | None:
        """The request's bot, by a key in a header, a live session, or (no keys) this
        machine; None: refused."""
        key = header_key(headers.get("authorization"), headers.get("x-api-key"))
        if key is not None:
            found = bot_for(self.keys, key)
            return Who(found.id, found) if found else None
        session = sessions.get(session_id)
        if session is not None and self._holds(session, client_host, headers):
            found = self._key_of(session)
            return Who(session.bot, found, session_id, session)
        if self.open_to(client_host, headers):
            return Who(self.open_bot)
        return None

    def _key_of(self, session: ConsoleSession) -> BotKey | None:
        return next(
            (
                k
                for k in self.keys
                if k.id == session.bot
                and hmac.compare_digest(digest(k.api_key.get_secret_value()), session.key_hash)
            ),
            None,
        )

    def _holds(self, session: ConsoleSession, client_host: str | None, headers: Headers) -> bool:
        """A session stands while the key it was opened with is still the bot's (or, without
        keys, while the console is still keyless and the request is this machine's)."""
        if self.keys:
            return bool(session.key_hash) and self._key_of(session) is not None
        return (
            not session.key_hash
            and session.bot == self.open_bot
            and self.open_to(client_host, headers)
        )
