"""Vectors as int8 with one float32 scale each (4 + d bytes; 388 for e5-small's 384):
unit-length e5 vectors keep their rankings (docs/benchmarks/scale.md: recall@10 measured)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

HEADER = np.dtype("<f4").itemsize


def pack(vector: Sequence[float] | np.ndarray) -> bytes:
    v = np.asarray(vector, dtype=np.float32)
    scale = float(np.abs(v).max()) or 1.0
    # in float64: 127 / scale overflows float32 when the vector is subnormal
    q = np.clip(np.rint(v.astype(np.float64) * (127 / scale)), -127, 127).astype(np.int8)
    return bytes(np.float32(scale / 127).tobytes() + q.tobytes())


def unpack(blob: bytes) -> np.ndarray:
    step = np.frombuffer(blob, dtype="<f4", count=1)[0]
    v: np.ndarray = np.frombuffer(blob, dtype=np.int8, offset=HEADER).astype(np.float32) * step
    return v


def unpack_many(blobs: Sequence[bytes]) -> np.ndarray | list[np.ndarray]:
    """Packed vectors in one pass, as a float32 matrix (a row each): unpacking 20k one at a
    time costs more than reading them from SQL. Blobs of mixed lengths (vectors of two
    models) come back one by one, as a list."""
    width = len(blobs[0]) if blobs else 0
    if any(len(b) != width for b in blobs):
        return [unpack(b) for b in blobs]
    raw = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), width)
    steps = raw[:, :HEADER].copy().view("<f4")  # (n, 1): each row's scale
    matrix: np.ndarray = raw[:, HEADER:].view(np.int8).astype(np.float32) * steps
    return matrix
