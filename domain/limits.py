"""A deployment's defaults and limits as one typed object: what validation reads (no string
keys that fall back silently on a typo) and where every layer takes its defaults from."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import tzinfo
from zoneinfo import ZoneInfo

from domain.scope import Sharing, check_key_part

MIN_TEXT_CHARS = 100  # a message or a job's text may be held to no less
MAX_GATE_ATTEMPTS = 10  # no deployment rewrites a memory more often than this


@dataclass(frozen=True, kw_only=True)
class Limits:
    """What inputs are read and held to, for one bot. Settings build the deployment's from
    the environment (``GROUPMIND_TIMEZONE``, ``DEFAULT_PLATFORM``, ``MAX_TEXT_CHARS``...);
    each bot's is that one with its id, platforms and persona (``Settings.limits_of``).
    Every limit's validity rule is here, once."""

    # for epoch timestamps and naive ISO times
    tz: tzinfo = field(default_factory=lambda: ZoneInfo("Asia/Shanghai"))
    default_platform: str = "qq"  # for jobs, searches and forgets that name none
    max_text_chars: int = 4000  # per message, per text field of a job
    bot_id: str = "bot"  # the bot (tenant) these limits are for
    bot_name: str = "小助手"  # what a persona the personas file lacks is called
    bot_name_en: str = "the assistant"  # ... in a chat that speaks another script
    # the persona that serves a chat the personas file names none for (None: the file's
    # default)
    default_persona: str | None = None
    platforms: frozenset[str] | None = None  # the platforms the bot may act on (None: any)
    profile_sharing: Sharing = "chat"  # what one chat sees of what another learned
    max_gate_attempts: int = 2  # rewrites before the least bad is stored degraded

    def __post_init__(self) -> None:
        check_key_part(self.default_platform, "default_platform")
        if self.max_text_chars < MIN_TEXT_CHARS:
            raise ValueError(
                f"max_text_chars: {self.max_text_chars} is below {MIN_TEXT_CHARS}, the least "
                "a message may be held to"
            )
        if not 1 <= self.max_gate_attempts <= MAX_GATE_ATTEMPTS:
            raise ValueError(
                f"max_gate_attempts: {self.max_gate_attempts} is not within 1..{MAX_GATE_ATTEMPTS}"
            )


DEFAULTS = Limits()  # the one default of each
