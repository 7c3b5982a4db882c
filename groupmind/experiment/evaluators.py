"""The built-in evaluators, in LangSmith's evaluator shape: ``(run, example) -> {"results":
[{"key", "score"}, ...]}``. Each scores only the examples it applies to (an unlabelled
message gets no decision score), so a metric's value is over the examples that have it.

A user evaluator is any function LangSmith's ``evaluate`` takes (``(run, example)`` or
``(outputs, reference_outputs)`` returning a score, a ``{"key", "score"}`` or
``{"results": [...]}``), named ``module:function`` or ``path/to/file.py:function``.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from langsmith.schemas import Example, Run

from state.validation import InputError

Evaluator = Callable[..., Any]
Better = Literal["higher", "lower"]
Aggregate = Literal["mean", "p50", "p95"]


@dataclass(frozen=True)
class Metric:
    """How a per-example score becomes an arm's figure, and which way is better."""

    key: str
    aggregate: Aggregate = "mean"
    better: Better = "higher"
    unit: str = ""  # "" for shares and rates in [0, 1]


def _results(*pairs: tuple[str, float | bool]) -> dict[str, Any]:
    return {"results": [{"key": k, "score": float(v)} for k, v in pairs]}


def _outputs(run: Run) -> dict[str, Any]:
    return run.outputs or {}


def _gold(value: Any) -> set[str]:
    if value is None:
        return set()
    return {str(v) for v in value} if isinstance(value, list) else {str(value)}


def _first(ranked: Sequence[str], gold: set[str]) -> int | None:
    return next((r for r, i in enumerate(ranked, 1) if i in gold), None)


def decision(run: Run, example: Example) -> dict[str, Any]:
    """Agreement with labels: ``action`` (the exact action) and ``replied`` (said anything)."""
    out, labels = _outputs(run), example.outputs or {}
    if out.get("kind") != "message" or "action" not in out or not out["action"]:
        return _results()
    pairs = []
    if labels.get("action"):
        pairs.append(("decision_agreement", out["action"] == labels["action"]))
    replied = labels.get("replied")
    if replied is None and labels.get("action"):
        replied = labels["action"] != "no_reply"
    if replied is not None:
        pairs.append(("reply_agreement", (out["action"] != "no_reply") == bool(replied)))
    return _results(*pairs)


def context(ks: Sequence[int]) -> Evaluator:
    def context(run: Run, example: Example) -> dict[str, Any]:
        """Where the labelled parent (``reply_to``) landed in the ranking, and whether the
        selected context holds it."""
        out, gold = _outputs(run), _gold((example.outputs or {}).get("reply_to"))
        # no ranking: the path did not rank (an ABSENT chat nobody addressed), or nothing
        # came before the message
        if out.get("kind") != "message" or not gold or not out.get("ranked"):
            return _results()
        ranked = [str(i) for i, _ in out["ranked"]]
        first = _first(ranked, gold)
        chosen = {str(i) for i in out.get("context_ids") or []}
        pairs: list[tuple[str, float | bool]] = [
            (f"context_R@{k}", first is not None and first <= k) for k in ks
        ]
        pairs += [("context_MRR", 1 / first if first else 0.0)]
        pairs += [("parent_in_context", bool(gold & chosen)), ("context_size", len(chosen))]
        return _results(*pairs)

    return context


def memory(ks: Sequence[int]) -> Evaluator:
    def memory(run: Run, example: Example) -> dict[str, Any]:
        """Memory recall@k: a labelled memory (``evidence_ids``), or one holding a labelled
        text (``evidence_texts``), among the first k found."""
        out, labels = _outputs(run), example.outputs or {}
        if out.get("kind") != "question":
            return _results()
        ids, texts = [str(i) for i in out.get("ids") or []], out.get("texts") or []
        gold_ids, gold_texts = (
            _gold(labels.get("evidence_ids")),
            _gold(labels.get("evidence_texts")),
        )
        if not gold_ids and not gold_texts:
            return _results()
        hits = [
            i in gold_ids or any(g in t for g in gold_texts)
            for i, t in zip(ids, texts, strict=False)
        ]
        first = next((r for r, hit in enumerate(hits, 1) if hit), None)
        pairs = [(f"memory_R@{k}", first is not None and first <= k) for k in ks]
        return _results(*pairs, ("memory_MRR", 1 / first if first else 0.0))

    return memory


def gate(run: Run, example: Example) -> dict[str, Any]:
    """A memory job: stored as it was rewritten (the gate passed), stored ``degraded``, or
    failed; and how many rewrites it took."""
    out = _outputs(run)
    if out.get("kind") != "job":
        return _results()
    status = out.get("status")
    return _results(
        ("gate_passed", status == "stored"),
        ("degraded", status == "degraded"),
        ("job_failed", status == "failed" or "error" in out),
        ("rewrites", float(out.get("attempts") or 0)),
    )


