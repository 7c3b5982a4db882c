"""Held vectors follow any sequence of writes: new memories appended in place, rewritten
ones overwritten, removals rebuilt; every search equals exact cosine over what SQL lists."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stores.scope_members import ScopeMembers
from stores.scope_vectors import ScopeVectors

DIM = 8
# one step: add n new memories, rewrite one or remove one (by position), or remove one
# and add one (the same count)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(1, 7)),
        st.tuples(st.sampled_from(["rewrite", "remove", "replace"]), st.integers(0, 1000)),
    ),
    min_size=1,
    max_size=25,
)


def unit(v: np.ndarray) -> np.ndarray:
    out: np.ndarray = v / np.linalg.norm(v)
    return out


@settings(max_examples=60, deadline=None)
@given(steps, st.integers(0, 2**32 - 1))
def test_held_search_is_exact_after_any_writes(ops: list[tuple[str, int]], seed: int) -> None:
    rng = np.random.default_rng(seed)
    truth: dict[str, tuple[np.ndarray, float]] = {}  # id -> (vector, written)
    held, made, fetched = ScopeVectors(background=False), 0, []

    def fetch(ids: list[str]) -> dict[str, np.ndarray]:
        fetched.extend(ids)
        return {i: truth[i][0] for i in ids}

    for clock, (op, n) in enumerate(ops, start=1):
        before = dict(truth)
        if op == "add":
            for _ in range(n):
                truth[f"e{made}"] = (rng.normal(size=DIM).astype(np.float32), clock)
                made += 1
        elif truth and op == "rewrite":
            i = sorted(truth)[n % len(truth)]
            truth[i] = (rng.normal(size=DIM).astype(np.float32), clock)
        elif truth:
            del truth[sorted(truth)[n % len(truth)]]
            if op == "replace":
                truth[f"e{made}"] = (rng.normal(size=DIM).astype(np.float32), clock)
                made += 1
        if not truth:
            continue
        old = held._held.get("chat")
        ids = list(truth)
        written = {i: truth[i][1] for i in ids}
        said = dict.fromkeys(ids, ("u", "U"))
        # as SQL grows a list: from the last version, with what was written since it
        since = {i: truth[i][1] for i in ids if truth[i][1] == clock}
        members = ScopeMembers((len(ids), clock), written, said, 0, (len(before), clock - 1), since)
        query = rng.normal(size=DIM).astype(np.float32)
        k = min(5, len(ids))
        fetched.clear()
        got = held.search("chat", members, query, k, fetch)
        changed = {i for i in ids if before.get(i, (None, None))[1] != truth[i][1]}
        assert set(fetched) == (changed if old is not None else set(ids))  # only the changed
        scores = np.stack([unit(truth[i][0]) for i in ids]) @ unit(query)
        assert got is not None and {i for i, _ in got} <= set(ids)
        assert sorted(held._held["chat"].ids) == sorted(ids)
        assert np.allclose([s for _, s in got], np.sort(scores)[::-1][:k], atol=1e-5)
        for i, (row, _) in (old.rows if old is not None else {}).items():
            if i in truth and i not in changed:  # what an earlier search holds is intact
                assert np.allclose(old.matrix[row], unit(truth[i][0]), atol=1e-6)


def test_a_new_memory_is_appended_without_copying_the_held_rows() -> None:
    rng = np.random.default_rng(0)
    vectors = {f"e{n}": rng.normal(size=DIM).astype(np.float32) for n in range(102)}
    held = ScopeVectors(background=False)

    def fetch(ids: list[str]) -> dict[str, np.ndarray]:
        return {i: vectors[i] for i in ids}

    def search(count: int, top: str) -> str:
        ids = list(vectors)[:count]
        written = [1.0] * 100 + [2.0, 3.0][: count - 100]
        times = dict(zip(ids, written, strict=True))
        members = ScopeMembers((count, written[-1]), times, dict.fromkeys(ids, ("u", "U")))
        got = held.search("chat", members, vectors[top], 1, fetch)
        assert got is not None
        return got[0][0]

    assert search(100, "e7") == "e7"
    assert search(101, "e100") == "e100"  # the buffer doubled: one copy
    grown = held._held["chat"]
    assert len(grown.buffer) == 200
    assert held.held_bytes() == 200 * DIM * 4  # the spare rows count too
    assert search(102, "e101") == "e101"
    assert held._held["chat"].buffer is grown.buffer  # appended in its spare rows
    assert np.shares_memory(held._held["chat"].matrix, grown.matrix)
