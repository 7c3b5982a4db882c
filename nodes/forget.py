"""erase: the forget graph's one slot. Validates the request, then erases everything the
target covers through the stores (``stores.forget``), memory-job checkpoints included."""

from __future__ import annotations

from typing import Any

from nodes.deps import Deps
from state.context import Context
from state.forget import ForgetRequest, ForgetState
from state.validation import validated
from stores.forget import Erased, erase


def validate_request(raw: Any, deps: Deps) -> ForgetRequest:
    return validated(ForgetRequest, raw, "forget", deps.validation)


def erase_for(request: ForgetRequest, deps: Deps, wait_s: float = 30.0) -> Erased:
    checkpoints = deps.checkpoints

    def drop_threads(thread_ids: Any) -> None:
        if checkpoints is not None:
            for thread_id in thread_ids:
                checkpoints.delete_thread(thread_id)

    return erase(
        request.target(),
        events=deps.events,
        profiles=deps.profiles,
        messages=deps.messages,
        jobs=deps.jobs,
        context_usage=deps.context_usage,
        chat_states=deps.chat_states,
        run_inbox=deps.run_inbox,
        drop_threads=drop_threads,
        wait_s=wait_s,
    )


def erase_node(state: ForgetState, ctx: Context, deps: Deps) -> dict[str, Any]:
    fields = ("platform", "user_id", "chat_type", "chat_id")
    request = validate_request({k: state[k] for k in fields if k in state}, deps)  # type: ignore[literal-required]
    erased = erase_for(request, deps)
    return {
        "removed": erased.counts,
        "job_ids": erased.job_ids,
        "streams": erased.streams,
        "still_running": erased.still_running,
    }


VARIANTS = {"erase": {"default": erase_node}}
