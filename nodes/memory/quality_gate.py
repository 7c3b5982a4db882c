"""quality_gate: rules that find what the rewrite left relative (seed 003 §4.2 step 3).

Pass -> embed. Fail -> back to rewrite with the offending words, until
``Context.max_gate_attempts`` rewrites were made; then the job's raw text is stored,
flagged ``degraded``, and a warning is logged.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from nodes.deps import Deps
from nodes.memory.lexicon import find_relative
from state.context import Context
from state.memory import MemoryJob, MemoryState, current_job

log = logging.getLogger("groupmind.memory")


def known_names(state: MemoryState, job: MemoryJob) -> list[str]:
    names = [job.user_name, state.get("persona_name", ""), job.chat_name or "", job.place_zh]
    return names + [m.user_name for m in job.recent_messages]


def quality_gate(state: MemoryState, ctx: Context, deps: Deps) -> dict[str, Any]:
    job = current_job(state)
    found = find_relative(state.get("text", ""), known_names(state, job))
    offending = list(dict.fromkeys(f.text for f in found))
    if not offending:
        return {"offending": []}
    if state.get("attempts", 0) < (ctx.max_gate_attempts or deps.max_gate_attempts):
        return {"offending": offending}
    log.warning(
        "memory job %s: still relative after %d rewrites (%s); storing the raw text, degraded",
        job.request_id,
        state.get("attempts", 0),
        ", ".join(offending),
    )
    return {"offending": offending, "degraded": True, "text": job.raw_text}


def route_after_gate(state: MemoryState) -> Literal["rewrite", "embed"]:
    if state.get("offending") and not state.get("degraded"):
        return "rewrite"
    return "embed"


VARIANTS = {"quality_gate": {"rules": quality_gate}}
