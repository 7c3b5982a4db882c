"""The OneBot v11 bridge (QQ through NapCat, Lagrange, LLOneBot, ...): events in, answers
out, over one Universal WebSocket per bot account.

- **Reverse** (default): the implementation connects to ``ws://HOST:PORT/onebot/v11/ws``
  with ``X-Self-ID``, ``X-Client-Role: Universal`` and, when a token is set,
  ``Authorization: Bearer T`` (any case of the scheme, or ``?access_token=T``); a missing
  token gets 401, a wrong one 403 (onebot-11 communication/ws-reverse.md, authorization.md).
  One connection per account: a second one is refused (409), unless it shows the token, in
  which case it replaces the first (logged).
- **Forward** (``--connect ws://...``): the bridge connects to the implementation's
  WebSocket and reconnects, with backoff, whenever it drops.

Every message event is journaled durably before anything else happens to it
(``journal.py``), answered in its chat's order (chats side by side; an idle chat's queue and
task are released), and its answer is recorded before and after it is sent: a restart
takes up what was not answered, and no answer is sent twice. Action responses are matched
to their request by ``echo``. The bot's own messages (``message_sent``, or
``user_id == self_id``) are ignored; a malformed event is logged and refused. One log line
per connection, refusal and message (ids and actions, never content).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
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

from groupmind.exposure import loopback
from groupmind.onebot.brains import Brain
from groupmind.onebot.events import (
    Malformed,
    StickerMode,
    answer_action,
    is_chat_message,
    mentioned,
    quoted_id,
    to_message,
)
from groupmind.onebot.metrics import BridgeFigures, exposition
from groupmind.threads import stream_of
from stores.journal import Entry, Journal

log = logging.getLogger("groupmind.onebot")
PATH = "/onebot/v11/ws"
ACTION_TIMEOUT_S = 30.0
SEND_WAIT_S = 300.0  # how long an answer waits for its connection to come back
IDLE_S = 60.0  # a chat quiet this long gives its task and queue back
# Frames read ahead of the journal: little, so a kill -9 finds little not yet written
# (what the kernel holds beyond that, no bridge can save: OneBot has no acknowledgement).
READ_AHEAD = 4


class ActionFailed(RuntimeError):
    pass


class NotSent(ConnectionError):
    """The request frame never left: it may be sent again."""


class Unconfirmed(ConnectionError):
    """The frame left but no answer came back: it may or may not have been acted on."""


@dataclass
class Link:
    """One implementation's connection (one bot account, ``self_id``)."""

    self_id: str
    send: Callable[[str], Awaitable[None]]
    close: Callable[[], Awaitable[None]] | None = None
    pending: dict[str, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)

    async def call(self, action: str, params: dict[str, Any]) -> dict[str, Any]:
        echo = uuid.uuid4().hex
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[echo] = future
        try:
            try:
                await self.send(json.dumps({"action": action, "params": params, "echo": echo}))
            except (ConnectionClosed, OSError) as exc:
                raise NotSent(f"{action}: {exc}") from exc
            try:
                response = await asyncio.wait_for(future, ACTION_TIMEOUT_S)
            except (TimeoutError, ConnectionError) as exc:
                raise Unconfirmed(f"{action}: {exc or 'no response'}") from exc
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


def bearer(header: str) -> str:
    """The token of an ``Authorization`` header: ``Bearer T`` or ``Token T``, any case."""
    scheme, _, token = header.strip().partition(" ")
    return token.strip() if scheme.lower() in ("bearer", "token") else ""


