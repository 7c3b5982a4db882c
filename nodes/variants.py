"""Node slots and their variants (A/B): slot name -> {variant name -> function}.

A graph's shape and node names are fixed; which function fills a slot is chosen per run
from ``Context.variants``. A slot not named there takes ``llm`` when a chat model is
configured and the slot has one, else its rule-based (or only) variant. The choice is
written to the state's ``variants`` so traces and thread history show which arm ran.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from langgraph.runtime import Runtime

from nodes.deps import Deps
from state.context import Context, as_context

VariantFn = Callable[[Any, Context, Deps], dict[str, Any]]
NodeFn = Callable[[Any, Runtime[Context]], dict[str, Any]]


class UnknownVariant(ValueError):
    pass


def default_variant(variants: Mapping[str, VariantFn], deps: Deps) -> str:
    if "llm" in variants and deps.chat is not None:
        return "llm"
    if "rules" in variants:
        return "rules"
    return next(iter(variants))


def choose(
    slot: str, registry: Mapping[str, Mapping[str, VariantFn]], ctx: Context, deps: Deps
) -> str:
    variants = registry[slot]
    name = ctx.variants.get(slot) or default_variant(variants, deps)
    if name not in variants:
        raise UnknownVariant(
            f"variants.{slot}: unknown variant {name!r} (choose from {sorted(variants)})"
        )
    if name == "llm" and deps.chat is None:
        raise UnknownVariant(
            f"variants.{slot}: 'llm' needs a chat model (set GROUPMIND_CHAT_MODEL), "
            "none is configured"
        )
    return name


def resolve_all(
    registry: Mapping[str, Mapping[str, VariantFn]], ctx: Context, deps: Deps
) -> dict[str, str]:
    """Every slot's variant for this run: what the runner writes into run metadata."""
    return {slot: choose(slot, registry, ctx, deps) for slot in registry}


def slot(
    name: str,
    registry: Mapping[str, Mapping[str, VariantFn]],
    deps: Deps,
    pinned: Callable[[Any], Mapping[str, str]] | None = None,
    platforms: Callable[[Any, str], Iterable[str]] | None = None,
) -> NodeFn:
    """The node function for a slot: picks the variant per run and records the choice.
    ``pinned`` reads variants the work itself carries (a memory job's): they win over the
    run's context, so a job runs the arms it was queued with wherever it runs.
    ``platforms`` reads the platforms the state acts on: a slot refuses (``NotAllowed``),
    before it does anything, a state on a platform its bot may not use, however the state
    got there (input, a command, a state update, a resume). A slot whose variants are
    coroutine functions is an async node."""

    def pick(state: Any, runtime: Runtime[Context]) -> tuple[Context, str]:
        if platforms is not None:
            deps.allow(platforms(state, deps.default_platform))
        ctx = as_context(runtime.context)
        if pinned is not None and (own := pinned(state)):
            ctx = replace(ctx, variants={**ctx.variants, **own})
        return ctx, choose(name, registry, ctx, deps)

    if all(inspect.iscoroutinefunction(fn) for fn in registry[name].values()):

        async def anode(state: Any, runtime: Runtime[Context]) -> dict[str, Any]:
            ctx, variant = pick(state, runtime)
            out = await registry[name][variant](state, ctx, deps)  # type: ignore[misc]
            return {**out, "variants": {name: variant}}

        anode.__name__ = f"{name}_slot"
        return anode  # type: ignore[return-value]

    def node(state: Any, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx, variant = pick(state, runtime)
        out = registry[name][variant](state, ctx, deps)
        return {**out, "variants": {name: variant}}

    node.__name__ = f"{name}_slot"
    return node
