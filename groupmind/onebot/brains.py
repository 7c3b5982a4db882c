"""What the bridge asks for an answer: the reply graph in this process, or a LangGraph
server through ``langgraph_sdk``."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from groupmind.settings import Settings
from groupmind.threads import stream_of, stream_thread_id

OUTPUT_KEYS = ("message_id", "action", "reason", "reply", "sticker", "fallback")


class Brain(Protocol):
    async def answer(self, message: dict[str, Any]) -> dict[str, Any]:
        """groupmind's decision on one message: ``action``, ``reply``, ``sticker``, ..."""
        ...

    async def close(self) -> None: ...


class InProcessBrain:
    """The reply graph in this process (memory jobs run by its background worker). Chats
    are answered side by side, each chat's messages in order (the bridge sees to that)."""

    def __init__(self, settings: Settings, variants: dict[str, str] | None = None) -> None:
        from groupmind.chatting import reply_context
        from groupmind.session import open_session

        self.session = open_session(settings)
        self.graph = self.session.reply_graph()
        self.context = reply_context(self.session.deps, variants)
        self.background = self.session.runtime.start_background_worker()
        self.pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="onebot-reply")

    async def answer(self, message: dict[str, Any]) -> dict[str, Any]:
        from groupmind.chatting import reply_to

        loop = asyncio.get_running_loop()
        deps = self.session.deps
        return await loop.run_in_executor(
            self.pool, reply_to, self.graph, deps, message, self.context
        )

    async def close(self) -> None:
        self.pool.shutdown(wait=True)
        await asyncio.to_thread(self.background.stop)


class ServerBrain:
    """The reply graph on a LangGraph server. Runs use ``multitask_strategy="enqueue"``: a
    message sent while its chat's previous run is still going waits for it, answered in
    order, never dropped (docs/deployment.md)."""

    def __init__(
        self, url: str, api_key: str | None, bot: str, variants: dict[str, str] | None = None
    ) -> None:
        from langgraph_sdk import get_client

        self.client = get_client(url=url, api_key=api_key)
        self.bot = bot
        self.variants = variants or {}

    async def answer(self, message: dict[str, Any]) -> dict[str, Any]:
        stream = stream_of(message)
        out = await self.client.runs.wait(
            stream_thread_id(stream, self.bot),
            "reply",
            input={"message": message},
            context={"variants": self.variants} if self.variants else None,
            multitask_strategy="enqueue",
            if_not_exists="create",
            raise_error=True,
        )
        if not isinstance(out, dict):
            raise RuntimeError(f"unexpected run output: {out!r}")
        if "__error__" in out:
            raise RuntimeError(f"the server's run failed: {out['__error__']}")
        return out

    async def close(self) -> None:
        await self.client.http.client.aclose()
