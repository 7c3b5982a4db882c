"""Node slots and their variants (A/B): the registry, and the node function of a slot.

A graph's shape and node names are fixed; which function fills a slot is chosen per run
from ``Context.variants``. A slot not named there takes ``llm`` when a chat model is
configured and the slot has one, else its baseline (``state.slots.SLOTS``). The choice is
written to the state's ``variants`` so traces and thread history show which arm ran.

Variants come from the package (each slot's file has its ``VARIANTS``) and from plugins: a
package declares an entry point in the group ``groupmind.variants`` whose object maps slot
-> {name -> function}. A plugin's variant is checked when it is registered (a slot that
exists, a new name, ``(state, ctx, deps)`` parameters, the slot's ``<Slot>Writes`` as its
return type) and what it returns is checked on every run; one that fails is refused, and
naming it fails with the reason (docs/variants.md).
"""

from __future__ import annotations

import importlib
import inspect
import logging
import re
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib.metadata import entry_points
from typing import Any, Protocol

from langgraph.runtime import Runtime
from langgraph.types import Overwrite
from pydantic import TypeAdapter, ValidationError

from nodes.deps import Deps
from nodes.tracing import annotate
from state.context import Context, as_context
from state.slots import SLOTS, Graph, Slot, graph_slots

log = logging.getLogger("groupmind")
ENTRY_POINTS = "groupmind.variants"
BUILTIN = "groupmind"
VARIANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")

# (state, ctx, deps) -> its slot's Writes (or awaits them); deps is its graph's: the reply
# graph's variants get ReplyDeps, the others Deps (the parameters are checked at registration)
VariantFn = Callable[..., Any]


class NodeFn(Protocol):
    """A slot's node as LangGraph calls it (the run's runtime by keyword): what
    ``StateGraph.add_node`` takes for a node of any state."""

    def __call__(self, state: Any, *, runtime: Runtime[Context]) -> Any: ...


class UnknownVariant(ValueError):
    """A variant that does not exist, cannot run here, or was refused."""


class VariantRefused(ValueError):
    """A plugin's variant that does not keep its slot's contract."""


class VariantOutputError(RuntimeError):
    """A plugin's variant returned what its slot's contract does not allow."""


def contract_problems(slot: Slot, fn: object) -> list[str]:
    """Why ``fn`` cannot be a variant of ``slot`` ([] when it can)."""
    if not callable(fn):
        return [f"{fn!r} is not a function"]
    try:
        inspect.signature(fn).bind(None, None, None)
    except TypeError:
        return ["must take (state, ctx, deps)"]
    except ValueError:
        pass  # a builtin without a signature: the run-time check still applies
    try:
        hints = typing.get_type_hints(fn)
    except Exception as exc:  # noqa: BLE001 - any failure to read the annotations is the reason
        return [f"its annotations cannot be read ({type(exc).__name__}: {exc})"]
    problems = []
    want = slot.writes.__name__
    returns = hints.get("return")
    if returns is None:
        problems.append(f"declare its return type: -> {want} (state.slots)")
    elif returns is not slot.writes:
        problems.append(f"returns {getattr(returns, '__name__', returns)}, not {want}")
    first = next(iter(inspect.signature(fn).parameters), None)
    state = hints.get(first) if first else None
    if state is not None and state is not slot.state and state is not Any:
        problems.append(f"reads {getattr(state, '__name__', state)}, not {slot.state.__name__}")
    if inspect.iscoroutinefunction(fn) and not slot.asynchronous:
        problems.append(f"is async, but the {slot.graph} graph runs {slot.name} synchronously")
    return problems


_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


def _adapter(slot: Slot) -> TypeAdapter[Any]:
    if slot.name not in _ADAPTERS:
        _ADAPTERS[slot.name] = TypeAdapter(slot.writes)
    return _ADAPTERS[slot.name]


