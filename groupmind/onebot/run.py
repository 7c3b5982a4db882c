"""``groupmind onebot``: the bridge with its brain, until SIGINT or SIGTERM."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from groupmind.exposure import loopback
from groupmind.onebot.brains import Brain, InProcessBrain, ServerBrain
from groupmind.onebot.bridge import PATH, Bridge
from groupmind.onebot.events import StickerMode
from groupmind.settings import Settings
from stores.journal import Journal

log = logging.getLogger("groupmind.onebot")


class Refused(RuntimeError):
    """The bridge will not start this way; the message says why and what to do."""


@dataclass(frozen=True)
class BridgeOptions:
    host: str = "127.0.0.1"
    port: int = 8080
    access_token: str | None = None
    connect: str | None = None  # forward mode: the implementation's WebSocket URL
    server: str | None = None  # a LangGraph server instead of the graphs in-process
    api_key: str | None = None
    platform: str = "qq"
    stickers: StickerMode = "image"
    journal: Path | None = None  # default: Settings.onebot_journal


def check_exposure(opts: BridgeOptions) -> None:
    """No token and reachable beyond this machine: refused. On loopback: a warning."""
    if opts.access_token:
        return
    where = urlsplit(opts.connect).hostname or "" if opts.connect else opts.host
    if not loopback(where):
        raise Refused(
            f"no --access-token, and the bridge would be reachable at {where}: anyone who "
            "reaches it could speak as your bot's users. Set --access-token (the same token "
            "in the OneBot implementation), or listen on 127.0.0.1"
        )
    log.warning("onebot: no access token: only this machine can reach the bridge (%s)", where)


def make_brain(settings: Settings, opts: BridgeOptions, variants: dict[str, str]) -> Brain:
    if opts.server:
        return ServerBrain(opts.server, opts.api_key, settings.bot_id, variants)
    return InProcessBrain(settings, variants)


async def run_bridge(
    settings: Settings,
    opts: BridgeOptions,
    variants: dict[str, str],
    say: Callable[[str], object] = print,
) -> None:
    check_exposure(opts)
    brain = await asyncio.to_thread(make_brain, settings, opts, variants)
    if opts.journal and opts.journal.resolve() != settings.resolved_onebot_journal.resolve():
        log.warning("onebot: --journal %s: forget erases from %s; set GROUPMIND_ONEBOT_JOURNAL "
                    "instead", opts.journal, settings.resolved_onebot_journal)  # fmt: skip
    journal = Journal(opts.journal or settings.resolved_onebot_journal, bot=settings.bot_id)
    bridge = Bridge(
        brain,
        journal,
        bot_id=settings.bot_id,
        platform=opts.platform,
        access_token=opts.access_token,
        metrics_key=opts.api_key
        or next(
            (b.api_key.get_secret_value() for b in settings.bots if b.id == settings.bot_id), None
        ),
        sticker_mode=opts.stickers,
    )
    bridge.resume()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    where = f"LangGraph server {opts.server}" if opts.server else "the graphs in this process"
    try:
        if opts.connect:
            say(f"connecting to {opts.connect} (answers from {where}); Ctrl-C to stop")
            await bridge.connect_forward(opts.connect, stop)
        else:
            server = await bridge.serve_reverse(opts.host, opts.port)
            say(f"OneBot v11 reverse WebSocket on ws://{opts.host}:{opts.port}{PATH} "
                f"(answers from {where}); Ctrl-C to stop")  # fmt: skip
            await stop.wait()
            server.close()
            await server.wait_closed()
        await asyncio.wait_for(bridge.drain(), 30)
    except TimeoutError:
        log.warning("onebot: stopped with messages still being answered (the journal keeps them)")
    finally:
        await bridge.close()
