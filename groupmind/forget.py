"""``groupmind forget`` in-process: erase a person or a chat from the stores, from the reply
threads this deployment's checkpointer keeps, and from what the engines keep on disk
(``nodes.forget``). A forgotten chat's thread is deleted; a thread where a forgotten
person spoke is rebuilt without their lines, nor the bot's lines quoting them (its
history, which held them, goes)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from domain.scope import ForgetTarget
from graphs.reply import ReplyGraph
from groupmind.threads import thread_config
from groupmind.wiring import Deployment
from nodes.forget import forget as erase_everywhere
from state.forget import ForgetRequest
from state.reply import Handled, run_start
from stores.said import Said

ERASED: Handled = {"action": "no_reply", "reason": "its answer was erased (forget)", "reply": ""}


def erased_answer(message_id: str, outcome: Handled, said: Said) -> bool:
    """Whether what was decided for a message holds something of the person: it is theirs,
    its reply was given one of their memories, or it quotes or names them (their words or
    what memory made of them)."""
    return (
        message_id in said.message_ids
        or said.drew_on(outcome.get("memory_ids") or [])
        or said.mentioned_in(str(outcome.get("reply", "")))
    )


def without_them(
    values: dict[str, Any], target: ForgetTarget, said: Said, bot: str
) -> dict[str, Any]:
    """A reply thread's values with nothing of the target's: their pending lines, the
    bot's answers to them and lines quoting them; what was decided for messages whose
    answer held something of theirs (a redelivery of one is not answered again: nothing
    is sent); the run's own fields."""
    pending = said.kept(values.get("pending", []), bot)
    handled = {
        k: ERASED if erased_answer(k, v, said) else v
        for k, v in (values.get("handled") or {}).items()
    }
    kept = {k: v for k, v in values.items() if k not in ("message", "msg")}
    return {**kept, **run_start(past_reducers=False), "pending": pending, "handled": handled}


class CheckpointThreads:
    """The reply threads of this deployment's checkpointer, for one bot."""

    def __init__(self, graph: ReplyGraph, bot: str) -> None:
        self.graph, self.bot = graph, bot

    def scrub(self, streams: Sequence[str], target: ForgetTarget, said: Said) -> int:
        return sum(self._scrub(stream, target, said) for stream in streams)

    async def ascrub(self, streams: Sequence[str], target: ForgetTarget, said: Said) -> int:
        return await asyncio.to_thread(self.scrub, streams, target, said)

    def _scrub(self, stream: str, target: ForgetTarget, said: Said) -> int:
        """1 when this bot's thread for the stream held something of the target."""
        config = thread_config(stream, self.bot)
        checkpointer = self.graph.checkpointer
        values = dict(self.graph.get_state(config).values)
        if not values or checkpointer is None or checkpointer is True:
            return 0
        checkpointer.delete_thread(config["configurable"]["thread_id"])  # type: ignore[union-attr]
        if target.user_id is None:
            return 1  # the chat is forgotten: its thread goes whole
        kept = without_them(values, target, said, self.bot)
        self.graph.update_state(config, kept, as_node="hand_off")
        return 1


def forget(
    runtime: Deployment, bot: str, reply_graph: ReplyGraph, request: ForgetRequest, *,
    wait_s: float = 30.0,
) -> dict[str, Any]:  # fmt: skip
    """Erase the bot's (the caller compacts the engines after, once for every bot);
    returns ``removed`` (counts per kind), the chat ``streams`` touched, any memory jobs
    ``still_running`` after ``wait_s`` (run forget again once they are done) and the
    ``copies`` reached."""
    deps = runtime.forget_deps(bot, CheckpointThreads(reply_graph, bot), compact=False)
    out = erase_everywhere(request, deps, wait_s)
    return {k: out[k] for k in ("removed", "streams", "still_running", "copies")}
