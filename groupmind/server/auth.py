"""Who may use a LangGraph server running groupmind (``langgraph.json`` names ``auth``).

Each bot has an API key (``GROUPMIND_BOTS``), sent as ``x-api-key`` (what ``langgraph_sdk``
sends for ``api_key=``) or ``Authorization: Bearer`` (the scheme in any case). A bot sees,
creates and runs only its own threads, runs, assistants and store items (they are stamped
with its id and filtered by it: another bot's come back 404); its runs stay in its
platforms; and the graphs a run gets are built over that bot's own stores
(``groupmind.server.graphs``), so no input, command or state update reaches another bot's
data. A reply thread's id (``stream_thread_id``) is its bot's: no other bot may create it
or run on it. With no bots configured the server is open, as a local ``langgraph dev``
is: it says so in its log, and refuses to listen beyond loopback unless told it may.

Checks come before anything is written: a refused run journals nothing.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import uuid
from pathlib import Path
from typing import Any

from langgraph_sdk import Auth

from groupmind.console.access import bot_for as keyed_bot
from groupmind.exposure import listening_host, loopback
from groupmind.server.identity import OPEN
from groupmind.settings import BotKey, process_settings
from groupmind.threads import stream_of, stream_thread_id

log = logging.getLogger("groupmind.server")
auth = Auth()
ANY_PLATFORM = "platform:*"


def _runs_keep_their_user() -> None:
    """langhost (the PostgreSQL runtime, 0.11) keeps a run's config, the authenticated user
    in it, through SQLAlchemy's default JSON encoder, which cannot encode the server's user
    object: with custom auth every run failed (HTTP 500, "ProxyUser is not JSON
    serializable"). Its engine gets the API server's own encoder, which can. The server
    imports this module before it opens its database; elsewhere this does nothing."""
    try:
        from langgraph_runtime_pg import database  # type: ignore[import-not-found]
    except ImportError:
        return
    import orjson
    from langgraph_api.serde import default  # type: ignore[import-untyped]

    make = database.create_async_engine
    if getattr(make, "groupmind", False):
        return

    def encode(value: Any) -> str:
        return orjson.dumps(value, default=default).decode()

    def create_async_engine(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("json_serializer", encode)
        return make(*args, **kwargs)

    create_async_engine.groupmind = True  # type: ignore[attr-defined]
    database.create_async_engine = create_async_engine


_runs_keep_their_user()


settings = process_settings


def bots() -> tuple[BotKey, ...]:
    return tuple(settings().bots)


class OpenServer(SystemExit):
    """A server with no keys would listen beyond this machine."""


def check_exposure(argv: list[str]) -> None:
    """At start: a server with no bot keys refuses to listen beyond loopback unless the
    operator allows it (``GROUPMIND_ALLOW_OPEN_SERVER``); on loopback it says it is open."""
    if settings().bots:
        return
    host = listening_host(argv)
    if not loopback(host) and not settings().allow_open_server:
        raise OpenServer(
            f"groupmind: no GROUPMIND_BOTS configured and the server would listen on {host}: "
            "anyone who reaches it could read and run every thread. Configure bot API keys "
            "(docs/scopes.md), listen on 127.0.0.1, or set GROUPMIND_ALLOW_OPEN_SERVER=true "
            "if something in front of it already admits only your bots."
        )
    log.warning(
        "groupmind: no GROUPMIND_BOTS configured, so this server is OPEN (listening on %s): "
        "anyone who can reach it can read and run every thread. Configure bot API keys "
        "before exposing it.",
        host,
    )


def check_storage(argv: list[str], cwd: Path) -> None:
    """`langgraph dev` keeps its own records of threads and runs (``.langgraph_api``) in
    the directory it runs in: outside the data dir, a forget does not reach them, and
    another deployment started there sees them (``make serve`` runs in the data dir)."""
    if "dev" in argv and cwd.resolve() != settings().data_dir.resolve():
        log.warning(
            "groupmind: `langgraph dev` keeps its threads and runs in %s/.langgraph_api, "
            "outside the data dir %s: run it there (make serve does)",
            cwd,
            settings().data_dir,
        )


check_exposure(sys.argv)  # the server loads this module as it starts
check_storage(sys.argv, Path.cwd())


def bot_for(key: str | None) -> BotKey | None:
    """The bot whose key this is (compared in constant time), or None."""
    return keyed_bot(bots(), key)


def _key(authorization: str | None, headers: dict[bytes, bytes]) -> str | None:
    scheme, _, token = (authorization or "").strip().partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    raw = headers.get(b"x-api-key")
    return raw.decode() if raw else None


def refuse(status: int, detail: str) -> Auth.exceptions.HTTPException:
    return Auth.exceptions.HTTPException(status_code=status, detail=detail)


@auth.authenticate
async def authenticate(
    authorization: str | None, headers: dict[bytes, bytes]
) -> Auth.types.MinimalUserDict:
    if not bots():
        return {"identity": OPEN, "permissions": [ANY_PLATFORM]}
    bot = bot_for(_key(authorization, headers))
    if bot is None:
        raise refuse(401, "a valid bot API key is required")
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


def run_platforms(kwargs: dict[str, Any], default_platform: str) -> list[str]:
    """The platforms a run's input and command act on: a reply's message, a memory job's or
    a forget's platform, and whatever a command's state update names."""
    found: list[str] = []
    command = kwargs.get("command")
    update = command.get("update") if isinstance(command, dict) else None
    for part in (kwargs.get("input"), update):
        if not isinstance(part, dict):
            continue
        messages = part.get("message")
        for message in messages if isinstance(messages, list) else [messages]:
            if isinstance(message, dict):
                found.append(str(message.get("platform") or ""))
        msg = part.get("msg")
        if isinstance(msg, dict):
            found.append(str(msg.get("platform") or ""))
        if messages is None and msg is None:
            found.append(str(part.get("platform") or default_platform))
    return found


def is_stream_thread(thread_id: Any) -> bool:
    """Stream thread ids are name-based (version 5); the server's own ids are not."""
    try:
        return uuid.UUID(str(thread_id)).version == 5
    except ValueError:
        return False


def _check_stream_thread(thread_id: Any, stream: str | None, bot: str) -> None:
    """A reply thread's id is ``stream_thread_id(stream, bot)``: only that bot may create
    it, and only that stream's messages run on it. Another bot could compute the id, so
    whoever names one must show the stream it is for, and be its bot."""
    if stream is None or str(thread_id) != stream_thread_id(stream, bot):
        raise refuse(
            403,
            "a reply thread belongs to one bot and one stream: send a message on "
            "stream_thread_id(its stream, your bot id)",
        )


def _message_stream(kwargs: dict[str, Any]) -> str | None:
    run_input = kwargs.get("input")
    message = run_input.get("message") if isinstance(run_input, dict) else None
    if not isinstance(message, dict):
        return None
    try:
        return stream_of(message)
    except ValueError as exc:
        raise refuse(422, f"message: {exc}") from None


@auth.on.threads.create_run
async def run_in_own_platforms(
    ctx: Auth.types.AuthContext, value: Auth.types.RunsCreate
) -> Auth.types.FilterType | None:
    kwargs = value.get("kwargs") or {}
    identity = ctx.user.identity
    if identity != OPEN:
        allowed = set(ctx.permissions)
        if ANY_PLATFORM not in allowed:
            for platform in run_platforms(kwargs, settings().default_platform):
                if f"platform:{platform}" not in allowed:
                    mine = sorted(p.removeprefix("platform:") for p in allowed)
                    raise refuse(
                        403, f"platform {platform!r} is not one of this bot's ({', '.join(mine)})"
                    )
        thread_id, stream = value.get("thread_id"), _message_stream(kwargs)
        # A message runs on its own stream's thread; nothing creates a stream thread blind.
        # A stateless run (no thread: a host's recall or tool call) touches no thread.
        creates = value.get("if_not_exists") == "create" and is_stream_thread(thread_id)
        if thread_id is not None and (stream is not None or creates):
            _check_stream_thread(thread_id, stream, identity)
    run_input = kwargs.get("input")
    if value.get("thread_id") and isinstance(run_input, dict):
        message = run_input.get("message")
        if isinstance(message, dict):
            bot = settings().bot_id if identity == OPEN else identity
            await asyncio.to_thread(journal, bot, str(value["thread_id"]), message)
    return _own(ctx, value)


@auth.on.threads.create
async def create_own_thread(
    ctx: Auth.types.AuthContext, value: Auth.types.ThreadsCreate
) -> Auth.types.FilterType | None:
    if ctx.user.identity != OPEN and is_stream_thread(value.get("thread_id")):
        metadata = value.get("metadata") or {}
        stream = metadata.get("stream") if isinstance(metadata, dict) else None
        _check_stream_thread(value.get("thread_id"), str(stream) if stream else None,
                             ctx.user.identity)  # fmt: skip
    return _own(ctx, value)


def assistant_variants(value: Any) -> dict[str, str]:
    """The variants an assistant pins: its context's, or its config's ``configurable``."""
    found: dict[str, str] = {}
    config = value.get("config") if isinstance(value, dict) else None
    configurable = config.get("configurable") if isinstance(config, dict) else None
    for part in (configurable, value.get("context") if isinstance(value, dict) else None):
        variants = part.get("variants") if isinstance(part, dict) else None
        if variants is None:
            continue
        if not isinstance(variants, dict):
            raise refuse(422, "variants: must be an object of slot -> variant name")
        found.update({str(k): str(v) for k, v in variants.items()})
    return found


def _check_assistant(value: Any) -> None:
    """An assistant is an arm: its variants must exist, not be refused plugins, and be able
    to run here (``llm`` needs a model), or it is refused at creation, naming the slot,
    instead of failing on every run."""
    from nodes.variants import UnknownVariant, registry

    try:
        registry().check(assistant_variants(value), has_model=bool(settings().chat_model))
    except UnknownVariant as exc:
        raise refuse(422, str(exc)) from None


@auth.on.assistants.create
async def create_assistant(
    ctx: Auth.types.AuthContext, value: Auth.types.AssistantsCreate
) -> Auth.types.FilterType | None:
    await asyncio.to_thread(_check_assistant, value)
    return _own(ctx, value)


@auth.on.assistants.update
async def update_assistant(
    ctx: Auth.types.AuthContext, value: Auth.types.AssistantsUpdate
) -> Auth.types.FilterType | None:
    await asyncio.to_thread(_check_assistant, value)
    return _own(ctx, value)


def journal(bot: str, thread_id: str, message: dict[str, Any]) -> None:
    """Keep a reply run's message before the server queues the run: if the server cancels
    or rolls the run back before it starts (double-texting), the thread's next run takes
    it (``nodes.reply.arrivals``). Written only once the run passed every check, into the
    bot's own inbox. A message that does not validate is left to the run."""
    from groupmind.wiring import open_runtime
    from state.reply import ChatMessage
    from state.validation import InputError, validated

    deps = open_runtime().deps_for(bot)
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
