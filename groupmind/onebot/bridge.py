"""The OneBot v11 bridge (QQ through NapCat, Lagrange, LLOneBot, ...): events in, answers
out, over one Universal WebSocket per bot account.

- **Reverse** (default): the implementation connects to ``ws://HOST:PORT/onebot/v11/ws``
  with ``X-Self-ID``, ``X-Client-Role: Universal`` and, when a token is set,
  ``Authorization: Bearer T`` (or ``?access_token=T``); a missing token gets 401, a wrong
  one 403 (onebot-11 communication/ws-reverse.md, authorization.md).
- **Forward** (``--connect ws://...``): the bridge connects to the implementation's
  WebSocket and reconnects, with backoff, whenever it drops.

Each chat's messages are answered in order, one at a time; chats go side by side. Action
responses are matched to their request by ``echo``. The bot's own messages
(``message_sent``, or ``user_id == self_id``) are ignored; heartbeats and lifecycle events
are noted; a malformed event is logged and skipped. Answers wait for the connection to
come back rather than being dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.client import connect
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from groupmind.onebot.brains import Brain
from groupmind.onebot.events import (
    Malformed,
    StickerMode,
    answer_action,
    is_chat_message,
    to_message,
)

log = logging.getLogger("groupmind.onebot")
PATH = "/onebot/v11/ws"
ACTION_TIMEOUT_S = 30.0
SEND_WAIT_S = 300.0  # how long an answer waits for its connection to come back


class ActionFailed(RuntimeError):
    pass


@dataclass
class Link:
    """One implementation's connection (one bot account, ``self_id``)."""

    self_id: str
    send: Callable[[str], Awaitable[None]]
    pending: dict[str, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)

    async def call(self, action: str, params: dict[str, Any]) -> dict[str, Any]:
        echo = uuid.uuid4().hex
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[echo] = future
        try:
            await self.send(json.dumps({"action": action, "params": params, "echo": echo}))
            response = await asyncio.wait_for(future, ACTION_TIMEOUT_S)
        finally:
            self.pending.pop(echo, None)
        if response.get("status") == "failed" or response.get("retcode", 0) != 0:
            why = response.get("message") or response.get("wording") or ""
            raise ActionFailed(f"{action}: retcode {response.get('retcode')} {why}")
        return response

    def resolve(self, frame: dict[str, Any]) -> bool:
        future = self.pending.get(str(frame.get("echo")))
        if future is None or future.done():
            return False
        future.set_result(frame)
        return True

    def fail_all(self) -> None:
        for future in self.pending.values():
            if not future.done():
                future.set_exception(ConnectionError("the OneBot connection closed"))


