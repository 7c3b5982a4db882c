"""Per-run knobs for both graphs: names and numbers, never clients."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

# What a run of the host graph does (docs/contracts.md, "Hosts"): take a message the host
# saw, give what memory holds for one it is about to answer, keep its answer, run a tool.
HostOp = Literal["capture", "recall", "record", "tool"]


@dataclass(frozen=True, kw_only=True)
class Context:
    """Passed as ``context=`` to ``invoke`` (or in the SDK's run ``context``).

    ``variants`` picks a function per node slot, e.g. ``{"rewrite": "llm"}``; a slot not
    named here takes the deployment's default (``llm`` when a chat model is configured,
    else ``rules``).
    """

    persona_id: str = "default"
    variants: Mapping[str, str] = field(default_factory=dict)
    # None: the deployment's setting (GROUPMIND_MAX_GATE_ATTEMPTS, GROUPMIND_AUTO_TOP_K)
    max_gate_attempts: int | None = None
    auto_top_k: int | None = None
    op: HostOp = "capture"  # the host graph's: what this run does (other graphs ignore it)


def as_context(value: object) -> Context:
    """The run's context as a Context, whether it came as one, as a dict (SDK), or not."""
    if isinstance(value, Context):
        return value
    if isinstance(value, dict):
        known = {k: v for k, v in value.items() if k in Context.__dataclass_fields__}
        return Context(**known)
    return Context()