class Bridge:
    def __init__(
        self,
        brain: Brain,
        journal: Journal,
        *,
        bot_id: str = "bot",
        platform: str = "qq",
        access_token: str | None = None,
        metrics_key: str | None = None,
        sticker_mode: StickerMode = "image",
        idle_s: float = IDLE_S,
    ) -> None:
        self.brain = brain
        self.journal = journal
        self.bot_id, self.platform = bot_id, platform
        self.access_token = access_token
        self.metrics_key = metrics_key  # the bot's API key: reads /metrics, as the token does
        self.sticker_mode = sticker_mode
        self.idle_s = idle_s
        self.links: dict[str, Link] = {}
        self.linked = asyncio.Event()
        self.chats: dict[str, asyncio.Queue[Entry]] = {}
        self.workers: dict[str, asyncio.Task[None]] = {}
        self.arrivals: asyncio.Queue[tuple[str, dict[str, Any], str]] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None
        self.group_names: dict[str, str] = {}
        self.member_names: dict[tuple[str, str], str] = {}
        self.answered = 0
        self.skipped = 0
        self.received = 0
        self.sent = 0

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
                log.debug("onebot %s: a response nobody waits for", link.self_id)
            return
        post = frame.get("post_type")
        if post == "meta_event":
            kind = frame.get("meta_event_type")
            if kind == "lifecycle":
                log.info("onebot %s: lifecycle %s", link.self_id, frame.get("sub_type"))
            return
        if not is_chat_message(frame, link.self_id):
            return  # notices, requests, message_sent and the bot's own messages
        try:
            chat = stream_of(self._convert(link.self_id, frame))
        except (Malformed, ValueError) as exc:
            self.skipped += 1
            log.warning("onebot %s: malformed message event refused: %s", link.self_id, exc)
            return
        # Durable before anything else (an implementation never sends it again), by the
        # journal's writer: reading goes on meanwhile, so responses are never held up.
        if self._writer is None:
            self._writer = asyncio.create_task(self._journal_arrivals(), name="onebot-journal")
        self.arrivals.put_nowait((link.self_id, frame, chat))

    async def _journal_arrivals(self) -> None:
        """Commit what arrived, as many events as came together in one write, in arrival
        order; only then is each one queued for its chat."""
        while True:
            batch = [await self.arrivals.get()]
            while not self.arrivals.empty():
                batch.append(self.arrivals.get_nowait())
            while True:
                try:
                    seqs = await asyncio.to_thread(self.journal.receive, batch)
                    break
                except Exception:  # noqa: BLE001 - the disk failed: say so, try again
                    log.exception("onebot: journaling %d event(s) failed; retrying", len(batch))
                    await asyncio.sleep(1.0)
            for (self_id, frame, chat), seq in zip(batch, seqs, strict=True):
                if seq is None:
                    log.info("onebot %s: message %s again: taken once", self_id,
                             frame.get("message_id"))  # fmt: skip
                else:
                    self.received += 1
                    entry = Entry(seq, self_id, str(frame.get("message_id")), chat, frame,
                                  "received", None)  # fmt: skip
                    self._queue(entry)
                self.arrivals.task_done()

    def _convert(self, self_id: str, event: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return to_message(event, self_id=self_id, bot_id=self.bot_id, platform=self.platform,
                          **extra)  # fmt: skip

    def resume(self) -> int:
        """Queue what the journal holds unanswered or unsent (after a restart); returns how
        many were taken up."""
        entries, torn = self.journal.resume()
        if torn:
            log.warning("onebot: %d answer(s) were being sent when the bridge stopped: "
                        "not sent again (they may or may not have gone out)", torn)  # fmt: skip
        for entry in entries:
            self._queue(entry)
        if entries:
            log.info("onebot: %d message(s) taken up from the journal", len(entries))
        return len(entries)

    def _queue(self, entry: Entry) -> None:
        if entry.chat not in self.chats:
            self.chats[entry.chat] = asyncio.Queue()
            self.workers[entry.chat] = asyncio.create_task(
                self._chat(entry.chat), name=f"onebot-{entry.chat}"
            )
        self.chats[entry.chat].put_nowait(entry)

    async def _chat(self, chat: str) -> None:
        """One chat's messages, in the order they came; gone once the chat is idle."""
        queue = self.chats[chat]
        while True:
            try:
                entry = await asyncio.wait_for(queue.get(), self.idle_s)
            except TimeoutError:
                if queue.empty():  # no await between the check and the removal
                    del self.chats[chat]
                    del self.workers[chat]
                    return
                continue
            try:
                await self._handle(entry)
            except Exception:  # noqa: BLE001 - one message's failure never stops the chat
                log.exception("onebot: message %s in %s failed", entry.message_id, chat)
            finally:
                queue.task_done()

    async def _handle(self, entry: Entry) -> None:
        if entry.state == "decided" and entry.action is not None:
            await self._send(entry.self_id, entry.seq, *entry.action)  # decided, not yet sent
            return
        await self._link(entry.self_id, 30.0)  # names and group names come through it
        message = await self._enriched(entry.self_id, entry.event)
        try:
            out = await self.brain.answer(message)
        except ValueError as exc:  # InputError: the message itself is refused
            self.skipped += 1
            await asyncio.to_thread(self.journal.refuse, entry.seq, str(exc))
            log.warning("onebot %s: message %s refused: %s", entry.self_id, entry.message_id,
                        exc)  # fmt: skip
            return
        self.answered += 1
        for fallback in out.get("fallback") or []:
            log.warning("onebot: %s fell back to rules: %s", fallback.get("slot"),
                        fallback.get("error"))  # fmt: skip
        action = answer_action(message, out, self.sticker_mode)
        reply_id = f"{message['message_id']}#reply"
        await asyncio.to_thread(self.journal.decide, entry.seq, action, reply_id)
        log.info("onebot %s: %s in %s: %s%s", entry.self_id, entry.message_id, entry.chat,
                 out.get("action"), " (again)" if out.get("duplicate") else "")  # fmt: skip
        if action is not None:
            await self._send(entry.self_id, entry.seq, *action)

    async def _enriched(self, self_id: str, event: dict[str, Any]) -> dict[str, Any]:
        """The event as a groupmind message, with what the implementation can tell: the
        group's name, the names of the members it ``@``s, and whether it quotes the bot."""
        group = str(event.get("group_id") or "")
        names = {q: await self._member_name(self_id, group, q) for q in mentioned(event, self_id)}
        quoted = quoted_id(event)
        reply_to = None
        if quoted is not None:
            reply_to = await asyncio.to_thread(self.journal.reply_for, self_id, quoted)
        message = self._convert(self_id, event, names={k: v for k, v in names.items() if v},
                                reply_to=reply_to)  # fmt: skip
        if message["chat_type"] == "group":
            name = await self._group_name(self_id, message["chat_id"])
            if name:
                message["chat_name"] = name
        return message

    async def _send(self, self_id: str, seq: int, action: str, params: dict[str, Any]) -> None:
        """At most once: the answer goes out on the account's connection, waiting for one
        (up to ``SEND_WAIT_S``) when there is none; a frame that left without a response
        is not sent again."""
        deadline = time.monotonic() + SEND_WAIT_S
        while True:
            link = self.links.get(self_id)
            if link is not None:
                await asyncio.to_thread(self.journal.sending, seq)
                try:
                    response = await link.call(action, params)
                except NotSent as exc:
                    await asyncio.to_thread(self.journal.not_sent, seq)
                    log.warning("onebot %s: %s not sent (%s); waiting for the connection",
                                self_id, action, exc)  # fmt: skip
                except Unconfirmed as exc:
                    await asyncio.to_thread(self.journal.unconfirmed, seq, str(exc))
                    log.error("onebot %s: %s sent, never confirmed (%s): not sent again",
                              self_id, action, exc)  # fmt: skip
                    return
                except ActionFailed as exc:
                    await asyncio.to_thread(self.journal.failed, seq, str(exc))
                    log.error("onebot %s: %s refused by the implementation: %s", self_id,
                              action, exc)  # fmt: skip
                    return
                else:
                    sent = (response.get("data") or {}).get("message_id")
                    sent_id = None if sent is None else str(sent)
                    await asyncio.to_thread(self.journal.sent, seq, sent_id)
                    self.sent += 1
                    return
            if time.monotonic() > deadline:
                log.error("onebot %s: %s dropped: no connection for %.0f s", self_id, action,
                          SEND_WAIT_S)  # fmt: skip
                await asyncio.to_thread(self.journal.failed, seq, "no connection")
                return
            await asyncio.sleep(0.5)

    async def _link(self, self_id: str, wait_s: float) -> Link | None:
        deadline = time.monotonic() + wait_s
        while (link := self.links.get(self_id)) is None and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        return link

    async def _group_name(self, self_id: str, group_id: str) -> str | None:
        if group_id not in self.group_names and (link := self.links.get(self_id)):
            try:
                gid = int(group_id) if group_id.isdigit() else group_id
                info = await asyncio.wait_for(link.call("get_group_info", {"group_id": gid}), 5)
                self.group_names[group_id] = str((info.get("data") or {}).get("group_name") or "")
            except Exception:  # noqa: BLE001 - a name is nice to have, never required
                self.group_names[group_id] = ""
        return self.group_names.get(group_id) or None

    async def _member_name(self, self_id: str, group_id: str, user_id: str) -> str:
        """A member's group card, else nickname ('' when the implementation cannot say)."""
        key = (group_id, user_id)
        if key not in self.member_names and (link := self.links.get(self_id)):
            params: dict[str, Any] = {"user_id": int(user_id) if user_id.isdigit() else user_id}
            action = "get_stranger_info"
            if group_id:
                action = "get_group_member_info"
                params["group_id"] = int(group_id) if group_id.isdigit() else group_id
            try:
                info = (await asyncio.wait_for(link.call(action, params), 5)).get("data") or {}
                self.member_names[key] = str(info.get("card") or info.get("nickname") or "")
            except Exception:  # noqa: BLE001 - the number stands in for the name
                self.member_names[key] = ""
        return self.member_names.get(key, "")

    async def drain(self) -> None:
        """Until everything that arrived is journaled and answered (tests, shutdown)."""
        await self.arrivals.join()
        for queue in list(self.chats.values()):
            await queue.join()

    # --- connections --------------------------------------------------------------------

    async def run_link(self, self_id: str | None, conn: Any) -> None:
        """Read one connection until it closes. A forward connection learns its account
        from the first event (every event carries ``self_id``) or ``get_login_info``."""
        link = Link(self_id or "", conn.send, getattr(conn, "close", None))
        if self_id:
            await self._register(link)
        else:
            asyncio.create_task(self._learn_id(link))
        try:
            async for raw in conn:
                if not link.self_id:
                    with contextlib.suppress(ValueError, AttributeError):
                        if known := json.loads(raw).get("self_id"):
                            link.self_id = str(known)
                            await self._register(link)
                await self.on_frame(link, raw)
        except ConnectionClosed:
            pass
        finally:
            if self.links.get(link.self_id) is link:
                del self.links[link.self_id]
            link.fail_all()
            log.info("onebot: %s disconnected", link.self_id or "(unknown account)")

    async def _register(self, link: Link) -> None:
        old = self.links.get(link.self_id)
        self.links[link.self_id] = link
        self.linked.set()
        if old is not None and old is not link:
            log.warning("onebot: %s connected again, with the token: the old connection is "
                        "closed", link.self_id)  # fmt: skip
            if old.close is not None:
                with contextlib.suppress(Exception):
                    await old.close()
        else:
            log.info("onebot: %s connected", link.self_id)

    async def _learn_id(self, link: Link) -> None:
        with contextlib.suppress(Exception):
            info = await link.call("get_login_info", {})
            if not link.self_id and (user := (info.get("data") or {}).get("user_id")):
                link.self_id = str(user)
                await self._register(link)

    def _check(self, conn: ServerConnection, request: Request) -> Response | None:
        """Refuse a wrong path, role, token or a second connection of one account before
        the WebSocket opens; every refusal is logged."""
        url = urlsplit(request.path)
        self_id = request.headers.get("X-Self-ID", "")
        peer = conn.remote_address[0] if conn.remote_address else "?"

        def refused(status: HTTPStatus, why: str) -> Response:
            log.warning("onebot: connection from %s (X-Self-ID %r) refused: %s", peer,
                        self_id, why)  # fmt: skip
            return conn.respond(status, why + "\n")

        if url.path == "/metrics":
            return self._metrics(conn, request, peer)
        if url.path in ("", "/"):
            return conn.respond(HTTPStatus.OK, f"groupmind OneBot v11 bridge: WebSocket at "
                                f"{PATH}, Prometheus metrics at /metrics\n")  # fmt: skip
        if url.path.rstrip("/") != PATH:
            return refused(HTTPStatus.NOT_FOUND, f"the OneBot endpoint is {PATH}")
        role = request.headers.get("X-Client-Role", "Universal")
        if role != "Universal":
            return refused(HTTPStatus.BAD_REQUEST, "only X-Client-Role: Universal")
        if not self_id:
            return refused(HTTPStatus.BAD_REQUEST, "X-Self-ID is required")
        token = bearer(request.headers.get("Authorization", ""))
        token = token or (parse_qs(url.query).get("access_token") or [""])[0]
        if self.access_token:
            if not token:
                return refused(HTTPStatus.UNAUTHORIZED, "access token required")
            if token != self.access_token:
                return refused(HTTPStatus.FORBIDDEN, "wrong access token")
        if self_id in self.links and not self.access_token:
            return refused(HTTPStatus.CONFLICT, f"account {self_id} is connected already")
        return None

    def _metrics(self, conn: ServerConnection, request: Request, peer: str) -> Response:
        """Behind the access token or the bot's key; with neither set, this machine only."""
        given = bearer(request.headers.get("Authorization", "")) or request.headers.get(
            "X-Api-Key", ""
        )
        keys = [k for k in (self.access_token, self.metrics_key) if k]
        allowed = any(hmac.compare_digest(k.encode(), given.encode()) for k in keys) if keys else (
            loopback(peer)
        )  # fmt: skip
        if not allowed:
            return conn.respond(HTTPStatus.UNAUTHORIZED, "the access token or the bot's key\n")
        figures = BridgeFigures(
            bot=self.bot_id,
            connected=tuple(sorted(self.links)),
            received=self.received,
            answered=self.answered,
            sent=self.sent,
            skipped=self.skipped,
            backlog=self.arrivals.qsize() + sum(q.qsize() for q in self.chats.values()),
        )
        return conn.respond(HTTPStatus.OK, exposition(figures))

    async def serve_reverse(self, host: str, port: int) -> Server:
        async def handler(conn: ServerConnection) -> None:
            assert conn.request is not None
            await self.run_link(str(conn.request.headers["X-Self-ID"]), conn)

        return await serve(handler, host, port, process_request=self._check, max_size=16 << 20,
                           max_queue=READ_AHEAD)  # fmt: skip

    async def connect_forward(self, url: str, stop: asyncio.Event) -> None:
        """Keep a connection to the implementation's WebSocket until ``stop``."""
        headers = {"Authorization": f"Bearer {self.access_token}"} if self.access_token else {}
        backoff = 1.0
        while not stop.is_set():
            try:
                async with connect(url, additional_headers=headers, max_size=16 << 20,
                                   max_queue=READ_AHEAD) as conn:  # fmt: skip
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
        for task in [*self.workers.values(), *filter(None, [self._writer])]:
            task.cancel()
        await self.brain.close()
        self.journal.close()