def profile(run: Run, example: Example) -> dict[str, Any]:
    """Profile-slot recall: labelled slots (``{"job": "医生"}``) the chat learned (a value
    that holds the label, or is held by it, counts)."""
    out, slots = _outputs(run), (example.outputs or {}).get("slots") or {}
    if out.get("kind") != "profile" or not slots:
        return _results()
    facts = out.get("facts") or {}
    found = sum(
        any(str(want) in got or got in str(want) for got in facts.get(kind, []))
        for kind, want in slots.items()
    )
    return _results(("profile_slot_recall", found / len(slots)))


def cost(run: Run, example: Example) -> dict[str, Any]:
    """Model tokens (prompt + completion) and, with prices set, cost, per example."""
    usage = _outputs(run).get("usage") or {}
    if _outputs(run).get("kind") not in ("message", "job") or "error" in _outputs(run):
        return _results()
    pairs = [("tokens", usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0))]
    if "cost" in usage:
        pairs.append(("cost", usage["cost"]))
    return _results(*pairs)


# One latency per kind of work: a reply's time and a search's say nothing of each other.
LATENCY_KEYS = {"message": "reply_ms", "job": "job_ms", "question": "search_ms",
                "profile": "profile_ms"}  # fmt: skip


def latency(run: Run, example: Example) -> dict[str, Any]:
    """Wall time of the example's own work, milliseconds: ``reply_ms`` (a message's run, or
    its ranking), ``job_ms``, ``search_ms``, ``profile_ms``."""
    out = _outputs(run)
    ms, key = out.get("latency_ms"), LATENCY_KEYS.get(str(out.get("kind")))
    return _results() if ms is None or key is None else _results((key, ms))


def fallbacks(run: Run, example: Example) -> dict[str, Any]:
    """A message the rules answered because the model failed; an example that errored."""
    out = _outputs(run)
    pairs = [("error", "error" in out or run.error is not None)]
    if out.get("kind") == "message" and "error" not in out:
        pairs.append(("fallback", bool(out.get("fallback"))))
    return _results(*pairs)


def builtin(ks: Sequence[int]) -> dict[str, Evaluator]:
    return {
        "decision": decision,
        "context": context(ks),
        "memory": memory(ks),
        "gate": gate,
        "profile": profile,
        "cost": cost,
        "latency": latency,
        "fallbacks": fallbacks,
    }


def metrics(ks: Sequence[int]) -> dict[str, Metric]:
    """The built-in metrics, in the order reports list them."""
    keys: list[Metric] = [Metric("decision_agreement"), Metric("reply_agreement")]
    keys += [Metric(f"context_R@{k}") for k in ks] + [Metric("context_MRR")]
    keys += [Metric("parent_in_context"), Metric("context_size", better="lower", unit="messages")]
    keys += [Metric(f"memory_R@{k}") for k in ks] + [Metric("memory_MRR")]
    keys += [Metric("gate_passed"), Metric("degraded", better="lower")]
    keys += [Metric("job_failed", better="lower"), Metric("rewrites", "mean", "lower", "rewrites")]
    keys += [Metric("profile_slot_recall"), Metric("tokens", "mean", "lower", "tokens")]
    keys += [Metric("cost", "mean", "lower", "cost"), Metric("fallback", better="lower")]
    keys += [Metric("error", better="lower")]
    for key in LATENCY_KEYS.values():
        keys += [Metric(key, "p50", "lower", "ms"), Metric(key, "p95", "lower", "ms")]
    return {f"{m.key}:{m.aggregate}" if m.unit == "ms" else m.key: m for m in keys}


def load_evaluator(name: str) -> Evaluator:
    """``module:function`` or ``path/to/file.py:function``."""
    where, sep, attr = name.rpartition(":")
    if not sep or not where or not attr:
        raise InputError("evaluator", f"{name!r}: expected a built-in name or module:function")
    try:
        if where.endswith(".py"):
            path = Path(where)
            spec = importlib.util.spec_from_file_location(path.stem, path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load {path}")
            module: Any = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
        fn = getattr(module, attr)
    except (ImportError, AttributeError, OSError, SyntaxError) as exc:
        raise InputError("evaluator", f"{name}: {exc}") from None
    if not callable(fn):
        raise InputError("evaluator", f"{name}: not a function")
    return fn  # type: ignore[no-any-return]


def evaluators(names: Sequence[str], ks: Sequence[int]) -> list[Evaluator]:
    """``builtin`` (all of the above), a built-in's name, or a user evaluator."""
    known = builtin(ks)
    chosen: list[Evaluator] = []
    for name in names:
        if name == "builtin":
            chosen += known.values()
        elif name in known:
            chosen.append(known[name])
        else:
            chosen.append(load_evaluator(name))
    return chosen
