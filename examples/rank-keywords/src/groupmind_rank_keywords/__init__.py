"""``rank_context=keywords``: the candidates the built-in scorer would look at, ranked by
the share of the message's keywords each holds (the latest first among equals). Those
sharing any keyword are the context, at most ``RANK__MAX_MESSAGES``; when none does, the
three latest are."""

from __future__ import annotations

from nodes.deps import ReplyDeps
from nodes.reply.rank_context import gather
from state.context import Context
from state.reply import ReplyState, current_message
from state.slots import RankContextWrites

FALLBACK = 3  # the latest candidates taken when no candidate shares a keyword


def rank_keywords(state: ReplyState, ctx: Context, deps: ReplyDeps) -> RankContextWrites:
    store = deps.messages
    msg = current_message(state)
    found = store.get(msg.stream, msg.persona_id, [msg.message_id])
    if not found:
        return {"context_ids": [], "ranked": [], "context_fallback": "the message was not stored"}
    trigger = found[0]
    words = set(trigger.keywords)
    candidates = [
        c.message for c in gather(store, trigger, deps.knobs.rank, state.get("observed_seq"))
    ]
    scored = sorted(
        ((m, len(words & set(m.keywords)) / len(words) if words else 0.0) for m in candidates),
        key=lambda ms: (-ms[1], -ms[0].timestamp, -ms[0].seq),
    )
    chosen = [m for m, score in scored if score > 0][: deps.knobs.rank.max_messages]
    chosen = chosen or [m for m, _ in scored[:FALLBACK]]
    chosen.sort(key=lambda m: (m.timestamp, m.seq))
    return {
        "context_ids": [m.message_id for m in chosen],
        "ranked": [[m.message_id, round(score, 4)] for m, score in scored],
        "context_fallback": "",
    }


VARIANTS = {"rank_context": {"keywords": rank_keywords}}
