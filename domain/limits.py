"""A deployment's defaults and limits as one typed object: what validation reads (no string
keys that fall back silently on a typo) and where every layer takes its defaults from."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import tzinfo
from zoneinfo import ZoneInfo

from domain.scope import DEFAULT_PERSONA, Sharing, check_key_part


@dataclass(frozen=True, kw_only=True)
class Limits:
    """What inputs are read and held to. Settings build one from the environment
    (``GROUPMIND_TIMEZONE``, ``DEFAULT_PLATFORM``, ``MAX_TEXT_CHARS``...)."""

    # for epoch timestamps and naive ISO times
    tz: tzinfo = field(default_factory=lambda: ZoneInfo("Asia/Shanghai"))
    default_platform: str = "qq"  # for jobs, searches and forgets that name none
    max_text_chars: int = 4000  # per message, per text field of a job
    default_persona: str = DEFAULT_PERSONA  # who serves a chat nothing else names
    bot_id: str = "bot"  # the deployment's own bot
    bot_name: str = "小助手"  # what a persona the personas file lacks is called
    bot_name_en: str = "the assistant"  # ... in a chat that speaks another script
    profile_sharing: Sharing = "chat"  # what one chat sees of what another learned
    max_gate_attempts: int = 2  # rewrites before the least bad is stored degraded

    def __post_init__(self) -> None:
        check_key_part(self.default_platform, "default_platform")
        if self.max_text_chars < 1:
            raise ValueError(f"max_text_chars: {self.max_text_chars} is not a limit")


DEFAULTS = Limits()  # the one default of each
