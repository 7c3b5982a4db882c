"""Each graph's shape (nodes and edges, as ``draw_mermaid`` draws them) against its
snapshot in ``tests/graphs/shapes/``: a change to a graph's wiring shows in review as a
change to its drawing. ``GROUPMIND_UPDATE_SHAPES=1`` writes the snapshots anew."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graphs.forget import build_forget_graph
from graphs.host import build_host_graph
from graphs.memory import build_memory_graph
from graphs.reply import build_reply_graph
from nodes.deps import Deps, ForgetDeps

SHAPES = Path(__file__).parent / "shapes"


def _forget(deps: Any) -> Any:
    forget = ForgetDeps.over(deps, reply_threads=None, copies=lambda *_: {}, compact=None)
    return build_forget_graph(forget)


BUILDERS: dict[str, Callable[[Any], Any]] = {
    "reply": build_reply_graph,
    "memory": build_memory_graph,
    "forget": _forget,
    "host": build_host_graph,
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_each_graph_has_the_shape_of_its_snapshot(name: str, deps: Deps) -> None:
    drawn = BUILDERS[name](deps).get_graph().draw_mermaid()
    snapshot = SHAPES / f"{name}.mmd"
    if os.environ.get("GROUPMIND_UPDATE_SHAPES") == "1":
        snapshot.write_text(drawn, encoding="utf-8")
    assert snapshot.exists(), f"no snapshot: GROUPMIND_UPDATE_SHAPES=1 writes {snapshot}"
    assert drawn == snapshot.read_text(encoding="utf-8"), (
        f"the {name} graph's shape changed: review it, then GROUPMIND_UPDATE_SHAPES=1"
    )
