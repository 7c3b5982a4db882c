"""Reducers for accumulating state fields."""

from __future__ import annotations

from typing import Any, TypeVar

V = TypeVar("V")


def merge_dicts(left: dict[str, V] | None, right: dict[str, V] | None) -> dict[str, V]:
    """Right wins key by key; used for the record of which variant filled each slot."""
    return {**(left or {}), **(right or {})}


def inbox(left: list[Any] | None, right: Any) -> list[Any]:
    """Input messages wait here until observe takes them (it clears the list with
    ``Overwrite``): a run cut short by a newer message (double-texting) leaves its message
    for the next run instead of losing it. A value from before the inbox (a dict) was
    already observed, and is dropped."""
    waiting = left if isinstance(left, list) else []
    return [*waiting, *right] if isinstance(right, list) else [*waiting, right]


def add_usage(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Token usage: numbers summed, per node (``nodes``) and for the whole run."""
    out: dict[str, Any] = {k: v for k, v in (left or {}).items() if k != "nodes"}
    nodes = {k: dict(v) for k, v in (left or {}).get("nodes", {}).items()}
    for key, value in (right or {}).items():
        if key == "nodes":
            for node, counts in value.items():
                merged = nodes.setdefault(node, {})
                for k, v in counts.items():
                    merged[k] = merged.get(k, 0) + v
        else:
            out[key] = out.get(key, 0) + value
    return {**out, "nodes": nodes} if nodes else out
