"""Messages, deps and runners for the reply-graph tests."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from graphs.reply import ReplyGraph, build_reply_graph
from groupmind.chatting import reply_context
from groupmind.threads import thread_config
from nodes.deps import Deps
from state.context import Context

_ids = itertools.count(1)
_clock = itertools.count(0)


def message(content: str, **changes: Any) -> dict[str, Any]:
    n = next(_ids)
    base: dict[str, Any] = {
        "message_id": f"m{n}",
        "platform": "qq",
        "chat_type": "group",
        "chat_id": "1001",
        "chat_name": "技术交流群",
        "user_id": "10001",
        "user_name": "小明",
        "content": content,
        "timestamp": 1_795_000_000 + 60 * next(_clock),
    }
    return {**base, **changes}


def passing_id(stream: str = "qq:group:1001", above: float = 0.95) -> str:
    """A message id whose die (``plan.roll``) lets a chatting bot stay quiet at any odds
    below ``above``: a test about the buffer must not depend on which number the shared id
    counter has reached (the test order)."""
    from nodes.reply.plan import roll

    return next(f"quiet-{i}" for i in itertools.count() if roll(stream, f"quiet-{i}", 0) > above)


class Chat:
    """One reply graph with a checkpointer; ``send`` runs a message on its stream's thread."""

    def __init__(self, deps: Deps, checkpointer: Any = None, **variants: str) -> None:
        self.deps = deps
        self.graph: ReplyGraph = build_reply_graph(
            deps, checkpointer=checkpointer or InMemorySaver()
        )
        self.context: Context = reply_context(deps, variants)

    def send(self, msg: dict[str, Any]) -> dict[str, Any]:
        config = self.config(msg)
        return self.graph.invoke({"message": msg}, config, context=self.context)  # type: ignore[return-value]

    def config(self, msg: dict[str, Any]) -> Any:
        stream = f"{msg.get('platform')}:{msg.get('chat_type')}:{msg.get('chat_id') or msg.get('user_id')}"
        return thread_config(stream, self.deps.limits.bot_id)

    def state(self, msg: dict[str, Any]) -> dict[str, Any]:
        return self.graph.get_state(self.config(msg)).values  # type: ignore[return-value]


def with_rules(deps: Deps, **chat_rules: Any) -> Deps:
    rules = deps.knobs.chat_rules.model_copy(update=chat_rules)
    return replace(deps, knobs=replace(deps.knobs, chat_rules=rules))
