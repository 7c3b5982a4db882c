"""rank_context: pick the few earlier messages this one needs (seed 004).

Candidates: the reply chain (ancestors, then siblings; up to ``chain_max``) and the time
window (``window_hours``, the latest ``window_max``). Each is scored on five features with
the settings' weights (seed defaults: reply chain 0.4, user continuity 0.15, time decay
0.2, mention relation 0.15, keyword overlap 0.1); those at or above ``threshold`` are kept,
at most ``max_messages``, returned oldest first. On an error or a time-out the most
recent messages are used instead, and the state says why.

Variants: ``weighted`` (the scorer) and ``recent`` (the fallback on purpose: a baseline
for A/B runs).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

from nodes.deps import ReplyDeps
from nodes.settings import RankSettings
from state.context import Context
from state.reply import ReplyState, current_message
from state.slots import RankContextWrites
from stores.base import MessageStore, StoredMessage

log = logging.getLogger("groupmind.reply")
SIBLING = 0.6
ANCESTOR_DECAY = 0.8
# How the features read a multi-party chat (measured on IRC dev; held on train logs):
POSITION_DECAY = 0.9  # time_decay per message in between, not only per second
SUPERSEDED = 0.85  # time_decay once the author has spoken again since
MENTION_LATEST, MENTION_OLDER = 1.0, 0.5  # the trigger addresses the candidate's author
ADDRESSED_LATEST, ADDRESSED_OLDER = 0.7, 0.3  # the candidate addressed the trigger's author
OWN_THREAD, OWN_ASIDE, EXCHANGE = 1.0, 0.3, 0.5  # user continuity, see features()
KEYWORD_GAIN = 2.0  # half the trigger's keywords shared counts as full overlap


class RankTimeout(Exception):
    pass


@dataclass(frozen=True)
class Candidate:
    message: StoredMessage
    chain: float = 0.0  # 1.0 for the parent, decaying up the chain; SIBLING for siblings


@dataclass(frozen=True)
class Place:
    """Where a candidate stands relative to the trigger and the candidates after it."""

    position: int  # messages between it and the trigger (0: the one right before)
    author_latest: bool  # its author has not spoken since
    addressed_latest: bool  # the latest candidate to address the trigger's author
    exchange: bool  # its author and the trigger's author addressed each other lately


def gather(
    store: MessageStore, trigger: StoredMessage, rank: RankSettings, upto_seq: int | None = None
) -> list[Candidate]:
    """Reply chain first (it outranks time), then the window; each message once. On a
    re-plan, messages stored after the trigger (up to ``upto_seq``) join the window."""
    found: dict[str, Candidate] = {}
    parent_id, weight = trigger.reply_to, 1.0
    while parent_id and len(found) < rank.chain_max:
        got = store.get(trigger.stream, trigger.persona_id, [parent_id])
        if not got or got[0].message_id in found:
            break
        found[got[0].message_id] = Candidate(got[0], weight)
        parent_id, weight = got[0].reply_to, weight * ANCESTOR_DECAY
    if trigger.reply_to and len(found) < rank.chain_max:
        for sibling in store.replies_to(
            trigger.stream, trigger.persona_id, [trigger.reply_to], rank.chain_max
        ):
            if sibling.message_id != trigger.message_id and sibling.timestamp <= trigger.timestamp:
                found.setdefault(sibling.message_id, Candidate(sibling, SIBLING))
    newer = (
        store.newer_than(trigger.stream, trigger.persona_id, trigger.seq)
        if upto_seq and upto_seq > trigger.seq
        else []
    )
    newer = [m for m in newer if m.seq <= (upto_seq or 0) and not m.from_bot]
    window = store.window(
        trigger.stream,
        trigger.persona_id,
        before=max([trigger.timestamp, *(m.timestamp for m in newer)]),
        since=trigger.timestamp - rank.window_hours * 3600,
        limit=rank.window_max + len(newer),
        exclude=trigger.message_id,
    )
    for message in window:
        if message.seq < trigger.seq or message.timestamp < trigger.timestamp or message in newer:
            found.setdefault(message.message_id, Candidate(message))
    return list(found.values())


def places(trigger: StoredMessage, candidates: list[Candidate]) -> dict[str, Place]:
    newest_first = sorted(
        candidates, key=lambda c: (c.message.timestamp, c.message.seq), reverse=True
    )
    spoke_since: set[str] = set()
    addressed_seen = False
    partners = {m for m in trigger.mentions}
    for c in newest_first:
        m = c.message
        if trigger.user_id in m.mentions:
            partners.add(m.user_id)
        if m.user_id == trigger.user_id:
            partners.update(m.mentions)
    out = {}
    for position, c in enumerate(newest_first):
        m = c.message
        addressing = trigger.user_id in m.mentions
        out[m.message_id] = Place(
            position=position,
            author_latest=m.user_id not in spoke_since,
            addressed_latest=addressing and not addressed_seen,
            exchange=m.user_id in partners,
        )
        spoke_since.add(m.user_id)
        addressed_seen = addressed_seen or addressing
    return out


def features(
    trigger: StoredMessage, c: Candidate, p: Place, rank: RankSettings
) -> dict[str, float]:
    """seed 004's five features, read for a chat where many talk at once:

    - reply_chain: an explicit reply_to chain (parent 1.0, decaying up; siblings 0.6);
    - user_continuity: the author's own latest line when the trigger addresses no one
      (they go on with their thread) 1.0, an older or aside line of theirs 0.3, someone
      they are in an exchange with 0.5;
    - time_decay: per message in between and per second (``half_life_s``), lower once the
      candidate's author has spoken again;
    - mention_relation: the trigger addresses the candidate's author (their latest line
      1.0, older 0.5), or the candidate addressed the trigger's author (latest 0.7, else 0.3);
    - keyword_overlap: shared keywords over the trigger's, doubled, capped at 1.
    """
    m = c.message
    age = max(0.0, trigger.timestamp - m.timestamp)
    if m.user_id == trigger.user_id:
        continuity = OWN_THREAD if p.author_latest and not trigger.mentions else OWN_ASIDE
    else:
        continuity = EXCHANGE if p.exchange else 0.0
    mention = 0.0
    if m.user_id in trigger.mentions:
        mention = MENTION_LATEST if p.author_latest else MENTION_OLDER
    if trigger.user_id in m.mentions:
        mention = max(mention, ADDRESSED_LATEST if p.addressed_latest else ADDRESSED_OLDER)
    keys = set(trigger.keywords)
    return {
        "reply_chain": c.chain,
        "user_continuity": continuity,
        "time_decay": POSITION_DECAY**p.position
        * (1.0 if p.author_latest else SUPERSEDED)
        * math.pow(0.5, age / rank.half_life_s),
        "mention_relation": mention,
        "keyword_overlap": min(1.0, KEYWORD_GAIN * len(keys & set(m.keywords)) / len(keys))
        if keys
        else 0.0,
    }


def score(f: dict[str, float], rank: RankSettings) -> float:
    w = rank.weights
    return (
        w.reply_chain * f["reply_chain"]
        + w.user_continuity * f["user_continuity"]
        + w.time_decay * f["time_decay"]
        + w.mention_relation * f["mention_relation"]
        + w.keyword_overlap * f["keyword_overlap"]
    )


def rank_candidates(
    trigger: StoredMessage, candidates: list[Candidate], rank: RankSettings, deadline: float
) -> list[tuple[StoredMessage, float]]:
    scored = []
    where = places(trigger, candidates)
    for c in candidates:
        if time.perf_counter() > deadline:
            raise RankTimeout(f"over {rank.timeout_ms:.0f} ms")
        f = features(trigger, c, where[c.message.message_id], rank)
        scored.append((c.message, round(score(f, rank), 4)))
    return sorted(scored, key=lambda ms: (-ms[1], -ms[0].timestamp, -ms[0].seq))


def select(ranked: list[tuple[StoredMessage, float]], rank: RankSettings) -> list[StoredMessage]:
    kept = [m for m, s in ranked if s >= rank.threshold][: rank.max_messages]
    return sorted(kept, key=lambda m: (m.timestamp, m.seq))


def _trigger(state: ReplyState, store: MessageStore) -> StoredMessage:
    msg = current_message(state)
    got = store.get(msg.stream, msg.persona_id, [msg.message_id])
    if not got:
        raise LookupError(f"message {msg.message_id} was not stored by observe")
    return got[0]


def _recent(store: MessageStore, trigger: StoredMessage, rank: RankSettings) -> list[StoredMessage]:
    return store.window(
        trigger.stream,
        trigger.persona_id,
        before=trigger.timestamp,
        since=trigger.timestamp - rank.window_hours * 3600,
        limit=rank.max_messages,
        exclude=trigger.message_id,
    )


def rank_weighted(state: ReplyState, ctx: Context, deps: ReplyDeps) -> RankContextWrites:
    store = deps.messages
    rank = deps.knobs.rank
    trigger = _trigger(state, store)
    try:
        deadline = time.perf_counter() + rank.timeout_ms / 1000
        candidates = gather(store, trigger, rank, state.get("observed_seq"))
        ranked = rank_candidates(trigger, candidates, rank, deadline)
    except Exception as exc:  # noqa: BLE001 - seed 004 §10.1: degrade, never fail the reply
        log.warning("rank_context for %s fell back to recent messages: %s", trigger.message_id, exc)
        recent = _recent(store, trigger, rank)
        return {
            "context_ids": [m.message_id for m in recent],
            "ranked": [],
            "context_fallback": f"{type(exc).__name__}: {exc}",
        }
    return {
        "context_ids": [m.message_id for m in select(ranked, rank)],
        "ranked": [[m.message_id, s] for m, s in ranked],
        "context_fallback": "",
    }


def rank_recent(state: ReplyState, ctx: Context, deps: ReplyDeps) -> RankContextWrites:
    store = deps.messages
    trigger = _trigger(state, store)
    recent = _recent(store, trigger, deps.knobs.rank)
    n = len(recent)
    return {
        "context_ids": [m.message_id for m in recent],
        "ranked": [[m.message_id, round((i + 1) / n, 4)] for i, m in enumerate(recent)][::-1],
        "context_fallback": "",
    }


VARIANTS = {"rank_context": {"weighted": rank_weighted, "recent": rank_recent}}
