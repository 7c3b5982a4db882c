"""The rows a forget covers, for every table that keeps a scope as columns
(``platform``, ``chat_type``, ``chat_id``, ``user_id``)."""

from __future__ import annotations

from typing import Any

from stores.base import ForgetTarget


def covered(table: Any, target: ForgetTarget) -> list[Any]:
    where = [table.platform == target.platform]
    if target.chat is not None:
        where += [table.chat_type == target.chat.chat_type, table.chat_id == target.chat.chat_id]
    if target.user_id is not None:
        where.append(table.user_id == target.user_id)
    return where
