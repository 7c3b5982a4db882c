"""What the host-framework tests share: a OneBot v11 account (the implementation stand-in,
on a loop of its own, dialling a framework's reverse WebSocket) and the group messages all
three frameworks accept (docs/GOTCHAS: segment array, raw message, sender with card)."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import Future
from typing import Any

from standins.onebot import SELF_ID, Implementation, group_event, private_event


def said(group: int | None, user: int, card: str, text: str, *, at_bot: bool = False,
         reply_to: int | None = None) -> dict[str, Any]:  # fmt: skip
    """A message event as NapCat sends it: @ and reply segments, raw message, the card."""
    segments: list[dict[str, Any]] = []
    if reply_to is not None:
        segments.append({"type": "reply", "data": {"id": str(reply_to)}})
    if at_bot:
        segments.append({"type": "at", "data": {"qq": str(SELF_ID)}})
    segments.append({"type": "text", "data": {"text": (" " if at_bot else "") + text}})
    raw = (f"[CQ:at,qq={SELF_ID}] " if at_bot else "") + text
    if group is None:
        return private_event(user, segments, raw_message=raw, message_format="array")
    return group_event(group, user, segments, card=card, raw_message=raw, message_format="array")


class Account:
    """One QQ account's implementation, connected to a framework until ``close``."""

    def __init__(self, url: str, token: str | None = None) -> None:
        self.impl = Implementation(group_names={1001: "技术交流群", 2002: "猫咪群"},
                                   members={SELF_ID: "小爱"})  # fmt: skip
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.url, self.token = url, token
        self._run(self._dial()).result(timeout=120)

    def _run(self, coro: Any) -> Future[Any]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    async def _dial(self) -> None:
        for _ in range(600):
            try:
                await self.impl.dial(self.url, self.token)
                return
            except OSError:
                await asyncio.sleep(0.2)
        raise TimeoutError(f"{self.url} never took a connection")

    def send(self, event: dict[str, Any]) -> None:
        self._run(self.impl.send(event)).result(timeout=30)

    def sends(self) -> list[dict[str, Any]]:
        return [a for a in list(self.impl.actions) if a["action"].startswith("send_")]

    def texts(self) -> list[str]:
        """The text of every message the framework sent, in order."""
        return [
            "".join(
                s["data"].get("text", "") for s in a["params"]["message"] if s["type"] == "text"
            )
            if isinstance(a["params"].get("message"), list)
            else str(a["params"].get("message"))
            for a in self.sends()
        ]

    def wait_sends(self, count: int, timeout: float = 90) -> list[str]:
        deadline = time.monotonic() + timeout
        while len(self.sends()) < count and time.monotonic() < deadline:
            time.sleep(0.2)
        return self.texts()

    def close(self) -> None:
        self._run(self.impl.hang_up()).result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
