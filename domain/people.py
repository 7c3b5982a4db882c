"""People: how close the bot is to someone (relationship stages) and what can be known
about them (key-fact types, with their names in prompts and summaries)."""

from __future__ import annotations

RELATIONSHIP_STAGES: tuple[tuple[float, str], ...] = (
    # relationship_score bands, each by its upper bound (docs/memory.md): a score below
    # 0.2 is a stranger, from 0.9 a bestie
    (0.2, "stranger"),
    (0.4, "acquaintance"),
    (0.6, "familiar"),
    (0.75, "friend"),
    (0.9, "close_friend"),
    (1.01, "bestie"),
)
# What a key fact can be, with its name in prompts and summaries (zh, en). Single-valued
# types hold one value (a later one supersedes it, kept as history); MULTI_FACT_TYPES add up.
FACT_LABELS: dict[str, tuple[str, str]] = {
    "age": ("年龄", "age"),
    "birthday": ("生日", "birthday"),
    "star_sign": ("星座", "star sign"),
    "job": ("工作", "job"),
    "workplace": ("工作单位", "works at"),
    "school": ("学校", "school"),
    "location": ("所在地", "lives in"),
    "hometown": ("家乡", "from"),
    "partner": ("伴侣", "partner"),
    "family": ("家庭", "family"),
    "pet": ("宠物", "pet"),
    "dream": ("理想", "dream"),
    "dislike": ("不喜欢", "dislikes"),
    "other": ("其他", "other"),
}
KEY_FACT_TYPES = tuple(FACT_LABELS)
MULTI_FACT_TYPES = frozenset({"family", "dislike", "other"})


def stage_for(score: float) -> str:
    for upper, stage in RELATIONSHIP_STAGES:
        if score < upper:
            return stage
    return RELATIONSHIP_STAGES[-1][1]
