"""Who may use a LangGraph server running groupmind (``langgraph.json`` names ``auth``).

Each bot has an API key (``GROUPMIND_BOTS``), sent as ``x-api-key`` (what ``langgraph_sdk``
sends for ``api_key=``) or ``Authorization: Bearer``. A bot sees, creates and runs only its
own threads, runs, assistants and store items (they are stamped with its id and filtered
by it: another bot's come back 404), and its runs must stay in its platforms. With no bots
configured the server is open, as a local ``langgraph dev`` is, and says so in its log.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from functools import lru_cache
from typing import Any

from langgraph_sdk import Auth

from groupmind.settings import BotKey, Settings

log = logging.getLogger("groupmind.server")
auth = Auth()
OPEN = "open"  # the identity of every request when no bot is configured
ANY_PLATFORM = "platform:*"


@lru_cache(maxsize=1)
def bots() -> tuple[BotKey, ...]:
    configured = tuple(Settings().bots)
    if not configured:
        log.warning(
            "groupmind: no GROUPMIND_BOTS configured, so this server is OPEN: anyone who can "
            "reach it can read and run every thread. Configure bot API keys before exposing it."
        )
    return configured


def bot_for(key: str | None) -> BotKey | None:
    """The bot whose key this is (compared in constant time), or None."""
    if not key:
        return None
    for bot in bots():
        if hmac.compare_digest(bot.api_key.get_secret_value().encode(), key.encode()):
            return bot
    return None


def _key(authorization: str | None, headers: dict[bytes, bytes]) -> str | None:
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    raw = headers.get(b"x-api-key")
    return raw.decode() if raw else None


@auth.authenticate
async def authenticate(
    authorization: str | None, headers: dict[bytes, bytes]
) -> Auth.types.MinimalUserDict:
    if not bots():
        return {"identity": OPEN, "permissions": [ANY_PLATFORM]}
    bot = bot_for(_key(authorization, headers))
    if bot is None:
        raise Auth.exceptions.HTTPException(
            status_code=401, detail="a valid bot API key is required"
        )
    platforms = [f"platform:{p}" for p in bot.platforms] or [ANY_PLATFORM]
    return {"identity": bot.id, "permissions": platforms}


def _own(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType | None:
    """Stamp what is created with the bot's id; show and act only on what carries it."""
    if ctx.user.identity == OPEN:
        return None
    owner = {"owner": ctx.user.identity}
    if isinstance(value, dict):
        metadata = value.get("metadata")
        if isinstance(metadata, dict):
            metadata.update(owner)
        elif "metadata" in value or ctx.action in ("create", "create_run"):
            value["metadata"] = dict(owner)
    return owner


@auth.on
async def owned(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType | None:
    return _own(ctx, value)


def run_platforms(run_input: Any, default_platform: str) -> list[str]:
    """The platforms a run's input acts on: a reply's message, a memory job, a forget."""
    if not isinstance(run_input, dict):
        return []
    message = run_input.get("message")
    if isinstance(message, dict):
        return [str(message.get("platform") or "")]
    return [str(run_input.get("platform") or default_platform)]


@auth.on.threads.create_run
async def run_in_own_platforms(
    ctx: Auth.types.AuthContext, value: Auth.types.RunsCreate
) -> Auth.types.FilterType | None:
    allowed = set(ctx.permissions)
    if ANY_PLATFORM not in allowed:
        kwargs = value.get("kwargs") or {}
        default = Settings().default_platform
        for platform in run_platforms(kwargs.get("input"), default):
            if f"platform:{platform}" not in allowed:
                mine = sorted(p.removeprefix("platform:") for p in allowed)
                raise Auth.exceptions.HTTPException(
                    status_code=403,
                    detail=f"platform {platform!r} is not one of this bot's ({', '.join(mine)})",
                )
    run_input = (value.get("kwargs") or {}).get("input")
    if value.get("thread_id") and isinstance(run_input, dict):
        message = run_input.get("message")
        if isinstance(message, dict):
            await asyncio.to_thread(journal, str(value["thread_id"]), message)
    return _own(ctx, value)


def journal(thread_id: str, message: dict[str, Any]) -> None:
    """Keep a reply run's message before the server queues the run: if the server cancels
    or rolls the run back before it starts (double-texting), the thread's next run takes
    it (``nodes.reply.arrivals``). A message that does not validate is left to the run."""
    from groupmind.wiring import open_runtime
    from state.reply import ChatMessage
    from state.validation import InputError, validated

    deps = open_runtime().deps
    try:
        msg = validated(ChatMessage, message, "message", deps.validation)
        if deps.run_inbox is not None:
            deps.run_inbox.put(thread_id, message, scope=msg.scope)
    except InputError:
        pass
    except Exception:  # noqa: BLE001 - journaling must never block the run itself
        log.warning("could not journal a message for thread %s", thread_id, exc_info=True)


@auth.on.store
async def own_namespace(ctx: Auth.types.AuthContext, value: Any) -> None:
    """Store items live under the bot's own namespace."""
    if ctx.user.identity == OPEN:
        return
    namespace = tuple(value.get("namespace") or ())
    if namespace[:1] != (ctx.user.identity,):
        value["namespace"] = (ctx.user.identity, *namespace)
