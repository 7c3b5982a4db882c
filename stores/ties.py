"""Ties between the members of a chat, kept as memory: who answered (by a reply or an @)
or spoke next after whom, named, agreed with or argued with whom, and the relations they
stated ("小红是我同事", "my wife Melanie").

A tie is part of the memory that shows it (``EventRecord.ties``): it has that memory's
scope and persona, its provenance is that memory, and it goes when the memory goes (a
forget, a prune). A question naming two members searches the memories of ties between
them (``HybridEventStore``); a person's circle is their ties counted (``Circle``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

TieKind = Literal["replied", "followed", "mentioned", "agreed", "argued", "stated"]
# ties a question about two people searches: not ``followed`` (spoke next, with no reply or
# @), which in a group is as often to a third person
BETWEEN_KINDS: tuple[TieKind, ...] = tuple(k for k in get_args(TieKind) if k != "followed")


@dataclass(frozen=True)
class Tie:
    """From the memory's speaker to another member: ``label`` is a stated relation, in the
    speaker's words (同事, wife), "" for the other kinds."""

    other_id: str
    other_name: str
    kind: TieKind
    label: str = ""


@dataclass(frozen=True)
class Circle:
    """One person's ties with another in one chat, counted per kind (``replied``: theirs to
    the other; ``replied_by``: the other's to them), with the relations stated either way
    and the memories that show them, newest first."""

    user_id: str
    user_name: str
    counts: dict[str, int] = field(default_factory=dict)
    labels: tuple[str, ...] = ()
    last_at: float = 0.0
    event_ids: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def as_json(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "user_name": self.user_name,
            "counts": dict(self.counts),
            "labels": list(self.labels),
            "last_at": self.last_at,
            "memory_ids": list(self.event_ids),
        }
