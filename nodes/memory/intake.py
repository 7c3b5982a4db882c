"""intake: validate the memory job and reset the run's working fields.

A bad job fails here, with a message naming the field, before anything is written.
A thread that ran before (the same request id submitted again) starts clean. A job that
brings no recent messages (a caller of the memory graph, an import) is given the memories
said just before it in its chat as its recent talk: whom its he / she / you mean is there.
"""

from __future__ import annotations

from typing import Any

from langgraph.types import Overwrite

from nodes.deps import Deps
from state.context import Context
from state.memory import MAX_RECENT_CHARS, MemoryJob, MemoryState, RecentMessage, cut
from state.slots import IntakeWrites
from state.validation import validated
from stores.base import EventQuery


def validate_job(raw: Any, deps: Deps) -> MemoryJob:
    return validated(MemoryJob, raw, "job", deps.validation)


JOB_FIELDS = tuple(MemoryJob.model_fields)


def earlier_talk(job: MemoryJob, deps: Deps) -> list[RecentMessage]:
    """The memories said just before the job in its chat and persona, in one talk
    (``deps.knobs.earlier_memories`` at most), as the messages it came after."""
    earlier = deps.events.said_before(
        EventQuery.within(job.scope, persona_id=job.persona_id),
        job.when.timestamp(),
        deps.knobs.earlier_memories,
        excluding=job.request_id,
    )
    return [
        RecentMessage(
            user_name=e.user_name, user_id=e.user_id, content=cut(e.text, MAX_RECENT_CHARS)
        )
        for e in earlier
    ]


def intake(state: MemoryState, ctx: Context, deps: Deps) -> IntakeWrites:
    raw = {k: v for k, v in state.items() if k in JOB_FIELDS}
    job = validate_job(raw, deps)
    if not job.recent_messages and deps.knobs.earlier_memories:
        job = job.model_copy(update={"recent_messages": earlier_talk(job, deps)})
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
