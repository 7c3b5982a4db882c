"""BM25 scoring, checked against the textbook formula computed one document at a time."""

from __future__ import annotations

import math

from hypothesis import example, given, settings
from hypothesis import strategies as st

from stores.sql.lexical import K1, B, bm25_top

# postings: (event, term) pairs are unique, as the table's key makes them
posting_sets = st.dictionaries(
    st.tuples(st.sampled_from([f"e{n}" for n in range(12)]), st.sampled_from("abcde")),
    st.integers(1, 4),
    min_size=1,
    max_size=40,
)


def textbook(
    postings: list[tuple[str, str, int, int]], n_docs: int, avg: float
) -> dict[str, float]:
    df: dict[str, int] = {}
    for _, term, _, _ in postings:
        df[term] = df.get(term, 0) + 1
    scores: dict[str, float] = {}
    for event, term, tf, length in postings:
        idf = math.log(1 + (n_docs - df[term] + 0.5) / (df[term] + 0.5))
        norm = tf + K1 * (1 - B + B * length / avg)
        scores[event] = scores.get(event, 0.0) + idf * tf * (K1 + 1) / norm
    return scores


@settings(max_examples=200, deadline=None)
@given(posting_sets, st.integers(1, 15), st.integers(0, 30))
# A true tie (3 x 2.2 / 3.975 = 2 x 2.2 / 2.65) that floating point split by one bit.
@example(tf={("e0", "a"): 3, ("e1", "d"): 1, ("e3", "a"): 1, ("e3", "d"): 1}, k=1, extra_docs=1)
def test_the_top_k_are_the_best_scores_with_ties_by_id(
    tf: dict[tuple[str, str], int], k: int, extra_docs: int
) -> None:
    # every event's length is fixed (the document's), whichever term row carries it
    postings = [(e, t, n, 3 + int(e[1:]) % 4) for (e, t), n in tf.items()]
    n_docs = len({e for e, *_ in postings}) + extra_docs
    want = textbook(postings, n_docs, 4.0)
    got = bm25_top(postings, n_docs, 4.0, k)
    assert [e for e, _ in got] == sorted(want, key=lambda e: (-round(want[e], 9), e))[:k]
    for event, score in got:
        assert math.isclose(score, want[event], rel_tol=1e-9)


def test_ties_at_the_cut_go_by_id() -> None:
    postings = [(f"e{n}", "a", 1, 5) for n in (5, 3, 9, 1)]
    assert [e for e, _ in bm25_top(postings, 10, 5.0, 2)] == ["e1", "e3"]
    assert bm25_top(postings, 10, 5.0, 0) == []
