"""What is stored about a person, for operators (``groupmind profile``): everything with the
chat each piece was learned in, or exactly what one chat may see under the sharing policy."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from domain.scope import ChatScope
from nodes.deps import Deps
from stores.base import EventQuery, LearnedProfile, profile_view
from stores.ties import Circle


def _learned(lp: LearnedProfile) -> dict[str, Any]:
    return {"learned_in": lp.scope.key, **asdict(lp)}


def circle(deps: Deps, user_id: str, chat: ChatScope) -> list[Circle]:
    """Their ties with the others of the chat, every persona's (an operator's view)."""
    return deps.events.circle(EventQuery.within(chat), user_id)


def profile_json(
    deps: Deps, platform: str, user_id: str, shown_in: ChatScope | None = None
) -> dict[str, Any] | None:
    if shown_in is not None:
        view = profile_view(deps.profiles, user_id, shown_in, deps.limits.profile_sharing)
        if view.relationship is None and not view.learned:
            return None
        return {
            "platform": platform,
            "user_id": user_id,
            "shown_in": shown_in.key,
            "sharing": deps.limits.profile_sharing,
            "relationship": asdict(view.relationship) if view.relationship else None,
            "learned": [_learned(lp) for lp in view.learned],
            "key_facts": view.key_facts,
            "circle": [c.as_json() for c in circle(deps, user_id, shown_in)],
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
