"""Thread ids for a LangGraph server, which wants UUIDs: one per chat stream, stable, so
every message of a chat lands on its thread (in-process runs use the stream itself)."""

from __future__ import annotations

import uuid

NAMESPACE = uuid.UUID("6f1c6d1e-4b8e-5b6e-9d7a-67726f75706d")


def stream_thread_id(stream: str) -> str:
    """``qq:group:123456`` -> the same UUID every time."""
    return str(uuid.uuid5(NAMESPACE, stream))
