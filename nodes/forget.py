"""erase: the forget graph's one slot. Validates the request, then erases everything the
target covers through the stores (``stores.forget``), memory-job checkpoints included,
then from the reply threads (``ForgetDeps.reply_threads``) and the copies groupmind made
(``ForgetDeps.copies``), then has the engines let go of what they keep of deleted rows on
disk (``ForgetDeps.compact``)."""

from __future__ import annotations

import asyncio
from typing import Any

from nodes.deps import Deps, ForgetDeps
from state.context import Context
from state.forget import EraseWrites, ForgetRequest, ForgetState
from state.validation import validated
from stores.base import job_thread_id
from stores.forget import Erased, erase
from stores.said import Said


def validate_request(raw: Any, deps: Deps) -> ForgetRequest:
    return validated(ForgetRequest, raw, "forget", deps.validation)


def erase_for(request: ForgetRequest, deps: Deps, wait_s: float = 30.0) -> Erased:
    checkpoints = deps.process.checkpoints

    def drop_threads(request_ids: Any) -> None:
        if checkpoints is not None:
            for request_id in request_ids:
                checkpoints.delete_thread(job_thread_id(deps.limits.bot_id, request_id))
                checkpoints.delete_thread(request_id)  # named so before bots had their own

    return erase(
        request.target(),
        events=deps.events,
        profiles=deps.profiles,
        messages=deps.messages,
        jobs=deps.jobs,
        context_usage=deps.context_usage,
        chat_states=deps.chat_states,
        run_inbox=deps.run_inbox,
        bridge_journal=deps.bridge_journal,
        drop_threads=drop_threads,
        wait_s=wait_s,
    )


def request_of(state: ForgetState, deps: Deps) -> ForgetRequest:
    fields = ("platform", "user_id", "chat_type", "chat_id")
    return validate_request({k: state[k] for k in fields if k in state}, deps)  # type: ignore[literal-required]


def report(
    erased: Erased, threads: int, copies: dict[str, Any], compacted: dict[str, str]
) -> EraseWrites:
    return {
        "removed": {**erased.counts, "reply_threads": threads},
        "job_ids": erased.job_ids,
        "streams": erased.streams,
        "still_running": erased.still_running,
        "copies": copies,
        "compacted": compacted,
    }


def streams_of(erased: Erased, request: ForgetRequest) -> list[str]:
    """The chat streams whose reply threads hold something of the target."""
    target = request.target()
    return sorted(set(erased.streams) | ({target.chat.key} if target.chat else set()))


def forget(request: ForgetRequest, deps: ForgetDeps, wait_s: float = 30.0) -> EraseWrites:
    """Erase from the stores, then from the reply threads, then compact (in-process)."""
    erased = erase_for(request, deps, wait_s)
    threads = deps.reply_threads
    said = erased.said or Said("")
    scrubbed = threads.scrub(streams_of(erased, request), request.target(), said) if threads else 0
    copies = deps.copies(request.target(), said)
    return report(erased, scrubbed, copies, deps.compact() if deps.compact else {})


async def erase_node(state: ForgetState, ctx: Context, deps: ForgetDeps) -> EraseWrites:
    """The forget graph's node (on a LangGraph server: the server's own threads are
    scrubbed from inside it, between the stores and the compaction)."""
    request = request_of(state, deps)
    erased = await asyncio.to_thread(erase_for, request, deps)
    threads, said = deps.reply_threads, erased.said or Said("")
    scrubbed = (
        await threads.ascrub(streams_of(erased, request), request.target(), said) if threads else 0
    )
    copies = await asyncio.to_thread(deps.copies, request.target(), said)
    compacted = await asyncio.to_thread(deps.compact) if deps.compact else {}
    return report(erased, scrubbed, copies, compacted)


VARIANTS = {"erase": {"default": erase_node}}
