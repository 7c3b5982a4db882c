"""Packed vectors (int8 and a scale): each coordinate within half a step, any vector."""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from stores.packed import pack, unpack, unpack_many

finite = st.floats(-1e3, 1e3, allow_nan=False, width=32)


@given(arrays(np.float32, st.integers(1, 512), elements=finite))
def test_round_trip_within_half_a_step(v: np.ndarray) -> None:
    blob = pack(v)
    assert len(blob) == 4 + v.size
    back = unpack(blob)
    step = (float(np.abs(v).max()) or 1.0) / 127
    # float32 cannot hold a step below its smallest normal exactly (a subnormal vector
    # packs to zeros): allow that much absolute error on top of half a step.
    tiny = float(np.finfo(np.float32).tiny)
    assert back.shape == v.shape and np.abs(back - v).max() <= step / 2 + 1e-6 * step + tiny


@given(st.lists(arrays(np.float32, st.sampled_from([3, 8]), elements=finite), max_size=12))
def test_many_at_once_equal_one_at_a_time(vectors: list[np.ndarray]) -> None:
    """Bulk unpacking gives each blob's own vector, also when lengths are mixed."""
    blobs = [pack(v) for v in vectors]
    matrix = unpack_many(blobs)
    assert len(matrix) == len(blobs)
    for row, blob in zip(matrix, blobs, strict=True):
        assert np.array_equal(row, unpack(blob))


def test_a_subnormal_vector_packs_without_overflow() -> None:
    v = np.array([1e-40, -3e-41, 0.0], dtype=np.float32)  # below float32's smallest normal
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow / invalid-value warnings fail it
        blob = pack(v)
    assert np.frombuffer(blob, dtype=np.int8, offset=4).tolist() == [127, -38, 0]