class Bridge:
    def __init__(
        self,
        brain: Brain,
        *,
        bot_id: str = "bot",
        platform: str = "qq",
        access_token: str | None = None,
        sticker_mode: StickerMode = "image",
    ) -> None:
        self.brain = brain
        self.bot_id, self.platform = bot_id, platform
        self.access_token = access_token
        self.sticker_mode = sticker_mode
        self.links: dict[str, Link] = {}
        self.linked = asyncio.Event()
        self.chats: dict[str, asyncio.Queue[tuple[str, dict[str, Any]]]] = {}
        self.workers: dict[str, asyncio.Task[None]] = {}
        self.group_names: dict[str, str] = {}
        self.answered = 0
        self.skipped = 0

    # --- frames -------------------------------------------------------------------------

    async def on_frame(self, link: Link, raw: str | bytes) -> None:
        try:
            frame = json.loads(raw)
            if not isinstance(frame, dict):
                raise ValueError(f"a frame is a JSON object, got {type(frame).__name__}")
        except ValueError as exc:
            self.skipped += 1
            log.warning("onebot %s: malformed frame skipped: %s", link.self_id, exc)
            return
        if "post_type" not in frame:
            if not link.resolve(frame):
                log.debug("onebot %s: a response nobody waits for: %s", link.self_id, frame)
            return
        post = frame.get("post_type")
        if post == "meta_event":
            kind = frame.get("meta_event_type")
            if kind == "lifecycle":
                log.info("onebot %s: lifecycle %s", link.self_id, frame.get("sub_type"))
            elif kind == "heartbeat":
                log.debug("onebot %s: heartbeat %s", link.self_id, frame.get("status"))
            return
        if not is_chat_message(frame, link.self_id):
            return  # notices, requests, message_sent and the bot's own messages
        try:
            message = to_message(
                frame, self_id=link.self_id, bot_id=self.bot_id, platform=self.platform
            )
        except Malformed as exc:
            self.skipped += 1
            log.warning("onebot %s: malformed message event skipped: %s", link.self_id, exc)
            return
        self._queue_for(message).put_nowait((link.self_id, message))

    def _queue_for(self, message: dict[str, Any]) -> asyncio.Queue[tuple[str, dict[str, Any]]]:
        key = f"{message['platform']}:{message['chat_type']}:{message['chat_id']}"
        if key not in self.chats:
            self.chats[key] = asyncio.Queue()
            self.workers[key] = asyncio.create_task(self._chat(key), name=f"onebot-{key}")
        return self.chats[key]

    async def _chat(self, key: str) -> None:
        """One chat's messages, in the order they came."""
        queue = self.chats[key]
        while True:
            self_id, message = await queue.get()
            try:
                await self._answer(self_id, message)
            except Exception:  # noqa: BLE001 - one message's failure never stops the chat
                log.exception("onebot: answering %s in %s failed", message["message_id"], key)
            finally:
                queue.task_done()

    async def _answer(self, self_id: str, message: dict[str, Any]) -> None:
        if message["chat_type"] == "group":
            name = await self._group_name(self_id, message["chat_id"])
            if name:
                message["chat_name"] = name
        try:
            out = await self.brain.answer(message)
        except ValueError as exc:  # InputError: the message itself is refused
            self.skipped += 1
            log.warning("onebot: message %s refused: %s", message["message_id"], exc)
            return
        self.answered += 1
        for fallback in out.get("fallback") or []:
            log.warning(
                "onebot: %s fell back to rules: %s", fallback.get("slot"), fallback.get("error")
            )
        action = answer_action(message, out, self.sticker_mode)
        if action is not None:
            await self._send(self_id, *action)

    async def _send(self, self_id: str, action: str, params: dict[str, Any]) -> None:
        deadline = time.monotonic() + SEND_WAIT_S
        while True:
            link = self.links.get(self_id)
            if link is not None:
                try:
                    await link.call(action, params)
                    return
                except (TimeoutError, ConnectionError, ConnectionClosed) as exc:
                    log.warning("onebot %s: %s not confirmed (%s); retrying", self_id, action, exc)
            if time.monotonic() > deadline:
                log.error("onebot %s: %s dropped: no connection for %.0f s", self_id, action,
                          SEND_WAIT_S)  # fmt: skip
                return
            await asyncio.sleep(0.5)

    async def _group_name(self, self_id: str, group_id: str) -> str | None:
        if group_id not in self.group_names and (link := self.links.get(self_id)):
            try:
                info = await asyncio.wait_for(
                    link.call(
                        "get_group_info",
                        {"group_id": int(group_id) if group_id.isdigit() else group_id},
                    ),
                    5,  # fmt: skip
                )
                self.group_names[group_id] = str((info.get("data") or {}).get("group_name") or "")
            except Exception:  # noqa: BLE001 - a name is nice to have, never required
                self.group_names[group_id] = ""
        return self.group_names.get(group_id) or None

    async def drain(self) -> None:
        """Until every chat's queue is answered (tests, shutdown)."""
        for queue in list(self.chats.values()):
            await queue.join()

    # --- connections --------------------------------------------------------------------

    async def run_link(self, self_id: str | None, conn: Any) -> None:
        """Read one connection until it closes. A forward connection learns its account
        from the first event (every event carries ``self_id``) or ``get_login_info``."""
        link = Link(self_id or "", conn.send)
        if self_id:
            self._register(link)
        else:
            asyncio.create_task(self._learn_id(link))
        try:
            async for raw in conn:
                if not link.self_id:
                    with contextlib.suppress(ValueError, AttributeError):
                        if known := json.loads(raw).get("self_id"):
                            link.self_id = str(known)
                            self._register(link)
                await self.on_frame(link, raw)
        except ConnectionClosed:
            pass
        finally:
            if self.links.get(link.self_id) is link:
                del self.links[link.self_id]
            link.fail_all()
            log.info("onebot: %s disconnected", link.self_id or "(unknown account)")

    def _register(self, link: Link) -> None:
        self.links[link.self_id] = link
        self.linked.set()
        log.info("onebot: %s connected", link.self_id)

    async def _learn_id(self, link: Link) -> None:
        with contextlib.suppress(Exception):
            info = await link.call("get_login_info", {})
            if not link.self_id and (user := (info.get("data") or {}).get("user_id")):
                link.self_id = str(user)
                self._register(link)

    def _check(self, conn: ServerConnection, request: Request) -> Response | None:
        """Refuse a wrong path, role or token before the WebSocket opens."""
        url = urlsplit(request.path)
        if url.path.rstrip("/") != PATH:
            return conn.respond(HTTPStatus.NOT_FOUND, f"the OneBot endpoint is {PATH}\n")
        role = request.headers.get("X-Client-Role", "Universal")
        if role != "Universal":
            return conn.respond(HTTPStatus.BAD_REQUEST, "only X-Client-Role: Universal\n")
        if not request.headers.get("X-Self-ID"):
            return conn.respond(HTTPStatus.BAD_REQUEST, "X-Self-ID is required\n")
        if self.access_token:
            given = request.headers.get("Authorization", "")
            token = given.removeprefix("Bearer ").removeprefix("Token ").strip() if given else ""
            token = token or (parse_qs(url.query).get("access_token") or [""])[0]
            if not token:
                return conn.respond(HTTPStatus.UNAUTHORIZED, "access token required\n")
            if token != self.access_token:
                return conn.respond(HTTPStatus.FORBIDDEN, "wrong access token\n")
        return None

    async def serve_reverse(self, host: str, port: int) -> Server:
        async def handler(conn: ServerConnection) -> None:
            assert conn.request is not None
            await self.run_link(str(conn.request.headers["X-Self-ID"]), conn)

        return await serve(handler, host, port, process_request=self._check, max_size=16 << 20)

    async def connect_forward(self, url: str, stop: asyncio.Event) -> None:
        """Keep a connection to the implementation's WebSocket until ``stop``."""
        headers = {"Authorization": f"Bearer {self.access_token}"} if self.access_token else {}
        backoff = 1.0
        while not stop.is_set():
            try:
                async with connect(url, additional_headers=headers, max_size=16 << 20) as conn:
                    backoff = 1.0
                    reading = asyncio.create_task(self.run_link(None, conn))
                    stopping = asyncio.create_task(stop.wait())
                    await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)
                    stopping.cancel()
                    if stop.is_set():
                        await conn.close()
                        await reading
                        return
            except Exception as exc:  # noqa: BLE001 - refused, reset, closed: try again later
                log.warning("onebot: %s: %s; reconnecting in %.0f s", url, exc, backoff)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), backoff)
            backoff = min(30.0, backoff * 2)

    async def close(self) -> None:
        for task in self.workers.values():
            task.cancel()
        await self.brain.close()
