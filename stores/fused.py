"""The arithmetic of fusion (its settings: ``stores.fusion``): each side's candidates summed
by weight, by rank or by score, and a memory's relevance spread to the memories said just
before and after it.

By score, a side's candidates count ``(score - the lowest) / their spread`` (the standard
deviation of its scores): a side sure of its first answer says so, where ranks would
give the first of a flat list as much as the first of a steep one (English questions:
docs/benchmarks/locomo.md, "Stop 59").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from stores.fusion import By
from stores.scope_members import ScopeMembers

Scored = Sequence[tuple[str, float]]  # a side's candidates, best first, with its own scores


def lift_unit(by: By, rrf_k: int, n: int = 0) -> float:
    """What a lift of weight 1 adds to the ``n``-th memory it lifts: its rank's share of
    reciprocal rank fusion, or one standard deviation of a side's scores."""
    return 1.0 / (rrf_k + n + 1) if by == "rank" else (rrf_k + 1) / (rrf_k + n + 1)


def fuse(sides: Sequence[tuple[float, Scored]], by: By, rrf_k: int) -> dict[str, float]:
    """Each side's candidates, summed by weight: ``weight / (rrf_k + rank + 1)`` by rank, or
    ``weight × (score - lowest) / spread`` by score (a side with one candidate, or all
    alike, counts each as one spread)."""
    fused: dict[str, float] = defaultdict(float)
    for weight, scored in sides:
        if not weight or not scored:
            continue
        if by == "rank":
            for rank, (event_id, _) in enumerate(scored):
                fused[event_id] += weight / (rrf_k + rank + 1)
            continue
        scores = np.fromiter((s for _, s in scored), np.float64, len(scored))
        spread = float(scores.std())
        values = (scores - scores.min()) / spread if spread > 0 else np.ones(len(scored))
        for (event_id, _), value in zip(scored, values.tolist(), strict=True):
            fused[event_id] += weight * value
    return fused


@dataclass(frozen=True)
class Timeline:
    """A scope's memories in the order they were said, and the talk each belongs to: a
    pause longer than the gap starts another."""

    ids: list[str]
    talk: np.ndarray  # each place's talk number
    at: dict[str, int]  # id -> place

    @classmethod
    def of(cls, members: ScopeMembers, gap: float) -> Timeline:
        ids, times, at = members.in_order
        talk = np.concatenate([[0], np.cumsum(np.diff(times) > gap)]) if ids else times
        return cls(ids, talk, at)

    def after(self, event_id: str) -> str | None:
        """The memory said next in its talk."""
        at = self.at.get(event_id)
        if at is None or at + 1 >= len(self.ids) or self.talk[at + 1] != self.talk[at]:
            return None
        return self.ids[at + 1]

    def around(self, event_id: str, steps: int) -> list[tuple[int, str]]:
        """The memories up to ``steps`` before and after one, in its talk, with their
        distance."""
        at = self.at.get(event_id)
        if at is None:
            return []
        out = []
        for step in range(1, steps + 1):
            for n in (at - step, at + step):
                if 0 <= n < len(self.ids) and self.talk[n] == self.talk[at]:
                    out.append((step, self.ids[n]))
        return out


def spread(
    fused: dict[str, float], timeline: Timeline, weights: Sequence[float], best: int
) -> None:
    """Each of the ``best`` memories passes ``weights[d - 1]`` of its score to the memories
    ``d`` before and after it in its talk: an answer ("a sunset!") is found by its
    question's words, and the question by its answer's."""
    if not any(weights):
        return
    given: dict[str, float] = defaultdict(float)
    top = sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[:best]
    for event_id, score in top:
        for step, other in timeline.around(event_id, len(weights)):
            given[other] += weights[step - 1] * score
    for event_id, value in given.items():
        fused[event_id] = fused.get(event_id, 0.0) + value


def answered(fused: dict[str, float], pairs: Iterable[tuple[str, str, float, float]]) -> None:
    """Each memory that asks passes ``share`` of its score to what answered it and keeps
    ``keep`` of it (question, answer, share, keep), all from the scores as they were: "What
    pet does Melanie have?" is found by a question about Melanie's pets, but holds no
    answer."""
    given: dict[str, float] = defaultdict(float)
    for question, answer, share, keep in pairs:
        given[answer] += share * fused[question]
        fused[question] *= keep
    for event_id, value in given.items():
        fused[event_id] = fused.get(event_id, 0.0) + value
