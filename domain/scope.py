"""Whose data, and where from: bots (tenants), chats (a platform, a chat type and a chat id;
a chat's stream key), personas, how far what was learned about a person may be shared,
and what an operator erases (docs/scopes.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

ChatType = Literal["group", "private"]
CHAT_TYPES: tuple[ChatType, ...] = ("group", "private")
DEFAULT_PERSONA = "default"  # who serves a chat when nothing says otherwise


# --- bots (tenants) -----------------------------------------------------------------------

# A bot's id names its data everywhere (SQL rows, its Chroma collection, its threads), so it
# is a plain name: letters, digits, '.', '_' and '-', starting and ending with a letter or
# a digit. "open" is what a server without keys calls every caller: no bot may be named so.
BOT_ID = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,62}[A-Za-z0-9])?")
RESERVED_BOT_IDS = frozenset({"open", "langgraph-studio-user", "anonymous"})


def check_bot_id(bot_id: str) -> str:
    """``bot_id`` unchanged, or a ValueError saying what a bot id may be."""
    if not BOT_ID.fullmatch(bot_id) or ".." in bot_id:
        raise ValueError(
            f"{bot_id!r} is not a bot id: 1-64 letters, digits, '.', '_' or '-', starting "
            "and ending with a letter or a digit"
        )
    if bot_id.lower() in RESERVED_BOT_IDS:
        raise ValueError(f"{bot_id!r} is reserved (a server without keys calls everyone so)")
    return bot_id


MIN_KEY_CHARS = 16


def check_api_key(key: str) -> str:
    """A bot's API key unchanged, or a ValueError: at least 16 characters that are not
    spaces (a short key, or one of spaces, is guessed), none at either end (HTTP drops
    them: such a key could never be presented)."""
    if sum(not c.isspace() for c in key) < MIN_KEY_CHARS:
        raise ValueError(f"a key needs at least {MIN_KEY_CHARS} characters that are not spaces")
    if key != key.strip():
        raise ValueError("a key must not begin or end with a space")
    return key


# --- scopes -------------------------------------------------------------------------------

KEY_SEPARATOR = ":"  # between the parts of a chat's key: never inside a platform or persona


def check_key_part(value: str, field: str) -> str:
    """A platform or persona id as it may stand in a key: with no separator in it, two
    different chats (or personas) can never share a key."""
    if not value:
        raise ValueError(f"{field}: required")
    if KEY_SEPARATOR in value:
        raise ValueError(
            f"{field}: {value!r} contains {KEY_SEPARATOR!r}, which separates the parts of a "
            "chat's key"
        )
    return value


@dataclass(frozen=True, kw_only=True)
class ChatScope:
    """A conversation scope: one chat on one platform (docs/scopes.md). The same chat
    id on two platforms is two scopes; a private chat's id is the user's id. Conversation
    content (events, messages, buffers) is further split by persona."""

    platform: str
    chat_type: ChatType
    chat_id: str

    def __post_init__(self) -> None:
        check_key_part(self.platform, "platform")
        if self.chat_type not in CHAT_TYPES:
            raise ValueError(f"chat_type: unknown chat type {self.chat_type!r}")
        if not self.chat_id:
            raise ValueError("chat_id: required")

    @property
    def key(self) -> str:
        """``qq:group:1001``: the chat stream. The one place a chat's key is built: the
        platform holds no separator and the chat type is one of two words, so the chat id
        (last) may hold anything and two chats never share a key."""
        return KEY_SEPARATOR.join((self.platform, self.chat_type, self.chat_id))

    @classmethod
    def from_key(cls, key: str) -> ChatScope:
        """``qq:group:1001`` read back (ValueError naming the part that is wrong)."""
        platform, _, rest = key.partition(KEY_SEPARATOR)
        chat_type, _, chat_id = rest.partition(KEY_SEPARATOR)
        return cls(platform=platform, chat_type=chat_type, chat_id=chat_id)  # type: ignore[arg-type]

    def persona_key(self, persona_id: str) -> str:
        """``qq:group:1001:xiaoai``: one persona's conversation in the chat (the persona id
        holds no separator, so it is read back from the right)."""
        return KEY_SEPARATOR.join((self.key, check_key_part(persona_id, "persona_id")))


Sharing = Literal["chat", "groups", "all"]
SHARING_POLICIES: tuple[Sharing, ...] = ("chat", "groups", "all")


def may_share(learned_in: ChatScope, shown_in: ChatScope, sharing: Sharing) -> bool:
    """Whether what was learned about a person in one chat may be shown in another (people
    are per platform, so never across platforms): ``chat`` only in the same chat (any of its
    personas), ``groups`` also from other groups, ``all`` from private chats too."""
    if learned_in.platform != shown_in.platform:
        return False
    if learned_in == shown_in or sharing == "all":
        return True
    return sharing == "groups" and learned_in.chat_type == "group"


@dataclass(frozen=True, kw_only=True)
class ForgetTarget:
    """What an operator erases (``groupmind forget``): a person everywhere on a platform, a
    person in one chat, or a whole chat."""

    platform: str
    user_id: str | None = None
    chat: ChatScope | None = None

    def __post_init__(self) -> None:
        if not self.platform:
            raise ValueError("platform: required")
        if self.user_id is None and self.chat is None:
            raise ValueError("forget needs a user id, a chat, or both")
        if self.chat is not None and self.chat.platform != self.platform:
            raise ValueError("chat: on another platform than the target")

    def covers(self, scope: ChatScope, user_id: str | None = None) -> bool:
        """Whether data of this chat (and, when given, this person) is to be erased."""
        if scope.platform != self.platform or (self.chat is not None and scope != self.chat):
            return False
        return self.user_id is None or user_id == self.user_id
