"""Row filters every tenant store shares: a bot's own rows (``mine``), and the rows a forget
covers for every table that keeps a scope as columns (``platform``, ``chat_type``,
``chat_id``, ``user_id``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from sqlalchemy import BindParameter, bindparam

from domain.scope import ChatScope, ForgetTarget, check_bot_id

T = TypeVar("T")


def tenant(bot: str) -> str:
    """A store's bot, checked once when the store is made."""
    return check_bot_id(bot)


# The bot in statements built once at import and bound per call (``{"k_bot": self.bot}``):
# building a statement cost more than running it (docs/benchmarks/constants.md).
BOT: BindParameter[str] = bindparam("k_bot")


def mine(table: Any, bot: str | BindParameter[str]) -> Any:
    """This bot's rows only: in every read, update and delete of a tenant store."""
    return table.bot_id == bot


def in_scope(table: Any, bot: str, scope: ChatScope, persona_id: str | None = None) -> list[Any]:
    """This bot's rows of one chat (and persona, when given)."""
    where = [
        mine(table, bot),
        table.platform == scope.platform,
        table.chat_type == scope.chat_type,
        table.chat_id == scope.chat_id,
    ]
    if persona_id is not None:
        where.append(table.persona_id == persona_id)
    return where


def covered(table: Any, target: ForgetTarget, bot: str, *, everyone: bool = False) -> list[Any]:
    """The target's rows; with ``everyone``, every person's in the target's chats (what a
    forgotten person's words may be found in)."""
    where = [mine(table, bot), table.platform == target.platform]
    if target.chat is not None:
        where += [table.chat_type == target.chat.chat_type, table.chat_id == target.chat.chat_id]
    if target.user_id is not None and not everyone:
        where.append(table.user_id == target.user_id)
    return where


def chunks(items: Sequence[T], size: int = 500) -> Iterator[Sequence[T]]:
    """``items`` in runs of ``size``: an IN list stays within the engines' parameter limits."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
