"""Erasing a person or a chat everywhere its data lives (``groupmind forget``): events in
Chroma and their postings in SQL, stored messages, what was learned, relationships, queued
memory jobs and their checkpoints, context-usage records and chat states.

Jobs go first, so nothing new is written for the target while it is erased: the idle ones
are deleted, running ones are waited for (their writes would land after the erase), then
deleted with whatever they wrote. Every step is idempotent: running forget again finishes
what an interrupted one started.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from stores.base import (
    ChatStateRegistry,
    ContextUsageStore,
    EventStore,
    ForgetTarget,
    JobQueue,
    MessageStore,
    ProfileStore,
    RunInbox,
)

log = logging.getLogger("groupmind.forget")


@dataclass(frozen=True)
class Erased:
    """What one forget removed: counts per kind, and the memory jobs and chat streams it
    touched (whose checkpoints the caller may hold)."""

    counts: dict[str, int]
    job_ids: list[str] = field(default_factory=list)
    streams: list[str] = field(default_factory=list)
    still_running: list[str] = field(default_factory=list)


def erase(
    target: ForgetTarget,
    *,
    events: EventStore,
    profiles: ProfileStore,
    messages: MessageStore | None,
    jobs: JobQueue | None,
    context_usage: ContextUsageStore | None = None,
    chat_states: ChatStateRegistry | None = None,
    run_inbox: RunInbox | None = None,
    drop_threads: Callable[[Sequence[str]], None] | None = None,
    wait_s: float = 30.0,
    poll_s: float = 0.1,
) -> Erased:
    counts: dict[str, int] = {}
    job_ids: list[str] = []
    still_running: list[str] = []
    if jobs is not None:
        job_ids += [row.request_id for row in jobs.forget(target)]
        deadline = time.monotonic() + wait_s
        while (busy := jobs.running(target)) and time.monotonic() < deadline:
            time.sleep(poll_s)
        still_running = jobs.running(target)
        if still_running:
            log.warning(
                "forget %s: %d memory job(s) still running after %.0f s (%s); run forget again "
                "once they are done",
                target,
                len(still_running),
                wait_s,
                ", ".join(busy),
            )
        job_ids += [row.request_id for row in jobs.forget(target, running=True)]
    counts["memory_jobs"] = len(job_ids)
    counts["events"] = len(events.forget(target))
    streams: dict[str, int] = messages.forget(target) if messages is not None else {}
    counts["messages"] = sum(streams.values())
    counts.update(profiles.forget(target))
    if context_usage is not None:
        counts["context_records"] = context_usage.forget(target)
    if run_inbox is not None:
        counts["journaled_messages"] = run_inbox.forget(target)
    if chat_states is not None and target.chat is not None and target.user_id is None:
        counts["chat_states"] = chat_states.forget(target.chat.key)
    if drop_threads is not None and job_ids:
        drop_threads(job_ids)
    counts["job_checkpoints"] = len(job_ids) if drop_threads is not None else 0
    return Erased(counts, job_ids, sorted(streams), still_running)
