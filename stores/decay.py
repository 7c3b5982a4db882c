"""How memories fade, come back when recalled, and are pruned: settings and the arithmetic
(``Settings`` imports this; it must not load numpy or the segmenter).

A memory's *retention* halves every ``half_life`` since it was last touched (written or
recalled). The half-life grows with its importance (a stated fact outlives chit-chat) and
with every recall. Search adds ``weight × retention`` as a lift on the scale of one first
rank; the background pass deletes, per chat beyond ``cap``, the memories with the lowest
retention that are old, unimportant, never recalled and not pinned (docs/memory.md,
"Decay").
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

DAY_S = 86_400.0


@dataclass(frozen=True)
class Strength:
    """What decides a memory's retention: its importance (0-1, from its text), when it was
    written, how often and when last it was recalled, and whether an operator pinned it."""

    importance: float
    timestamp: float
    recalls: int = 0
    last_recalled: float = 0.0
    pinned: bool = False


class Decay(BaseModel):
    """GROUPMIND_DECAY__HALF_LIFE_DAYS, GROUPMIND_DECAY__CAP, ... (docs/memory.md, "Decay")."""

    model_config = ConfigDict(frozen=True)

    half_life_days: float = Field(default=30.0, gt=0, description="of a memory of importance 0")
    importance_gain: float = Field(
        default=3.0, ge=0, description="half-life × (1 + gain × importance): a fact's is 4×"
    )
    recall_gain: float = Field(
        default=1.0, ge=0, description="half-life × (1 + gain × recalls): recall reinforces"
    )
    # 0.05: on LoCoMo (questions about every session, asked after the last) R@5 and R@10
    # stay as with 0 (0.647 / 0.751); 0.1 costs 0.002 of each (docs/memory.md, "Decay")
    weight: float = Field(
        default=0.05, ge=0, description="search lift of a fresh memory, in first ranks (0: off)"
    )
    cap: int = Field(default=0, ge=0, description="memories kept per chat (0: no pruning)")
    prune_below: float = Field(
        default=0.5, ge=0, le=1, description="only memories less important than this go"
    )
    min_age_days: float = Field(default=30.0, ge=0, description="nothing younger goes")
    interval_s: float = Field(default=3600.0, gt=0, description="the worker's pass, per bot")

    def half_life_s(self, s: Strength) -> float:
        gain = (1 + self.importance_gain * s.importance) * (1 + self.recall_gain * s.recalls)
        return self.half_life_days * DAY_S * gain

    def retention(self, s: Strength, now: float) -> float:
        """1 when just written or recalled (or pinned), halving every half-life since."""
        if s.pinned:
            return 1.0
        touched = max(s.timestamp, s.last_recalled)
        return float(0.5 ** (max(0.0, now - touched) / self.half_life_s(s)))

    def prunable(self, s: Strength, now: float) -> bool:
        """Whether the pass may delete it: never pinned, important or recalled ones, nor
        any younger than ``min_age_days``."""
        return (
            not s.pinned
            and s.recalls == 0
            and s.importance < self.prune_below
            and now - s.timestamp >= self.min_age_days * DAY_S
        )
