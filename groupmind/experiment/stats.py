"""Paired comparison of two arms: the same examples scored under both, the difference of
their figures with a bootstrap confidence interval, and a verdict.

Resampling is over examples, and both arms are resampled together (the examples drawn are
the same for both), so what varies from example to example (an easy question, a long
message) is not taken for a difference between the arms.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

from groupmind.experiment.evaluators import Aggregate, Better

Verdict = Literal["better", "worse", "no clear difference", "not compared"]


def aggregate(values: np.ndarray, how: Aggregate, axis: int = -1) -> np.ndarray:
    if how == "mean":
        return np.asarray(np.mean(values, axis=axis))
    return np.asarray(np.percentile(values, 50 if how == "p50" else 95, axis=axis))


@dataclass(frozen=True)
class Comparison:
    n: int  # examples both arms were scored on
    baseline: float
    arm: float
    diff: float  # arm - baseline, on the paired examples
    low: float
    high: float
    verdict: Verdict


def paired(
    base: Mapping[str, float],
    arm: Mapping[str, float],
    how: Aggregate,
    better: Better,
    *,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Comparison:
    """``base`` and ``arm``: example id -> score. The interval is the percentile bootstrap's;
    the verdict says which way it lies from zero, if it does not hold zero."""
    ids = sorted(set(base) & set(arm))
    if not ids:
        nan = float("nan")
        return Comparison(0, nan, nan, nan, nan, nan, "not compared")
    a = np.array([base[i] for i in ids], dtype=float)
    b = np.array([arm[i] for i in ids], dtype=float)
    va, vb = float(aggregate(a, how)), float(aggregate(b, how))
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(ids), size=(resamples, len(ids)))
    diffs = aggregate(b[draws], how, axis=1) - aggregate(a[draws], how, axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = (float(x) for x in np.percentile(diffs, [tail, 100 - tail]))
    verdict: Verdict = "no clear difference"
    if low > 0 or high < 0:
        up = low > 0
        verdict = "better" if up == (better == "higher") else "worse"
    return Comparison(len(ids), va, vb, vb - va, low, high, verdict)


def interval(
    scores: Mapping[str, float],
    how: Aggregate,
    *,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """One arm's figure and its bootstrap interval (for the plot's whiskers)."""
    values = np.array(list(scores.values()), dtype=float)
    if not len(values):
        nan = float("nan")
        return nan, nan, nan
    rng = np.random.default_rng(seed)
    draws = aggregate(values[rng.integers(0, len(values), size=(resamples, len(values)))], how, 1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(draws, [tail, 100 - tail])
    return float(aggregate(values, how)), float(low), float(high)
