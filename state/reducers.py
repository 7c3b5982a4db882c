"""Reducers for accumulating state fields."""

from __future__ import annotations

from typing import TypeVar

V = TypeVar("V")


def merge_dicts(left: dict[str, V] | None, right: dict[str, V] | None) -> dict[str, V]:
    """Right wins key by key; used for the record of which variant filled each slot."""
    return {**(left or {}), **(right or {})}
