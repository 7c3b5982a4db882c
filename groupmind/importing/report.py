"""What an import wrote, found already there, or refused (each refusal naming the field)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from state.validation import InputError


@dataclass
class Report:
    """Counts per kind of write (``events``, ``profiles``, ``messages``, ``jobs``)."""

    dry_run: bool = False
    added: dict[str, int] = field(default_factory=dict)
    already: dict[str, int] = field(default_factory=dict)
    errors: list[dict[str, str]] = field(default_factory=list)

    def add(self, kind: str, n: int = 1) -> None:
        if n:
            self.added[kind] = self.added.get(kind, 0) + n

    def found(self, kind: str, n: int = 1) -> None:
        if n:
            self.already[kind] = self.already.get(kind, 0) + n

    def refuse(self, record: str, exc: InputError) -> None:
        self.errors.append({"record": record, "field": exc.field, "error": exc.reason})

    def as_json(self) -> dict[str, Any]:
        would = "would_add" if self.dry_run else "added"
        return {"dry_run": self.dry_run, would: self.added, "already": self.already,
                "errors": self.errors}  # fmt: skip
