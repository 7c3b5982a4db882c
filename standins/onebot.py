"""A OneBot v11 implementation stand-in, written from the specification
(github.com/botuniverse/onebot-11: communication/ws.md, ws-reverse.md, event/*.md,
api/public.md): what NapCat or Lagrange does on the wire, and no more.

It connects to a bridge as a reverse-WebSocket client (``X-Self-ID``, ``X-Client-Role:
Universal``, ``Authorization: Bearer``), or serves a forward WebSocket the bridge connects
to. It sends lifecycle and heartbeat meta events and the message events a test asks for
(segment arrays or CQ strings), answers every action with ``{status, retcode, data,
echo}``, and, like NapCat, reports the bot's own sent messages back as ``message_sent``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import Server, ServerConnection, serve

SELF_ID = 3889000001
_ids = itertools.count(1000)


def group_event(group_id: int, user_id: int, message: Any, **extra: Any) -> dict[str, Any]:
    return {
        "time": int(time.time()), "self_id": SELF_ID, "post_type": "message",
        "message_type": "group", "sub_type": "normal", "message_id": next(_ids),
        "group_id": group_id, "user_id": user_id, "anonymous": None, "message": message,
        "raw_message": message if isinstance(message, str) else "", "font": 0,
        "sender": {"user_id": user_id, "nickname": f"昵称{user_id}", "card": extra.pop("card", ""),
                   "role": "member"},
        **extra,
    }  # fmt: skip


def private_event(user_id: int, message: Any, **extra: Any) -> dict[str, Any]:
    return {
        "time": int(time.time()), "self_id": SELF_ID, "post_type": "message",
        "message_type": "private", "sub_type": "friend", "message_id": next(_ids),
        "user_id": user_id, "message": message, "raw_message": "", "font": 0,
        "sender": {"user_id": user_id, "nickname": f"昵称{user_id}"}, **extra,
    }  # fmt: skip


def meta(kind: str, **extra: Any) -> dict[str, Any]:
    base = {"time": int(time.time()), "self_id": SELF_ID, "post_type": "meta_event",
            "meta_event_type": kind}  # fmt: skip
    return {**base, **extra}


@dataclass
class Implementation:
    """One bot account's side of the wire; ``actions`` records every request received."""

    group_names: dict[int, str] = field(default_factory=dict)
    actions: list[dict[str, Any]] = field(default_factory=list)
    conn: ClientConnection | ServerConnection | None = None
    reverse_delay_s: float = 0.0  # answer get_group_info late (responses out of order)
    members: dict[int, str] = field(default_factory=dict)  # QQ number -> group card
    hang_up_on_send: int = 0  # this many send_* actions get no response: the link drops
    _reader: asyncio.Task[None] | None = None
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def send(self, event: dict[str, Any] | str) -> None:
        assert self.conn is not None, "not connected"
        await self.conn.send(
            event if isinstance(event, str) else json.dumps(event, ensure_ascii=False)
        )

    def sent(self, prefix: str = "") -> list[dict[str, Any]]:
        """The actions received whose name starts with ``prefix``."""
        return [a for a in self.actions if a["action"].startswith(prefix)]

    async def wait_for(
        self, count: int, action: str = "send", timeout: float = 60
    ) -> list[dict[str, Any]]:
        """Until ``count`` send_* actions (or ``action``) arrived."""
        deadline = time.monotonic() + timeout
        while True:
            got = [a for a in self.actions if a["action"].startswith(action)]
            if len(got) >= count or time.monotonic() > deadline:
                return got
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), 0.5)

    async def _read(self, conn: ClientConnection | ServerConnection) -> None:
        with contextlib.suppress(Exception):
            async for raw in conn:
                request = json.loads(raw)
                self.actions.append(request)
                self._changed.set()
                asyncio.create_task(self._respond(conn, request))

    async def _respond(self, conn: Any, request: dict[str, Any]) -> None:
        action, params = request["action"], request.get("params", {})
        data: Any = None
        if action.startswith("send_") and self.hang_up_on_send > 0:
            self.hang_up_on_send -= 1  # received, then the connection drops: no response
            await conn.close()
            return
        if action in ("send_group_msg", "send_private_msg", "send_msg"):
            data = {"message_id": next(_ids)}
        elif action in ("get_group_member_info", "get_stranger_info"):
            uid = int(params["user_id"])
            if uid in self.members:
                data = {"user_id": uid, "nickname": f"昵称{uid}", "card": self.members[uid]}
        elif action == "get_group_info":
            await asyncio.sleep(self.reverse_delay_s * (1 + len(self.actions) % 2))
            gid = int(params["group_id"])
            data = {"group_id": gid, "group_name": self.group_names.get(gid, f"群{gid}"),
                    "member_count": 3, "max_member_count": 200}  # fmt: skip
        elif action == "get_login_info":
            data = {"user_id": SELF_ID, "nickname": "小爱"}
        status = (
            {"status": "ok", "retcode": 0}
            if data is not None
            else {"status": "failed", "retcode": 1404}
        )
        with contextlib.suppress(Exception):
            await conn.send(json.dumps({**status, "data": data, "echo": request.get("echo")}))
            if action.startswith("send_"):  # NapCat reports the bot's own message back
                own = {"time": int(time.time()), "self_id": SELF_ID, "post_type": "message_sent",
                       "message_type": "group" if "group_id" in params else "private",
                       "message_id": data["message_id"], "user_id": SELF_ID,
                       "group_id": params.get("group_id"), "message": params.get("message"),
                       "sender": {"user_id": SELF_ID, "nickname": "小爱"}}  # fmt: skip
                await conn.send(json.dumps(own, ensure_ascii=False))

    # reverse: the implementation dials the bridge

    async def dial(self, url: str, token: str | None = None, *, self_id: int = SELF_ID) -> None:
        headers = {"X-Self-ID": str(self_id), "X-Client-Role": "Universal"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        self.conn = await connect(url, additional_headers=headers)
        self._reader = asyncio.create_task(self._read(self.conn))
        await self.send(meta("lifecycle", sub_type="connect"))
        await self.send(meta("heartbeat", status={"online": True, "good": True}, interval=5000))

    async def hang_up(self) -> None:
        if self.conn is not None:
            await self.conn.close()
        if self._reader is not None:
            await self._reader

    # forward: the bridge dials the implementation

    async def listen(self, port: int = 0, token: str | None = None) -> Server:
        async def handler(conn: ServerConnection) -> None:
            assert conn.request is not None
            if token and conn.request.headers.get("Authorization") != f"Bearer {token}":
                await conn.close(1008, "unauthorized")
                return
            self.conn = conn
            await self.send(meta("lifecycle", sub_type="connect"))
            await self._read(conn)

        return await serve(handler, "127.0.0.1", port)
