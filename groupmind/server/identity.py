"""Which bot a server run belongs to: the identity the server's auth handler put in the
run's config (``langgraph_auth_user_id``), never anything the run's input, context or
state says."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from groupmind.settings import Settings

OPEN = "open"  # the identity of every request when no bot is configured (never a bot id)


class NoBot(PermissionError):
    """A run that must act for a bot carries no configured bot's identity."""


def run_bot(config: Mapping[str, Any] | None, settings: Settings) -> str:
    """The bot whose stores a run's graphs are built over. Without configured bots the
    server is one bot's, the deployment's own (``GROUPMIND_BOT_ID``). With bots, the run's
    authenticated identity must be one of them; a graph built only to be read (its schema,
    with no identity) gets the deployment's own bot."""
    if not settings.bots:
        return settings.bot_id
    configurable = (config or {}).get("configurable") or {}
    identity = configurable.get("langgraph_auth_user_id")
    if identity is not None and settings.bot(str(identity)) is not None:
        return str(identity)
    if identity is None and not configurable.get("__is_for_execution__"):
        return settings.bot_id
    raise NoBot(f"this run's identity {identity!r} is not a configured bot (GROUPMIND_BOTS)")
