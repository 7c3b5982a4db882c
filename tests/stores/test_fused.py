"""Fusion by rank and by score, and a memory's relevance spread to its neighbours."""

from __future__ import annotations

import pytest

from stores.fused import Timeline, fuse, lift_unit, spread
from stores.scope_members import ScopeMembers


def members(said_at: dict[str, float]) -> ScopeMembers:
    written = {event_id: float(n) for n, event_id in enumerate(said_at)}
    return ScopeMembers((len(said_at), 0.0), written, {}, said_at=said_at)


def test_by_rank_each_side_adds_its_reciprocal_rank() -> None:
    fused = fuse([(1.0, [("a", 9.0), ("b", 1.0)]), (0.5, [("b", 3.0)])], "rank", 10)
    assert fused == pytest.approx({"a": 1 / 11, "b": 1 / 12 + 0.5 / 11})


def test_by_score_a_side_sure_of_its_first_answer_outweighs_a_flat_one() -> None:
    """Side one puts ``a`` far ahead; side two barely prefers ``b``. By rank the two tie;
    by score ``a`` wins, and each side's lowest candidate counts nothing."""
    steep = [("a", 10.0), ("b", 1.0), ("c", 0.9)]
    flat = [("b", 0.51), ("a", 0.50), ("c", 0.49)]
    by_rank = fuse([(1.0, steep), (1.0, flat)], "rank", 10)
    assert by_rank["a"] == pytest.approx(by_rank["b"])
    by_score = fuse([(1.0, steep), (1.0, flat)], "score", 10)
    assert by_score["a"] > by_score["b"]
    assert by_score["c"] == 0.0
    assert fuse([(2.0, [("only", 0.3)])], "score", 10) == {"only": 2.0}  # one: one spread


def test_a_lift_is_one_first_rank_or_one_spread_and_fades_with_its_rank() -> None:
    assert lift_unit("rank", 10) == pytest.approx(1 / 11)
    assert lift_unit("score", 10) == 1.0
    assert lift_unit("score", 10, 11) == pytest.approx(0.5)


def test_relevance_spreads_to_neighbours_in_the_same_talk_only() -> None:
    """q asks, a answers right after: the answer gets a share of the question's score, two
    steps away less, and nothing crosses a pause longer than the gap."""
    timeline = Timeline.of(
        members({"q": 100.0, "a": 100.0, "b": 160.0, "next_day": 90_000.0}), 1800
    )
    assert timeline.ids == ["q", "a", "b", "next_day"]  # same time: in the order written
    fused = {"q": 1.0}
    spread(fused, timeline, (0.3, 0.2), best=10)
    assert fused == pytest.approx({"q": 1.0, "a": 0.3, "b": 0.2})


def test_only_the_best_pass_their_score_on() -> None:
    timeline = Timeline.of(members({"x": 0.0, "y": 1.0, "z": 2.0}), 1800)
    fused = {"x": 1.0, "z": 0.1}
    spread(fused, timeline, (0.5,), best=1)
    assert fused == pytest.approx({"x": 1.0, "y": 0.5, "z": 0.1})
