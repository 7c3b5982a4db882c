"""intake: validate the memory job and reset the run's working fields.

A bad job fails here, with a message naming the field, before anything is written.
A thread that ran before (the same request id submitted again) starts clean.
"""

from __future__ import annotations

from typing import Any

from langgraph.types import Overwrite

from nodes.deps import Deps
from state.context import Context
from state.memory import MemoryJob, MemoryState
from state.slots import IntakeWrites
from state.validation import validated


def validate_job(raw: Any, deps: Deps) -> MemoryJob:
    return validated(MemoryJob, raw, "job", deps.validation)


JOB_FIELDS = tuple(MemoryJob.model_fields)


def intake(state: MemoryState, ctx: Context, deps: Deps) -> IntakeWrites:
    raw = {k: v for k, v in state.items() if k in JOB_FIELDS}
    job = validate_job(raw, deps)
    return {
        "job": job,
        "persona_name": deps.persona_name(job.persona_id, job.new_info or job.action_summary),
        "text": "",
        "attempts": 0,
        "offending": [],
        "reasons": [],
        "tried": Overwrite([]),
        "usage": Overwrite({}),
        "degraded": False,
        "written_by": "",
        "notes": [],
        "profile": "",
    }


VARIANTS = {"intake": {"default": intake}}