def output_problems(slot: Slot, out: object) -> list[str]:
    """What in a variant's result its slot's contract does not allow ([] when nothing)."""
    if not isinstance(out, dict):
        return [f"returned {type(out).__name__}, not a dict of {slot.writes.__name__}"]
    allowed = typing.get_type_hints(slot.writes)
    extra = sorted(set(out) - set(allowed))
    if extra:
        return [f"wrote {', '.join(map(repr, extra))}, not keys of {slot.writes.__name__}"]
    plain = {k: v.value if isinstance(v, Overwrite) else v for k, v in out.items()}
    try:
        _adapter(slot).validate_python(plain)
    except ValidationError as exc:
        return [
            f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors(include_url=False)
        ]
    return []


@dataclass
class Registry:
    """Every slot's variants, built-in and plugged in, with where each came from and the
    plugins' variants that were refused (and why)."""

    variants: dict[str, dict[str, VariantFn]] = field(default_factory=dict)
    sources: dict[tuple[str, str], str] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)  # "slot=name" or a plugin -> why

    def add(self, slot: str, name: str, fn: VariantFn, source: str) -> None:
        """Register a variant, or raise VariantRefused saying why."""
        contract = SLOTS.get(slot)
        if contract is None:
            raise VariantRefused(f"{slot!r} is no slot (slots: {', '.join(SLOTS)})")
        if not isinstance(name, str) or not VARIANT_NAME.fullmatch(name):
            raise VariantRefused(f"variants.{slot}: {name!r} is not a variant name")
        if name in self.variants.get(slot, {}):
            raise VariantRefused(
                f"variants.{slot}: {name!r} is taken (by {self.sources[slot, name]})"
            )
        if problems := contract_problems(contract, fn):  # built-in or a plugin's alike
            raise VariantRefused(f"variants.{slot}: {name!r} " + "; ".join(problems))
        self.variants.setdefault(slot, {})[name] = fn
        self.sources[slot, name] = source

    def plugin(self, source: str, offered: object) -> None:
        """A plugin's ``{slot: {name: fn}}``: each variant registered, or refused with its
        reason (the others still count)."""
        if not isinstance(offered, Mapping):
            self.refused[source] = "its entry point is not a mapping of slot -> {name: function}"
            return
        for slot, named in offered.items():
            if not isinstance(named, Mapping):
                self.refused[f"{slot}"] = f"{source}: not a mapping of name -> function"
                continue
            for name, fn in named.items():
                try:
                    self.add(str(slot), name, fn, source)
                except VariantRefused as exc:
                    self.refused[f"{slot}={name}"] = f"{source}: {exc}"
                    log.warning("variant refused: %s: %s", source, exc)

    def graph(self, graph: Graph) -> dict[str, dict[str, VariantFn]]:
        """slot -> variants, for the graph's slots in order."""
        return {slot: self.variants[slot] for slot in graph_slots(graph)}

    def checked(self, slot: str, variant: str, out: Any) -> dict[str, Any]:
        """A variant's result, or VariantOutputError naming what a plugin's breaks of its
        slot's contract (a built-in's is checked when registered and by mypy strict: its
        results are not checked again on every run)."""
        source = self.sources[slot, variant]
        if source != BUILTIN and (problems := output_problems(SLOTS[slot], out)):
            raise VariantOutputError(
                f"variants.{slot}: {variant!r} ({source}) " + "; ".join(problems)
            )
        return dict(out)

    def check(self, asked: Mapping[str, str], *, has_model: bool) -> None:
        """Raise UnknownVariant naming the first slot whose variant does not exist, was
        refused, or needs a model where none is configured."""
        for slot, name in asked.items():
            if slot not in SLOTS:
                raise UnknownVariant(f"variants.{slot}: no such slot (slots: {', '.join(SLOTS)})")
            if name not in self.variants[slot]:
                why = self.refused.get(f"{slot}={name}")
                if why:
                    raise UnknownVariant(f"variants.{slot}: {name!r} was refused: {why}")
                raise UnknownVariant(
                    f"variants.{slot}: unknown variant {name!r} (choose from "
                    f"{sorted(self.variants[slot])})"
                )
            if name == "llm" and not has_model:
                raise UnknownVariant(
                    f"variants.{slot}: 'llm' needs a chat model (set GROUPMIND_CHAT_MODEL), "
                    "none is configured"
                )


