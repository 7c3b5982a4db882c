"""What an operator asks to forget (``groupmind forget``, the ``forget`` graph), validated."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator, model_validator
from typing_extensions import TypedDict

from domain.scope import ChatScope, ForgetTarget
from state.validation import ChatTypeField, as_id, as_key_part, context_limits


class ForgetRequest(BaseModel):
    """A person (``user_id``) everywhere on a platform or in one chat, or a whole chat."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    platform: str = ""
    user_id: str | None = None
    chat_type: ChatTypeField | None = None
    chat_id: str | None = None

    @field_validator("platform", mode="before")
    @classmethod
    def _platform(cls, value: Any, info: ValidationInfo) -> str:
        if value is None or value == "":
            return context_limits(info).default_platform
        return as_key_part(value, "platform")

    @field_validator("user_id", "chat_id", mode="before")
    @classmethod
    def _ids(cls, value: Any) -> str | None:
        return None if value is None or value == "" else as_id(value, "id")

    @model_validator(mode="after")
    def _something(self) -> ForgetRequest:
        if (self.chat_type is None) != (self.chat_id is None):
            raise ValueError("a chat is named by both chat_type and chat_id")
        if self.user_id is None and self.chat_id is None:
            raise ValueError("name a user_id, a chat (chat_type and chat_id), or both")
        return self

    def target(self) -> ForgetTarget:
        chat = None
        if self.chat_type is not None and self.chat_id is not None:
            chat = ChatScope(platform=self.platform, chat_type=self.chat_type, chat_id=self.chat_id)
        return ForgetTarget(platform=self.platform, user_id=self.user_id, chat=chat)


class ForgetInput(TypedDict, total=False):
    platform: str
    user_id: str
    chat_type: str
    chat_id: str


class ForgetOutput(TypedDict, total=False):
    removed: dict[str, int]
    streams: list[str]
    still_running: list[str]
    copies: dict[str, Any]  # exports and experiments reached, and copies elsewhere to delete
    compacted: dict[str, str]


class EraseWrites(ForgetOutput, total=False):
    """What the erase slot writes (state.slots): the output and the jobs it took."""

    job_ids: list[str]


class ForgetState(ForgetInput, EraseWrites, total=False):
    variants: dict[str, str]


def forget_platforms(state: ForgetState, default: str) -> set[str]:
    """The platform a forget acts on (the deployment's default when it names none)."""
    platform: Any = state.get("platform")
    return {platform if isinstance(platform, str) and platform else default}
