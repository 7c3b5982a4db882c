"""Reply-thread ids: one per chat stream and bot (tenant), always the same, so every message
of a chat lands on its thread and two bots on one server or one checkpointer never share
a thread. LangGraph servers want UUIDs, so in-process runs use the same ids."""

from __future__ import annotations

import uuid
from typing import Any

NAMESPACE = uuid.UUID("6f1c6d1e-4b8e-5b6e-9d7a-67726f75706d")


def stream_thread_id(stream: str, bot: str) -> str:
    """``("qq:group:123456", "bot-a")`` -> the same UUID every time."""
    return str(uuid.uuid5(NAMESPACE, f"{bot}\x1f{stream}"))


def thread_config(stream: str, bot: str) -> Any:
    return {"configurable": {"thread_id": stream_thread_id(stream, bot)}}
