"""Jobs and runners shared by the graph tests (and importable by child processes)."""

from __future__ import annotations

from typing import Any

from langchain_core.tracers.base import BaseTracer
from langgraph.checkpoint.memory import InMemorySaver

from graphs.memory import build_memory_graph
from nodes.deps import Deps
from state.context import Context


def job(request_id: str = "r1", **changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "request_id": request_id,
        "action_summary": "我帮你查了明天去北京的高铁",
        "new_info": "我下周三要去北京出差，我的生日是11月23日",
        "user_id": "10001",
        "user_name": "小明",
        "chat_type": "group",
        "chat_id": "1001",
        "chat_name": "技术交流群",
        "persona_id": "default",
        "timestamp": "2026-11-16T10:05:00+08:00",
        "new_info_by": "user",  # the user's own words, as groupmind's hand-off passes them
    }
    return {**base, **changes}


def run(
    deps: Deps,
    payload: dict[str, Any] | None,
    *,
    thread: str = "r1",
    saver: Any = None,
    **context: Any,
) -> dict[str, Any]:
    graph = build_memory_graph(deps, checkpointer=saver or InMemorySaver())
    config: Any = {"configurable": {"thread_id": thread}}
    return graph.invoke(payload, config, context=Context(**context), durability="sync")  # type: ignore[return-value]


def facts(key_facts: list[dict[str, str]]) -> list[dict[str, str]]:
    """Key facts without their provenance (source, by, at), for comparing values."""
    return [{"type": f["type"], "value": f["value"]} for f in key_facts]


class Recorder(BaseTracer):
    """What LangSmith would receive of a run's trace: a recording tracer instead of the
    network (offline, a real LangSmith client retries at exit for minutes)."""

    def __init__(self) -> None:
        super().__init__()
        self.roots: list[Any] = []

    def _persist_run(self, run: Any) -> None:
        self.roots.append(run)
