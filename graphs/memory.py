"""The memory graph: one run per memory job, thread = the job's request id.

intake -> rewrite -> quality_gate -(relative words left, attempts remain)-> rewrite
                                  -(clean, or degraded)-> embed -(new_info)-> merge_profile
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from nodes.deps import Deps
from nodes.memory.embed import route_after_embed
from nodes.memory.quality_gate import route_after_gate
from nodes.variants import slot
from state.context import Context
from state.memory import (
    MemoryJobInput,
    MemoryOutput,
    MemoryState,
    job_variants,
    memory_platforms,
)
from state.slots import graph_slots

MemoryGraph = CompiledStateGraph[MemoryState, Context, MemoryJobInput, MemoryOutput]


def build_memory_graph(deps: Deps, *, checkpointer: Checkpointer = None) -> MemoryGraph:
    g = StateGraph(
        MemoryState, context_schema=Context, input_schema=MemoryJobInput, output_schema=MemoryOutput
    )
    for name in graph_slots("memory"):
        # A slot picks its variant per run, the job's own first (nodes/variants.py).
        node = slot(name, deps, pinned=job_variants, platforms=memory_platforms)
        g.add_node(name, node)
    g.add_edge(START, "intake")
    g.add_edge("intake", "rewrite")
    g.add_edge("rewrite", "quality_gate")
    g.add_conditional_edges("quality_gate", route_after_gate, ["rewrite", "embed"])
    g.add_conditional_edges("embed", route_after_embed, ["merge_profile", END])
    g.add_edge("merge_profile", END)
    return g.compile(checkpointer=checkpointer, name="memory")
