"""The forget graph: one run erases a person or a chat (``{"platform", "user_id"?,
"chat_type"?, "chat_id"?}``) of the run's bot, from its stores, its reply threads (on a
LangGraph server, the server's own: deleted, or rebuilt without the person) and what the
engines keep on disk; it returns what it removed, the chat streams it touched and what
was compacted."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from nodes.deps import ForgetDeps
from nodes.variants import slot
from state.context import Context
from state.forget import ForgetInput, ForgetOutput, ForgetState, forget_platforms

ForgetGraph = CompiledStateGraph[ForgetState, Context, ForgetInput, ForgetOutput]


def build_forget_graph(deps: ForgetDeps, *, checkpointer: Checkpointer = None) -> ForgetGraph:
    g = StateGraph(
        ForgetState, context_schema=Context, input_schema=ForgetInput, output_schema=ForgetOutput
    )
    # An async slot: it scrubs a server's threads from inside it.
    erase = slot("erase", deps, platforms=forget_platforms)
    g.add_node("erase", erase)
    g.add_edge(START, "erase")
    g.add_edge("erase", END)
    return g.compile(checkpointer=checkpointer, name="forget")
