"""What is stored about a person, for operators (``groupmind profile``): everything with the
chat each piece was learned in, or exactly what one chat may see under the sharing policy."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from domain.scope import ChatScope
from nodes.deps import Deps
from stores.base import LearnedProfile, profile_view


def _learned(lp: LearnedProfile) -> dict[str, Any]:
    return {"learned_in": lp.scope.key, **asdict(lp)}


def profile_json(
    deps: Deps, platform: str, user_id: str, shown_in: ChatScope | None = None
) -> dict[str, Any] | None:
    if shown_in is not None:
        view = profile_view(deps.profiles, user_id, shown_in, deps.profile_sharing)
        if view.relationship is None and not view.learned:
            return None
        return {
            "platform": platform,
            "user_id": user_id,
            "shown_in": shown_in.key,
            "sharing": deps.profile_sharing,
            "relationship": asdict(view.relationship) if view.relationship else None,
            "learned": [_learned(lp) for lp in view.learned],
            "key_facts": view.key_facts,
        }
    rel = deps.profiles.get_relationship(platform, user_id)
    learned = deps.profiles.learned_about(platform, user_id)
    unscoped = deps.profiles.unscoped(platform, user_id)
    if rel is None and not learned and unscoped is None:
        return None
    return {
        "platform": platform,
        "user_id": user_id,
        "relationship": asdict(rel) if rel else None,
        "learned": [_learned(lp) for lp in learned],
        "unscoped": unscoped,  # learned before provenance was kept: never shown to a model
    }
