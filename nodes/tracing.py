"""What a run's trace says about it, whoever started the run (the CLI, the bridge,
``langgraph dev``, the production server): each slot, as it ends, adds to the metadata of
the trace's root run the bot, its variant and what it decided, so LangSmith filters and
groups runs by arm and by decision (docs/experiments.md).

The root run's metadata is sent when the run ends, so what a node adds before then is
part of it. Only the tracers of the run's own callbacks are touched; with tracing off
there are none and this costs a dictionary lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.tracers.base import BaseTracer
from langgraph.config import get_config
from langgraph.types import Overwrite

Summary = Callable[[Mapping[str, Any]], dict[str, Any]]


def _job(out: Mapping[str, Any]) -> dict[str, Any]:
    job = out.get("job")
    if job is None:
        return {}
    return {"request_id": job.request_id, "stream": job.scope.key, "persona_id": job.persona_id}


def _gate(out: Mapping[str, Any]) -> dict[str, Any]:
    if "reasons" not in out:
        return {}
    return {"gate": "passed" if not out["reasons"] else "held", "gate_reasons": out["reasons"]}


# What each slot decided, as metadata keys (a slot not named adds only its variant).
SUMMARIES: dict[str, Summary] = {
    "observe": lambda out: {k: out[k] for k in ("stream", "message_id", "persona_id") if k in out},
    "plan": lambda out: {k: out[k] for k in ("action", "reason", "chat_state") if k in out},
    "intake": _job,
    "quality_gate": _gate,
    "embed": lambda out: {"status": out["status"]} if "status" in out else {},
    "merge_profile": lambda out: {"profile": out["profile"]} if "profile" in out else {},
}


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Overwrite) else value


def root_runs() -> list[Any]:
    """The root run of this run's trace in each of its tracers ([] when nothing traces)."""
    try:
        manager = get_config().get("callbacks")
    except RuntimeError:  # outside a graph run
        return []
    parent = getattr(manager, "parent_run_id", None)
    roots = []
    for handler in getattr(manager, "handlers", None) or []:
        if not isinstance(handler, BaseTracer) or parent is None:
            continue
        runs = handler.run_map
        run = runs.get(str(parent))
        while run is not None and run.parent_run_id is not None:
            if str(run.parent_run_id) not in runs:
                break  # its parent is not this graph's (an experiment's target, a caller's)
            run = runs[str(run.parent_run_id)]
        if run is not None:
            roots.append(run)
    return roots


def annotate(slot: str, variant: str, bot_id: str, out: Mapping[str, Any]) -> None:
    """Add a slot's variant and decision (and the run's tokens) to the trace's root."""
    roots = root_runs()
    if not roots:
        return
    plain = {k: _plain(v) for k, v in out.items()}
    summary = SUMMARIES[slot](plain) if slot in SUMMARIES else {}
    usage = plain.get("usage") or {}
    for run in roots:
        metadata = run.extra.setdefault("metadata", {})
        metadata["bot_id"] = bot_id
        metadata["variants"] = {**(metadata.get("variants") or {}), slot: variant}
        metadata.update(summary)
        if plain.get("fallback"):
            metadata["fallback"] = [*metadata.get("fallback", []), *plain["fallback"]]
        for key in ("prompt_tokens", "completion_tokens", "cost"):
            if key in usage:
                metadata[key] = metadata.get(key, 0) + usage[key]
