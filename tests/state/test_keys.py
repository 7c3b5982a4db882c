"""Keys that cannot collide: whatever separators a platform, chat id, persona or message id
holds, two different chats (or a persona's conversation in them, or two memory jobs) never
share a key; what cannot stand in a key is refused with an error naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.limits import Limits
from domain.scope import ChatScope
from nodes.reply.hand_off import _request_id, context_id
from state.reply import ChatMessage
from state.validation import InputError, validated

PIECES = st.sampled_from([":", "|", "/", "a", "b", "1", "group", "qq", "\\", " "])
PART = st.lists(PIECES, min_size=1, max_size=5).map("".join).filter(str.strip)
CONTEXT = {"limits": Limits(max_text_chars=4000)}


def message(platform: str, chat_id: str, persona: str, message_id: str) -> dict[str, Any]:
    return {"message_id": message_id, "platform": platform, "chat_type": "group",
            "chat_id": chat_id, "user_id": "u1", "user_name": "小明", "content": "hi",
            "timestamp": 1_795_000_000, "persona_id": persona}  # fmt: skip


def keys(msg: ChatMessage) -> tuple[str, str, str, str]:
    return (msg.stream, msg.scope.persona_key(msg.persona_id), context_id(msg),
            _request_id(msg.stream, msg.persona_id, msg.message_id, msg.user_id))  # fmt: skip


@given(a=st.tuples(PART, PART, PART, PART), b=st.tuples(PART, PART, PART, PART))
def test_two_different_chats_never_share_a_key(
    a: tuple[str, str, str, str], b: tuple[str, str, str, str]
) -> None:
    built = []
    for parts in (a, b):
        try:
            built.append(validated(ChatMessage, message(*parts), "message", CONTEXT))
        except InputError as exc:  # refused: the field that holds the separator is named
            assert ":" in parts[0] or ":" in parts[2]
            assert ("platform" if ":" in parts[0] else "persona_id") in str(exc)
            return
    first, second = built
    for x, y, same in zip(keys(first), keys(second), (
        first.scope == second.scope,
        (first.scope, first.persona_id) == (second.scope, second.persona_id),
        (first.scope, first.persona_id, first.message_id)
        == (second.scope, second.persona_id, second.message_id),
        (first.scope, first.persona_id, first.message_id)
        == (second.scope, second.persona_id, second.message_id),
    ), strict=True):  # fmt: skip
        assert (x == y) == same, (a, b, x, y)


def test_the_old_collision_is_refused() -> None:
    """``qq:group`` + ``1001`` and ``qq`` + ``group:1001`` once shared a thread."""
    with pytest.raises(InputError, match="platform"):
        validated(ChatMessage, message("qq:group", "1001", "default", "m1"), "message", CONTEXT)
    with pytest.raises(ValueError, match="platform"):
        ChatScope(platform="qq:group", chat_type="group", chat_id="1001")
    fine = validated(ChatMessage, message("qq", "group:1001", "default", "m1"), "message", CONTEXT)
    assert fine.stream == "qq:group:group:1001"
