"""The stored view of one user, as JSON for ``groupmind profile --json``."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from nodes.deps import Deps


def profile_json(deps: Deps, user_id: str) -> dict[str, Any] | None:
    rel = deps.profiles.get_relationship(user_id)
    prof = deps.profiles.get_profile("user", user_id)
    if rel is None and prof is None:
        return None
    return {
        "user_id": user_id,
        "relationship": asdict(rel) if rel else None,
        "profile": asdict(prof) if prof else None,
    }
