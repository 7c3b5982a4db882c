"""BM25 and the best k, ties by name: one rule for every keyword ranking (SQL and held)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

DIGITS = 9  # scores equal to here are a tie: the same sum added in another order differs
TIE = 10.0**-DIGITS  # in its last bits (0.830189 * 2 against 1.660377 for one term)


def gain(
    tf: np.ndarray,
    length: np.ndarray,
    df: np.ndarray,
    n_docs: int,
    params: tuple[float, float, float],
) -> np.ndarray:
    """Each posting's BM25 term score; ``df``: its term's document frequency; ``params``:
    (k1, b, average length)."""
    k1, b, avg_len = params
    idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
    return idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * length / avg_len))  # type: ignore[no-any-return]


def top_k(scores: np.ndarray, name: Callable[[int], str], k: int) -> list[int]:
    """Indices of the ``k`` best ``scores``, best first; tied scores by ``name``."""
    if k <= 0:
        return []
    if k < len(scores):  # every index scoring at least the k-th best: ties at the cut included
        floor = np.partition(scores, len(scores) - k)[len(scores) - k]
        candidates = np.flatnonzero(scores >= floor - TIE)
    else:
        candidates = np.arange(len(scores))

    def rank(i: int) -> tuple[float, str]:
        return -round(float(scores[i]), DIGITS), name(i)

    return sorted(candidates.tolist(), key=rank)[:k]
