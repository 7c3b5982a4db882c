"""A group's topics, kept per speaker so one person's words can be taken out again.

A topic is a keyword at least two people used; what one person said is theirs, not the
group's (and stays in their conversation). The counts behind it are bookkeeping the model
never sees (traits starting with ``_``): ``_topics_by`` maps each speaker to the keywords
they used and how often. Forgetting a person removes their counts and rebuilds the topics
and the summary from everyone else's (``without``).

Counts kept before they were per speaker (``_topic_counts``, ``_topic_speakers``) cannot be
split by person: a word a forgotten person used leaves with them (``without``), and the
first write in the new form carries the rest over as best it can (``counts_by``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

MAX_TOPICS = 8  # shown
WORDS_PER_SPEAKER = 20  # each speaker's most used keywords
SPEAKERS = 200  # the most recent speakers whose counts are kept
LEGACY = ("_topic_counts", "_topic_speakers")


def counts_by(traits: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Each speaker's keyword counts (older aggregate counts credited to their speakers,
    spread evenly)."""
    by = {str(u): {str(w): int(n) for w, n in c.items()} for u, c in
          (traits.get("_topics_by") or {}).items()}  # fmt: skip
    speakers = traits.get("_topic_speakers") or {}
    for word, count in (traits.get("_topic_counts") or {}).items():
        who = [str(u) for u in speakers.get(word, [])] or ["?"]
        for user in who:
            by.setdefault(user, {})[str(word)] = max(1, int(count) // len(who))
    return by


def topics(by: dict[str, dict[str, int]]) -> list[str]:
    """Keywords at least two people used, most used first."""
    total: Counter[str] = Counter()
    speakers: Counter[str] = Counter()
    for counts in by.values():
        total.update(counts)
        speakers.update(counts.keys())
    ranked = sorted(total, key=lambda w: (-total[w], w))
    return [w for w in ranked if speakers[w] >= 2][:MAX_TOPICS]


def summary_of(name: str, top: list[str], zh: bool) -> str:
    if not top:
        return ""
    return (
        f"{name}：常聊" + "、".join(top) if zh else f"{name}: often talks about " + ", ".join(top)
    )


def added(traits: dict[str, Any], user_id: str, words: list[str]) -> dict[str, Any]:
    """The traits with a speaker's keywords counted (the speaker becomes the most recent)."""
    by = counts_by(traits)
    mine = Counter(by.pop(user_id, {}))
    mine.update(words)
    by[user_id] = dict(mine.most_common(WORDS_PER_SPEAKER))
    by = dict(list(by.items())[-SPEAKERS:])
    rest = {k: v for k, v in traits.items() if k not in LEGACY and k != "_topics_by"}
    return {**rest, "topics": topics(by), "_topics_by": by}


def without(traits: dict[str, Any], user_id: str) -> dict[str, Any] | None:
    """The traits with a person's words taken out and the topics rebuilt; None when they
    had said nothing counted here. Words of theirs in counts from before counts were per
    speaker go whole."""
    speakers = traits.get("_topic_speakers") or {}
    theirs = {str(w) for w, who in speakers.items() if user_id in map(str, who)}
    if user_id not in (traits.get("_topics_by") or {}) and not theirs:
        return None
    legacy = {
        "_topic_counts": {w: n for w, n in (traits.get("_topic_counts") or {}).items()
                          if w not in theirs},
        "_topic_speakers": {w: who for w, who in speakers.items() if w not in theirs},
        "_topics_by": traits.get("_topics_by") or {},
    }  # fmt: skip
    by = {u: c for u, c in counts_by(legacy).items() if u != user_id}
    rest = {k: v for k, v in traits.items() if k not in LEGACY and k != "_topics_by"}
    return {**rest, "topics": topics(by), "_topics_by": by}
