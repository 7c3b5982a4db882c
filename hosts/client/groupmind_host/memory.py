"""``HostMemory``: a host plugin's whole conversation with groupmind's server.

Writes (capture, record) go into the outbox first and are delivered by one background
task, in order, as runs of the ``host`` graph on the chat's thread (``multitask_strategy
= "enqueue"``: a chat's runs never overtake each other). Reads (recall, tools) are
stateless runs that wait at most the host's budget; past it, or with groupmind down, they
give nothing and the host answers without memory. An outage is logged once when it
starts and once when it ends, not per message.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from groupmind_host.ids import stream_key, thread_id
from groupmind_host.outbox import Item, Outbox

GRAPH = "host"
MAX_BACKOFF_S = 30.0


@dataclass(frozen=True)
class Recall:
    """What groupmind's memory holds for a message: ``text`` to put in the user part of the
    host's request (each block under a header saying it is data), and the data."""

    text: str
    memory_ids: list[str] = field(default_factory=list)
    context_ids: list[str] = field(default_factory=list)
    relation_block: str = ""
    memory_block: str = ""
    context_text: str = ""

    @classmethod
    def of(cls, out: Mapping[str, Any]) -> Recall:
        return cls(
            text=str(out.get("recall_text") or ""),
            memory_ids=list(out.get("memory_ids") or []),
            context_ids=list(out.get("context_ids") or []),
            relation_block=str(out.get("relation_block") or ""),
            memory_block=str(out.get("memory_block") or ""),
            context_text=str(out.get("context_text") or ""),
        )


def permanent(exc: BaseException) -> bool:
    """A refusal that retrying cannot change (the message itself is refused): 4xx but a
    key's (401, 403: a key fixed later takes it), a time-out (408) and a busy server (409,
    429)."""
    if isinstance(exc, httpx.HTTPStatusError):
        code = exc.response.status_code
        return 400 <= code < 500 and code not in (401, 403, 408, 409, 429)
    return False


