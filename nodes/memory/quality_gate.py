"""quality_gate: judge the rewrite (seed 003 §4.2 step 3; the rules are in ``judge.py``):
not prose, relative words left, a name dropped, most of the content lost.

Pass -> embed. Fail -> back to rewrite with the reasons, until
``Context.max_gate_attempts`` rewrites were made; then the least bad text is stored,
flagged ``degraded``, with the gate's reasons: the least bad attempt, the offline rules
rewrite (when a model's attempts all failed, it may do better than they did), or the
job's raw text.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from nodes.deps import Deps
from nodes.memory.judge import judge
from nodes.memory.rewrite import rewrite_rules
from state.context import Context
from state.memory import MemoryJob, MemoryState, current_job

log = logging.getLogger("groupmind.memory")


def known_names(state: MemoryState, job: MemoryJob) -> list[str]:
    names = [job.user_name, state.get("persona_name", ""), job.chat_name or "", job.place_zh]
    return names + [m.user_name for m in job.recent_messages]


def quality_gate(state: MemoryState, ctx: Context, deps: Deps) -> dict[str, Any]:
    job = current_job(state)
    persona = state.get("persona_name", job.persona_id)
    names = known_names(state, job)
    text = state.get("text", "")
    verdict = judge(text, job, persona, names)
    tried = {
        "text": text,
        "reasons": verdict.reasons,
        "relative": verdict.relative,
        "penalty": verdict.penalty,
    }
    out: dict[str, Any] = {
        "offending": verdict.relative,
        "reasons": verdict.reasons,
        "tried": [tried],
    }
    if verdict.passed:
        return out
    if state.get("attempts", 0) < (ctx.max_gate_attempts or deps.max_gate_attempts):
        return out
    offline = rewrite_rules(state, ctx, deps)["text"]
    candidates = [*state.get("tried", []), tried]
    for fallback in (offline, job.raw_text):  # after the attempts: ties go to an attempt
        v = judge(fallback, job, persona, names)
        candidates.append(
            {"text": fallback, "reasons": v.reasons, "relative": v.relative, "penalty": v.penalty}
        )
    best = min(candidates, key=lambda t: t["penalty"])  # the earliest of the least bad
    if not best["reasons"]:  # only the rules rewrite passed: say why it was not the model's
        best = {**best, "reasons": [f"the rewrites failed ({'; '.join(verdict.reasons)}): "
                                    "stored the rules rewrite"]}  # fmt: skip
    log.warning(
        "memory job %s: no rewrite passed after %d attempts (%s); storing the least bad, degraded",
        job.request_id,
        state.get("attempts", 0),
        "; ".join(best["reasons"]),
    )
    return {**out, "degraded": True, "text": best["text"], "reasons": best["reasons"],
            "offending": best["relative"]}  # fmt: skip


def route_after_gate(state: MemoryState) -> Literal["rewrite", "embed"]:
    if state.get("reasons") and not state.get("degraded"):
        return "rewrite"
    return "embed"


VARIANTS = {"quality_gate": {"rules": quality_gate}}
