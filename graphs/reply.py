"""The reply graph: one run per incoming message, thread = the chat stream
(``platform:chat_type:chat_id``), so chat state, interest, persona and the pending buffer
carry over between messages.

observe --+--> retrieve ------+--> plan --> reply --> hand_off
          +--> rank_context --+     |  \\--> emoji ---^
          |         ^---(re-plan)---+   \\--> (no_reply) hand_off
          +--> plan (ABSENT, not addressed); the bot's own messages end at observe
                                   reply <--> tools (the model's tool calls, bounded rounds)

retrieve and rank_context run in one step, side by side; plan runs once both are done.
The tools node is LangGraph's ``ToolNode``: every tool step is checkpointed and traced.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Checkpointer

from nodes.deps import ReplyDeps
from nodes.reply.observe import route_after_observe
from nodes.reply.plan import route_after_plan
from nodes.reply.reply import route_after_reply
from nodes.reply.tools import make_tools
from nodes.variants import slot
from state.context import Context
from state.reply import ReplyInput, ReplyOutput, ReplyState, reply_platforms
from state.slots import graph_slots

ReplyGraph = CompiledStateGraph[ReplyState, Context, ReplyInput, ReplyOutput]


def build_reply_graph(deps: ReplyDeps, *, checkpointer: Checkpointer = None) -> ReplyGraph:
    if not isinstance(deps, ReplyDeps):  # else its first message fails on a missing store
        raise TypeError(
            f"the reply graph runs on ReplyDeps (every store), not {type(deps).__name__}"
        )
    g = StateGraph(
        ReplyState, context_schema=Context, input_schema=ReplyInput, output_schema=ReplyOutput
    )
    for name in graph_slots("reply"):
        # A slot picks its variant per run (built-in or a plugin's: nodes/variants.py).
        g.add_node(name, slot(name, deps, platforms=reply_platforms))
    g.add_edge(START, "observe")
    g.add_conditional_edges(
        "observe", route_after_observe, ["retrieve", "rank_context", "plan", END]
    )
    g.add_edge("retrieve", "plan")
    g.add_edge("rank_context", "plan")
    g.add_conditional_edges(
        "plan", route_after_plan, ["rank_context", "reply", "emoji", "hand_off"]
    )
    g.add_node("tools", ToolNode(make_tools(deps), messages_key="model_messages"))
    g.add_conditional_edges("reply", route_after_reply, ["tools", "hand_off"])
    g.add_edge("tools", "reply")
    g.add_edge("emoji", "hand_off")
    g.add_edge("hand_off", END)
    return g.compile(checkpointer=checkpointer, name="reply")
