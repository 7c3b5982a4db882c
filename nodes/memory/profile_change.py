"""What every profile-merge variant shares: the current rows, the merge rules the seeds
fix (a key fact supersedes the older one of its type, which stays as history with its
source; affection moves by at most ±0.03 per job; the stage follows the score bands), and
the read-compute-write loop that retries on a concurrent write."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from domain.people import KEY_FACT_TYPES, MULTI_FACT_TYPES, stage_for
from nodes.deps import Deps
from nodes.memory.fact_rules import acceptable
from state.memory import MemoryJob
from stores.base import GroupProfile, LearnedProfile, ProfileChange, ProfileConflict, Relationship

MAX_AFFECTION_STEP = 0.03  # seed 000: affection_change within ±0.03 per update
MAX_IMPRESSION_CHARS = 500  # seed 000: 200-500 characters
MAX_OTHER_FACTS = 10
MAX_MERGE_TRIES = 12
MAX_HISTORY = 30  # superseded facts kept per person and chat


class MalformedProfile(ValueError):
    """The model's profile output failed validation: skip the update, keep the event."""


@dataclass
class Current:
    """What a merge may read: the shared relationship, and only what was learned in the
    job's own chat (never another chat's content, whatever the sharing policy: a merge
    writes into this chat, and must not launder another's facts into it)."""

    relationship: Relationship | None
    learned: LearnedProfile | None
    group: GroupProfile | None
    # what this chat learned of the other people the message talks about (by user id)
    others: dict[str, LearnedProfile | None] = field(default_factory=dict)


def merge_key_facts(
    old: list[dict[str, str]],
    new: list[dict[str, str]],
    history: list[dict[str, str]] | None = None,
) -> list[dict[str, str]]:
    """A new fact of a single-valued type supersedes the old one (appended to ``history``
    with ``until``, the new fact's time); ``family``/``dislike``/``other`` facts add up
    (bounded). A value that is a pronoun, a place word or a question's leftover is refused,
    whichever variant proposed it. Facts keep their provenance keys (``source``: the
    message, ``by``: who said it, ``at``: when)."""
    merged = [dict(f) for f in old]
    for fact in new:
        kind, value = fact.get("type", "other"), fact.get("value", "").strip()
        if kind not in KEY_FACT_TYPES or not acceptable(kind, value):
            continue
        entry = {**{k: v for k, v in fact.items() if v}, "type": kind, "value": value}
        same = [f for f in merged if f["type"] == kind]
        if kind in MULTI_FACT_TYPES:
            if all(f["value"] != value for f in same):
                merged.append(entry)
                if len(same) + 1 > MAX_OTHER_FACTS:
                    merged.remove(same[0])
        elif not same or same[-1]["value"] != value:  # the same value again keeps its source
            for f in same:
                merged.remove(f)
                if history is not None:
                    history.append({**f, "until": entry.get("at", "")})
            merged.append(entry)
    if history is not None:
        del history[:-MAX_HISTORY]
    return merged


def provenance(job: MemoryJob) -> dict[str, str]:
    """Where a fact came from: the message (its request id), its speaker and day."""
    return {"source": job.request_id, "by": job.user_id, "at": job.when.date().isoformat()}


def bounded_score(score: float, change: float) -> float:
    step = max(-MAX_AFFECTION_STEP, min(MAX_AFFECTION_STEP, change))
    return round(max(0.0, min(1.0, score + step)), 4)


def trim_impression(text: str, limit: int = MAX_IMPRESSION_CHARS) -> str:
    """Keep the newest lines within the limit (an impression is a portrait, not a log)."""
    lines = [line for line in text.splitlines() if line.strip()]
    while len(lines) > 1 and len("\n".join(lines)) > limit:
        lines.pop(0)
    return "\n".join(lines)[-limit:]


def unique(items: list[str], limit: int) -> list[str]:
    return list(dict.fromkeys(i.strip() for i in items if i and i.strip()))[-limit:]


def base_relationship(job: MemoryJob, current: Relationship | None) -> Relationship:
    """The relationship as it stands, with this job's name and times folded in."""
    ts = job.when.timestamp()
    if current is None:
        return Relationship(
            platform=job.platform, user_id=job.user_id, user_name=job.user_name, first_met_time=ts
        )
    aliases = list(current.aliases)
    if current.user_name != job.user_name:
        aliases = unique([*aliases, current.user_name], 20)
    return Relationship(
        platform=current.platform,
        user_id=current.user_id,
        user_name=job.user_name,
        aliases=[a for a in aliases if a != job.user_name],
        relationship_score=current.relationship_score,
        relationship_stage=current.relationship_stage,
        first_met_time=min(t for t in (current.first_met_time, ts) if t is not None),
        last_impression_update=current.last_impression_update,
        version=current.version,
    )


def base_learned(job: MemoryJob, current: LearnedProfile | None) -> LearnedProfile:
    """What this chat knows of the person so far (a copy to change)."""
    return LearnedProfile(
        platform=job.platform,
        user_id=job.user_id,
        chat_type=job.chat_type,
        chat_id=job.scope_chat_id,
        chat_name=job.chat_name or (current.chat_name if current else ""),
        user_name=job.user_name,
        impression_text=current.impression_text if current else "",
        key_facts=list(current.key_facts) if current else [],
        preference_keywords=list(current.preference_keywords) if current else [],
        summary=current.summary if current else "",
        traits=dict(current.traits) if current else {},
        version=current.version if current else 0,
    )


def finish_relationship(rel: Relationship, affection_change: float, ts: float) -> Relationship:
    rel.relationship_score = bounded_score(rel.relationship_score, affection_change)
    rel.relationship_stage = stage_for(rel.relationship_score)
    rel.last_impression_update = ts
    return rel


Compute = Callable[[Current], ProfileChange]


def apply_with_retry(
    deps: Deps, job: MemoryJob, compute: Compute, others: Sequence[str] = ()
) -> str:
    """Read, compute, write if nobody wrote meanwhile; else read again. ``others``: the
    user ids of other people the change may write about (their profiles in this chat are
    read too). Returns what happened: ``updated``, ``duplicate`` (this request was applied
    before) or ``skipped: <why>`` (the model's output was malformed)."""
    if deps.profiles.was_applied(job.request_id):
        return "duplicate"
    for attempt in range(MAX_MERGE_TRIES):
        current = Current(
            relationship=deps.profiles.get_relationship(job.platform, job.user_id),
            learned=deps.profiles.get_learned(job.scope, job.user_id),
            group=(
                deps.profiles.get_group(job.platform, job.scope_chat_id)
                if job.chat_type == "group"
                else None
            ),
            others={uid: deps.profiles.get_learned(job.scope, uid) for uid in others},
        )
        try:
            change = compute(current)
        except MalformedProfile as exc:
            return f"skipped: {exc}"
        try:
            applied = deps.profiles.apply(change)
        except ProfileConflict:
            time.sleep(random.uniform(0, 0.01 * (attempt + 1)))  # jitter
            continue
        return "updated" if applied else "duplicate"
    raise ProfileConflict(f"user {job.user_id}: gave up after {MAX_MERGE_TRIES} conflicting writes")
