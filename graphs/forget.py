"""The forget graph: one run erases a person or a chat (``{"platform", "user_id"?,
"chat_type"?, "chat_id"?}``) and returns what it removed. On a LangGraph server the
reply threads are the server's: the run lists the chat streams it touched, for the
caller to delete their threads (``stream_thread_id(stream, bot)``)."""

from __future__ import annotations

from typing import Any, cast

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from nodes.deps import Deps
from nodes.forget import VARIANTS
from nodes.variants import slot
from state.context import Context
from state.forget import ForgetInput, ForgetOutput, ForgetState

ForgetGraph = CompiledStateGraph[ForgetState, Context, ForgetInput, ForgetOutput]


def build_forget_graph(deps: Deps, *, checkpointer: Checkpointer = None) -> ForgetGraph:
    g = StateGraph(
        ForgetState, context_schema=Context, input_schema=ForgetInput, output_schema=ForgetOutput
    )
    g.add_node("erase", cast(Any, slot("erase", VARIANTS, deps)))
    g.add_edge(START, "erase")
    g.add_edge("erase", END)
    return g.compile(checkpointer=checkpointer, name="forget")
