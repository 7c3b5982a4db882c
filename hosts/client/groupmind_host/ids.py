"""A chat's key and its thread on groupmind's server, computed as groupmind computes them
(docs/contracts.md, "Hosts"): the thread of a chat stream is the same UUID every time, and
its bot's alone."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

NAMESPACE = uuid.UUID("6f1c6d1e-4b8e-5b6e-9d7a-67726f75706d")


def stream_key(message: Mapping[str, Any]) -> str:
    """``qq:group:1001`` (a private chat's id is its user's)."""
    chat_type = message["chat_type"]
    chat_id = message.get("chat_id") or (message["user_id"] if chat_type == "private" else "")
    return f"{message['platform']}:{chat_type}:{chat_id}"


def thread_id(stream: str, bot: str) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{bot}\x1f{stream}"))
