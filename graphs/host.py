"""The host graph: groupmind's memory for a bot framework that keeps its own model
(AstrBot, MaiBot...). One run per operation, chosen by ``Context.op``; thread = the chat
stream's reply thread (``stream_thread_id``), so capture and record share the buffer,
interest and persona the reply graph would keep (docs/contracts.md, "Hosts").

capture: observe --> hand_off                      (every message the host sees)
recall:  observe --> retrieve + rank_context --> recalled    (a stateless run: no thread)
record:  observe (the bot's own line) --> recorded  (the host's answer)
tool:    host_tool                                  (a stateless run)

observe, retrieve, rank_context and hand_off are the reply graph's slots: the same
variants, checks and traces. A message captured twice is taken once (observe's record of
what was handled and seen).
"""

from __future__ import annotations

from typing import Literal

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Checkpointer

from nodes.deps import ReplyDeps
from nodes.host.recall import recalled
from nodes.host.record import recorded
from nodes.host.tool import host_tool
from nodes.variants import slot
from state.context import Context
from state.reply import HostInput, HostOutput, ReplyState, reply_platforms

HostGraph = CompiledStateGraph[ReplyState, Context, HostInput, HostOutput]


def route_start(state: ReplyState, runtime: Runtime[Context]) -> Literal["host_tool", "observe"]:
    return "host_tool" if runtime.context.op == "tool" else "observe"


def route_after_observe(state: ReplyState, runtime: Runtime[Context]) -> str | list[str]:
    op = runtime.context.op
    if op == "recall":
        return ["retrieve", "rank_context"]  # a message seen before is recalled all the same
    if op == "record":
        return "recorded" if state.get("from_self") else END
    return END if state.get("duplicate") or state.get("from_self") else "hand_off"


def build_host_graph(deps: ReplyDeps, *, checkpointer: Checkpointer = None) -> HostGraph:
    if not isinstance(deps, ReplyDeps):
        raise TypeError(f"the host graph runs on ReplyDeps, not {type(deps).__name__}")
    g = StateGraph(
        ReplyState, context_schema=Context, input_schema=HostInput, output_schema=HostOutput
    )
    for name in ("observe", "retrieve", "rank_context", "hand_off"):
        g.add_node(name, slot(name, deps, platforms=reply_platforms))
    g.add_node("recalled", lambda state: recalled(state, deps))
    g.add_node("recorded", lambda state: recorded(state, deps))
    g.add_node("host_tool", lambda state: host_tool(state, deps))
    g.add_conditional_edges(START, route_start, ["host_tool", "observe"])
    g.add_conditional_edges(
        "observe", route_after_observe, ["retrieve", "rank_context", "recorded", "hand_off", END]
    )
    g.add_edge("retrieve", "recalled")
    g.add_edge("rank_context", "recalled")
    for last in ("recalled", "recorded", "hand_off", "host_tool"):
        g.add_edge(last, END)
    return g.compile(checkpointer=checkpointer, name="host")
