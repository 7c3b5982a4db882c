"""A LangGraph server's own reply threads, for a forget run on that server: scrubbed from
inside it, through the SDK's in-process connection (no key: the server's own calls). A
forgotten chat's thread is deleted, and with it its checkpoints and its runs (their
inputs held the messages); a thread where a forgotten person spoke is deleted and created
again under its id, stamped for its bot, holding the state without them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from domain.scope import ForgetTarget
from groupmind.forget import without_them
from groupmind.threads import stream_thread_id
from stores.said import Said


class ServerThreads:
    def __init__(self, bot: str, *, owned: bool) -> None:
        self.bot = bot
        self.owned = owned  # the server has keys: a thread carries its bot as owner

    def scrub(self, streams: Sequence[str], target: ForgetTarget, said: Said) -> int:
        raise RuntimeError("a server's threads are scrubbed by its forget graph (async)")

    async def ascrub(self, streams: Sequence[str], target: ForgetTarget, said: Said) -> int:
        from langgraph_sdk import get_client
        from langgraph_sdk.errors import NotFoundError

        client = get_client()  # this server, in-process
        scrubbed = 0
        for stream in streams:
            thread_id = stream_thread_id(stream, self.bot)
            try:
                state: Any = await client.threads.get_state(thread_id)
            except NotFoundError:
                continue
            values = dict(state.get("values") or {})
            await client.threads.delete(thread_id)
            scrubbed += 1
            if target.user_id is None or not values:
                continue
            metadata = {"stream": stream, "graph_id": "reply"}  # the graph its state is of
            if self.owned:
                metadata["owner"] = self.bot
            await client.threads.create(thread_id=thread_id, metadata=metadata)
            await client.threads.update_state(
                thread_id, without_them(values, target, said, self.bot), as_node="hand_off"
            )
        return scrubbed
