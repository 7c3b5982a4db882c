"""Who may see what: the same per-bot keys as the LangGraph server (``GROUPMIND_BOTS``).

A request names its key as ``x-api-key``, ``Authorization: Bearer`` or the console's
cookie (set by its login form); the key's bot is the only bot whose data it sees. With no
keys configured the console is open to this machine only (a request from elsewhere is
refused), as the server is.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from groupmind.exposure import loopback
from groupmind.settings import BotKey

COOKIE = "groupmind_key"


def bot_for(keys: tuple[BotKey, ...], key: str | None) -> BotKey | None:
    """The bot whose key this is (compared in constant time), or None."""
    if not key:
        return None
    for bot in keys:
        if hmac.compare_digest(bot.api_key.get_secret_value().encode(), key.encode()):
            return bot
    return None


def key_of(authorization: str | None, api_key: str | None, cookie: str | None) -> str | None:
    scheme, _, token = (authorization or "").strip().partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return api_key or cookie or None


@dataclass(frozen=True)
class Access:
    keys: tuple[BotKey, ...]
    open_bot: str  # whose data a keyless console (loopback only) shows

    def bot(self, key: str | None, client_host: str | None) -> str | None:
        """The bot a request may see, or None (refused)."""
        if self.keys:
            found = bot_for(self.keys, key)
            return found.id if found else None
        return self.open_bot if client_host and loopback(client_host) else None
