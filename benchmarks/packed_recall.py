"""Does int8 storage (stores/packed.py) keep the held search's rankings? On data nobody
here wrote: each LoCoMo conversation's turns as passages, its questions as queries, with
the bundled e5 embeddings. For each question, the top 10 by exact search over float32
vectors and over the packed ones: overlap@10, the same top 1, and evidence recall@10
(the turn the dataset names as the answer's evidence) on both.

    make bench-scale                               # all 10 conversations (--packed-recall)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import SHARED_DATA
from stores.packed import pack, unpack

LOCOMO = SHARED_DATA / "locomo" / "locomo10.json"
K = 10


def conversation(sample: dict[str, Any]) -> tuple[list[str], list[str], list[tuple[str, set[str]]]]:
    conv = sample["conversation"]
    ids, texts = [], []
    for key in sorted(k for k in conv if k.startswith("session_") and not k.endswith("time")):
        for turn in conv[key]:
            ids.append(turn["dia_id"])
            texts.append(f"{turn['speaker']}: {turn['text']}")
    questions = [(qa["question"], set(qa.get("evidence") or [])) for qa in sample["qa"]]
    return ids, texts, questions


def recall(embeddings: Any, conversations: int, path: Path = LOCOMO) -> dict[str, Any]:
    samples = json.loads(path.read_text(encoding="utf-8"))[:conversations]
    overlap, same_top, evidence = [], [], {"float32": [], "int8": []}
    passages = 0
    for sample in samples:
        ids, texts, questions = conversation(sample)
        full = np.asarray(embeddings.embed_documents(texts), dtype=np.float32)
        packed = np.stack([unpack(pack(v)) for v in full])
        queries = np.asarray([embeddings.embed_query(q) for q, _ in questions])
        passages += len(ids)
        for (_, gold), query in zip(questions, queries, strict=True):
            exact = np.argsort(-(full @ query))[:K]
            small = np.argsort(-(packed @ query))[:K]
            overlap.append(len(set(exact) & set(small)) / K)
            same_top.append(exact[0] == small[0])
            if gold:
                for name, top in (("float32", exact), ("int8", small)):
                    evidence[name].append(len(gold & {ids[i] for i in top}) / len(gold))
    return {
        "conversations": len(samples), "passages": passages, "questions": len(overlap),
        "overlap_at_10": float(np.mean(overlap)), "same_top1": float(np.mean(same_top)),
        "evidence_recall_at_10": {k: float(np.mean(v)) for k, v in evidence.items()},
        "bytes_per_vector": {"float32": 4 * full.shape[1], "int8": len(pack(full[0]))},
    }  # fmt: skip
