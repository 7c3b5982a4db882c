"""Erasing a person or a chat everywhere its data lives (``groupmind forget``): events in
Chroma and their postings in SQL, stored messages, what was learned, relationships, queued
memory jobs and their checkpoints, context-usage records, chat states, the events a chat
bridge journaled; and, for a person, their words where they were derived into someone
else's data: the message an event of someone else answered, the recent messages other
jobs carry, the group's topics and summary (rebuilt without them).

Jobs go first, so nothing new is written for the target while it is erased: the idle ones
are deleted, running ones are waited for (their writes would land after the erase), then
deleted with whatever they wrote. Every step is idempotent: running forget again finishes
what an interrupted one started. What the engines keep of deleted rows on disk (free
pages, write-ahead logs) is the caller's to compact (``stores.compact``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from domain.scope import ForgetTarget
from stores.base import (
    BridgeJournal,
    ChatStateRegistry,
    ContextUsageStore,
    EventStore,
    JobQueue,
    MessageStore,
    ProfileStore,
    RunInbox,
)
from stores.said import Said

log = logging.getLogger("groupmind.forget")


@dataclass(frozen=True)
class Erased:
    """What one forget removed: counts per kind, and the memory jobs and chat streams it
    touched (whose checkpoints the caller may hold)."""

    counts: dict[str, int]
    job_ids: list[str] = field(default_factory=list)
    streams: list[str] = field(default_factory=list)
    still_running: list[str] = field(default_factory=list)
    said: Said | None = None  # a person's names and messages, for what holds them elsewhere


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
    bridge_journal: BridgeJournal | None = None,
    drop_threads: Callable[[Sequence[str]], None] | None = None,
    wait_s: float = 30.0,
    poll_s: float = 0.1,
) -> Erased:
    counts: dict[str, int] = {}
    job_ids: list[str] = []
    still_running: list[str] = []
    person = target.user_id is not None
    # What they said and what memory made of it, read before it goes: their lines
    # elsewhere, and the bot's lines drawn from them, are found by it.
    said = (
        messages.said_by(target) if person and messages is not None else Said(target.user_id or "")
    )
    if person:
        said = remembered(said, target, events, profiles)
    if jobs is not None:
        job_ids += [row.request_id for row in jobs.forget(target)]
        deadline = time.monotonic() + wait_s
        still_running = _wait(jobs, target, deadline, poll_s)
        job_ids += [row.request_id for row in jobs.forget(target, running=True)]
        if person:  # others' jobs in these chats carry their lines as context
            still_running += _wait(jobs, target, deadline, poll_s, everyone=True)
            scrubbed = jobs.scrub(target, said)
            counts["jobs_scrubbed"] = len(scrubbed)
            if drop_threads is not None and scrubbed:
                drop_threads(scrubbed)  # their checkpoints hold the old payloads
    counts["memory_jobs"] = len(job_ids)
    counts["events"] = len(events.forget(target))
    if person:
        counts["contexts_blanked"] = len(events.scrub_context(target, said))
    streams: dict[str, int] = messages.forget(target, said) if messages is not None else {}
    counts["messages"] = sum(streams.values())
    counts.update(profiles.forget(target))
    if context_usage is not None:
        counts["context_records"] = context_usage.forget(target, said)
    if run_inbox is not None:
        counts["journaled_messages"] = run_inbox.forget(target)
    if bridge_journal is not None:
        counts["bridge_events"] = bridge_journal.forget(target, said)
    if chat_states is not None and target.chat is not None and target.user_id is None:
        counts["chat_states"] = chat_states.forget(target.chat.key)
    if drop_threads is not None and job_ids:
        drop_threads(job_ids)
    counts["job_checkpoints"] = len(job_ids) if drop_threads is not None else 0
    return Erased(counts, job_ids, sorted(streams), sorted(set(still_running)), said)


def remembered(
    said: Said, target: ForgetTarget, events: EventStore, profiles: ProfileStore
) -> Said:
    """``said`` with what was remembered of the person in the target's chats: their
    events' texts (and ids), the key facts and impressions learned of them."""
    ids = events.covered(target)
    texts = [e.text for e in events.get(ids)]
    for learned in profiles.learned_about(target.platform, target.user_id or ""):
        if target.chat is None or learned.scope == target.chat:
            texts += [learned.impression_text, learned.summary]
            texts += [str(f.get("value", "")) for f in learned.key_facts]
    return said.remembering([t for t in texts if t], ids)


def _wait(
    jobs: JobQueue, target: ForgetTarget, deadline: float, poll_s: float, everyone: bool = False
) -> list[str]:
    """Until no job the target covers (``everyone``: of anyone in its chats) is held by a
    live worker (their writes would land after the erase), or the deadline; the ones
    still running then."""
    while (busy := jobs.running(target, everyone=everyone)) and time.monotonic() < deadline:
        time.sleep(poll_s)
    if busy:
        log.warning(
            "forget %s: %d memory job(s) still running (%s); run forget again once they are done",
            target,
            len(busy),
            ", ".join(busy),
        )
    return busy