def builtin_registry() -> Registry:
    reg = Registry()
    for module in ("nodes.reply", "nodes.memory", "nodes.forget"):
        variants: Mapping[str, Mapping[str, VariantFn]] = importlib.import_module(module).VARIANTS
        for slot, named in variants.items():
            for name, fn in named.items():
                reg.add(slot, name, fn, BUILTIN)
    return reg


@lru_cache(maxsize=1)
def registry() -> Registry:
    """The package's variants and every installed plugin's (read once per process)."""
    reg = builtin_registry()
    for ep in entry_points(group=ENTRY_POINTS):
        source = f"{ep.name} = {ep.value}"
        try:
            offered = ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin is refused, not fatal
            reg.refused[source] = f"{type(exc).__name__}: {exc}"
            log.warning("variant plugin %s could not be loaded: %s", source, exc)
            continue
        reg.plugin(source, offered)
    return reg


def default_variant(variants: Mapping[str, VariantFn], deps: Deps, slot: str) -> str:
    if "llm" in variants and deps.model.chat is not None:
        return "llm"
    return SLOTS[slot].baseline


def choose(
    slot: str, registry: Mapping[str, Mapping[str, VariantFn]], ctx: Context, deps: Deps
) -> str:
    variants = registry[slot]
    name = ctx.variants.get(slot) or default_variant(variants, deps, slot)
    if name not in variants:
        raise UnknownVariant(
            f"variants.{slot}: unknown variant {name!r} (choose from {sorted(variants)})"
        )
    if name == "llm" and deps.model.chat is None:
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


def memory_arms(
    base: Mapping[str, str], own: Mapping[str, str] | None, deps: Deps
) -> dict[str, str]:
    """Every memory slot's variant for a job: what the job carries itself (``own``) wins
    over what the run or worker asks for (``base``); UnknownVariant names a slot whose
    variant cannot run. The one place a job's arms are resolved."""
    memory = registry().graph("memory")
    return resolve_all(memory, Context(variants={**base, **(own or {})}), deps)


def slot(
    name: str,
    deps: Deps,
    pinned: Callable[[Any], Mapping[str, str]] | None = None,
    platforms: Callable[[Any, str], Iterable[str]] | None = None,
    reg: Registry | None = None,
) -> NodeFn:
    """The node function for a slot: picks the variant per run and records the choice.
    ``pinned`` reads variants the work itself carries (a memory job's): they win over the
    run's context, so a job runs the arms it was queued with wherever it runs.
    ``platforms`` reads the platforms the state acts on: a slot refuses (``NotAllowed``),
    before it does anything, a state on a platform its bot may not use, however the state
    got there (input, a command, a state update, a resume). A plugin's result is checked
    against the slot's contract (VariantOutputError names what is wrong)."""
    reg = reg or registry()
    contract, variants = SLOTS[name], reg.variants[name]

    def pick(state: Any, runtime: Runtime[Context]) -> tuple[Context, str]:
        if platforms is not None:
            deps.allow(platforms(state, deps.limits.default_platform))
        ctx = as_context(runtime.context)
        if pinned is not None and (own := pinned(state)):
            ctx = replace(ctx, variants={**ctx.variants, **own})
        return ctx, choose(name, {name: variants}, ctx, deps)

    def checked(variant: str, out: Any) -> dict[str, Any]:
        result = reg.checked(name, variant, out)
        annotate(name, variant, deps.limits.bot_id, result)
        ran = {name: variant}  # after what ran before, or in its place (a run's start)
        return {
            **result,
            "variants": Overwrite(ran) if isinstance(result.get("variants"), Overwrite) else ran,
        }

    if contract.asynchronous:

        async def anode(state: Any, *, runtime: Runtime[Context]) -> dict[str, Any]:
            ctx, variant = pick(state, runtime)
            out = variants[variant](state, ctx, deps)
            return checked(variant, await out if inspect.isawaitable(out) else out)

        anode.__name__ = f"{name}_slot"
        return anode

    def node(state: Any, *, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx, variant = pick(state, runtime)
        return checked(variant, variants[variant](state, ctx, deps))

    node.__name__ = f"{name}_slot"
    return node
