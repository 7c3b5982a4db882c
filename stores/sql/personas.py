"""Personas in SQL (seed 001 §1.1)."""

from __future__ import annotations

import time

from sqlalchemy import Engine, bindparam, select
from sqlalchemy.orm import Session

from domain.scope import DEFAULT_PERSONA, ChatScope
from stores.base import Persona
from stores.sql.engine import reads
from stores.sql.schema import PersonaRow


class SqlPersonaStore:
    """Personas put from Python before the personas file existed (read as a fallback by
    ``stores.personas_file``). The SQL table has no aliases nor per-chat choices."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.reads = reads(engine)  # single reads: no transaction (stores/sql/engine.py)

    def get_persona(self, persona_id: str) -> Persona | None:
        with self.reads.connect() as conn:
            row = conn.execute(_GET, {"k_persona": persona_id}).first()
        if row is None:
            return None
        return Persona(
            persona_id=row.persona_id,
            name=row.name,
            system_prompt=row.system_prompt,
            begin_dialogs=list(row.begin_dialogs or []),
        )

    def list_personas(self) -> list[Persona]:
        with Session(self.reads) as s:
            ids = [row.persona_id for row in s.query(PersonaRow).order_by(PersonaRow.persona_id)]
        return [p for p in map(self.get_persona, ids) if p is not None]

    def persona_for(self, scope: ChatScope, default: str | None = None) -> str:
        return default or DEFAULT_PERSONA

    def put_persona(self, persona: Persona) -> None:
        with Session(self.engine) as s, s.begin():
            s.merge(
                PersonaRow(
                    persona_id=persona.persona_id,
                    name=persona.name,
                    system_prompt=persona.system_prompt,
                    begin_dialogs=persona.begin_dialogs,
                    updated_at=time.time(),
                )
            )


# Asked on every message whose persona the file does not hold: built once.
_GET = select(PersonaRow).where(PersonaRow.persona_id == bindparam("k_persona"))