class HostMemory:
    def __init__(
        self,
        *,
        url: str,
        api_key: str | None,
        bot_id: str,
        outbox: Path,
        budget_s: float = 1.5,
        log: logging.Logger | None = None,
    ) -> None:
        from langgraph_sdk.client import LangGraphClient

        self.url, self.bot_id, self.budget_s = url.rstrip("/"), bot_id, budget_s
        # No retries of a refused connection (the SDK's own client retries for ~15 s): a
        # groupmind that is down is known at once, and the outbox retries in its own time.
        http = httpx.AsyncClient(
            base_url=self.url, transport=httpx.AsyncHTTPTransport(retries=0),
            timeout=httpx.Timeout(30.0, connect=3.0),
            headers={"x-api-key": api_key} if api_key else {},
        )  # fmt: skip
        self.client = LangGraphClient(http)
        self.outbox = Outbox(outbox)
        self.log = log or logging.getLogger("groupmind_host")
        self.down_since: float | None = None
        self.delivered = 0
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # --- writes: kept on disk, then delivered in order ---------------------------------

    async def capture(self, message: dict[str, Any]) -> None:
        """Every message the host sees, addressed to the bot or not (fire-and-forget)."""
        await self._keep("capture", message, {"message": message})

    async def record(self, answer: dict[str, Any], memory_ids: list[str] | None = None) -> None:
        """The host's own answer (``user_id`` the bot's id, ``reply_to`` what it answers),
        with the memories its recall gave the host's model."""
        await self._keep("record", answer, {"message": answer, "host_memory_ids": memory_ids or []})

    async def _keep(self, op: str, message: Mapping[str, Any], body: dict[str, Any]) -> None:
        thread = thread_id(stream_key(message), self.bot_id)
        await asyncio.to_thread(self.outbox.put, op, thread, body)
        self.start()
        self._wake.set()

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._deliver_forever())

    async def _deliver_forever(self) -> None:
        backoff = 0.5
        while True:
            items = await asyncio.to_thread(self.outbox.oldest)
            if not items:
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), 5.0)
                except TimeoutError:
                    pass
                continue
            for item in items:
                try:
                    await self._deliver(item)
                except Exception as exc:  # noqa: BLE001 - any failure: kept, told once
                    if permanent(exc):
                        self.log.error("groupmind refused a %s (%s): it is dropped", item.op,
                                       exc)  # fmt: skip
                        await asyncio.to_thread(self.outbox.done, item.seq)
                        continue
                    self._trouble(exc)
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, MAX_BACKOFF_S)
                    break
                await asyncio.to_thread(self.outbox.done, item.seq)
                self.delivered += 1
                self._fine()
                backoff = 0.5

    async def _deliver(self, item: Item) -> None:
        await self.client.runs.create(
            item.thread_id, GRAPH, input=item.body, context={"op": item.op},
            multitask_strategy="enqueue", if_not_exists="create",
        )  # fmt: skip

    # --- reads: within the budget, or nothing -----------------------------------------

    async def recall(self, message: dict[str, Any]) -> Recall | None:
        """What memory holds for a message the host is about to answer; None past the
        budget or when groupmind cannot answer (the host answers without memory)."""
        out = await self._read({"message": message}, "recall", self.budget_s)
        return Recall.of(out) if out is not None else None

    async def tool(
        self, message: dict[str, Any], name: str, args: dict[str, Any], timeout_s: float = 10.0
    ) -> str | None:
        """One of groupmind's tools for the host's model, scoped to ``message``'s chat."""
        body = {"message": message, "host_tool": {"name": name, "args": args}}
        out = await self._read(body, "tool", timeout_s)
        return None if out is None else str(out.get("tool_result") or "")

    async def reply(
        self, message: dict[str, Any], timeout_s: float = 120.0
    ) -> dict[str, Any] | None:
        """groupmind's own reply graph for a message (a host with no model of its own:
        NoneBot2): its decision and answer; None when groupmind cannot say, and then the
        message is kept to be captured once it is back."""
        thread = thread_id(stream_key(message), self.bot_id)
        if self.down_since is not None and len(self.outbox):
            await self.capture(message)  # groupmind is down: kept behind what waits already
            return None
        try:
            out = await asyncio.wait_for(
                self.client.runs.wait(thread, "reply", input={"message": message},
                                      multitask_strategy="enqueue", if_not_exists="create"),
                timeout_s,
            )  # fmt: skip
        except Exception as exc:  # noqa: BLE001
            if permanent(exc):
                self.log.error("groupmind refused a message (%s)", exc)
                return None
            self._trouble(exc)
            await self.capture(message)
            return None
        self._fine()
        return dict(out) if isinstance(out, dict) else None

    async def _read(self, body: dict[str, Any], op: str, budget_s: float) -> dict[str, Any] | None:
        try:
            out = await asyncio.wait_for(
                self.client.runs.wait(None, GRAPH, input=body, context={"op": op}), budget_s
            )
        except TimeoutError:
            self.log.info("groupmind: %s took over %.1f s: answered without it", op, budget_s)
            return None
        except Exception as exc:  # noqa: BLE001 - groupmind's trouble is never the host's
            if not permanent(exc):
                self._trouble(exc)
            else:
                self.log.warning("groupmind refused a %s: %s", op, exc)
            return None
        self._fine()
        return dict(out) if isinstance(out, dict) else None

    # --- one line per outage ----------------------------------------------------------

    def _trouble(self, exc: BaseException) -> None:
        if self.down_since is None:
            self.down_since = time.monotonic()
            self.log.warning(
                "groupmind at %s cannot be reached (%s: %s): answering without memory; "
                "what is captured meanwhile is kept in %s until it is back",
                self.url, type(exc).__name__, exc, self.outbox.path,
            )  # fmt: skip

    def _fine(self) -> None:
        if self.down_since is not None:
            gone = time.monotonic() - self.down_since
            self.down_since = None
            self.log.warning("groupmind is back after %.0f s: delivering what was kept (%d)",
                             gone, len(self.outbox))  # fmt: skip

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self.outbox.close()
