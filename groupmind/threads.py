"""Reply-thread ids: one per chat stream and bot (tenant), always the same, so every message
of a chat lands on its thread and two bots on one server or one checkpointer never share
a thread. LangGraph servers want UUIDs, so in-process runs use the same ids."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from domain.scope import ChatScope

NAMESPACE = uuid.UUID("6f1c6d1e-4b8e-5b6e-9d7a-67726f75706d")


def stream_thread_id(stream: str, bot: str) -> str:
    """``("qq:group:123456", "bot-a")`` -> the same UUID every time."""
    return str(uuid.uuid5(NAMESPACE, f"{bot}\x1f{stream}"))


def thread_config(stream: str, bot: str) -> Any:
    return {"configurable": {"thread_id": stream_thread_id(stream, bot)}}


def stream_of(message: Mapping[str, Any]) -> str:
    """The stream of an input message (a dict, as a bot sends it), through the one key
    builder (``ChatScope.key``); a ValueError names a field that cannot stand in a key."""
    chat_type = message.get("chat_type")
    if chat_type not in ("group", "private"):
        raise ValueError(f"chat_type: unknown chat type {chat_type!r}")
    chat_id = message.get("chat_id") or (message.get("user_id") if chat_type == "private" else "")
    return ChatScope(
        platform=str(message.get("platform") or ""), chat_type=chat_type, chat_id=str(chat_id)
    ).key
