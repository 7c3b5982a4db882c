"""Clients the nodes use, bound once when a graph is built (never inside a node)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import tzinfo
from zoneinfo import ZoneInfo

from langchain_core.language_models import BaseChatModel

from stores.base import EventStore, PersonaStore, ProfileIndex, ProfileStore


@dataclass(frozen=True, kw_only=True)
class Deps:
    events: EventStore
    profiles: ProfileStore
    personas: PersonaStore
    profile_index: ProfileIndex | None = None
    chat: BaseChatModel | None = None  # None = offline: rule variants only
    tz: tzinfo = ZoneInfo("Asia/Shanghai")  # for epoch timestamps and naive ISO times
    max_text_chars: int = 4000

    def persona_name(self, persona_id: str) -> str:
        persona = self.personas.get_persona(persona_id)
        return persona.name if persona else persona_id
