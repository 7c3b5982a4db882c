"""What an experiment is: arms (each a set of node variants and settings), a dataset, the
evaluators that score every example, and how the arms are compared.

An arm on the command line is ``NAME:KEY=VALUE,KEY=VALUE``: a key that is a node slot of
either graph picks that slot's variant (``plan=llm``); a dotted key, or a settings field,
sets a deployment setting for the arm (``search.zh.dense=0.5``, ``auto_top_k=5``). Values
are read as JSON when they parse (numbers, booleans), else as text. The first arm is the
baseline unless one is named.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from groupmind.settings import Settings
from state.validation import InputError, describe_validation_error

ARM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
Mode = Literal["reply", "rank"]


class Arm(BaseModel):
    """One arm: the variants it picks per slot and the settings it changes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    variants: dict[str, str] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not ARM_NAME.fullmatch(value):
            raise ValueError(
                f"{value!r}: an arm's name is 1-64 letters, digits, '.', '_' or '-' "
                "(it names a folder and a LangSmith experiment)"
            )
        return value

    def label(self) -> str:
        """``plan=llm, search.zh.dense=0.5``: what the arm changes, for tables and traces."""
        parts = [f"{k}={v}" for k, v in sorted(self.variants.items())]
        parts += [f"{k}={json.dumps(v)}" for k, v in sorted(flatten(self.settings).items())]
        return ", ".join(parts) or "defaults"


class ExperimentSpec(BaseModel):
    """A whole experiment (``groupmind experiment``, or a TOML file with these fields)."""

    model_config = ConfigDict(extra="forbid")

    name: str = "experiment"
    dataset: Path
    arms: list[Arm] = Field(min_length=1)
    baseline: str | None = None
    # reply: every message through the whole reply graph; rank: observe + rank_context only
    # (every message ranked, whatever the chat's state: ``groupmind rank``)
    mode: Mode = "reply"
    evaluators: list[str] = Field(default_factory=lambda: ["builtin"])
    ks: tuple[int, ...] = (1, 5, 10)
    bootstrap: int = Field(default=2000, ge=100, le=100_000)
    confidence: float = Field(default=0.95, gt=0.5, lt=1)
    seed: int = 0
    lower_is_better: list[str] = Field(default_factory=list)  # user metrics where less wins
    limit: int | None = Field(default=None, ge=1, description="the first N examples only")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return Arm._name(value)

    @field_validator("arms")
    @classmethod
    def _distinct(cls, arms: list[Arm]) -> list[Arm]:
        names = [a.name for a in arms]
        if len(set(names)) != len(names):
            raise ValueError(f"two arms share a name: {sorted(names)}")
        return arms

    @property
    def baseline_arm(self) -> Arm:
        if self.baseline is None:
            return self.arms[0]
        for arm in self.arms:
            if arm.name == self.baseline:
                return arm
        raise InputError("baseline", f"{self.baseline!r} is none of the arms")


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_arm(text: str, slots: Mapping[str, object]) -> Arm:
    """``NAME:KEY=VALUE,...`` -> an Arm; ``slots`` are the node slots of both graphs."""
    name, sep, rest = text.partition(":")
    if not sep:
        raise InputError("arm", f"{text!r}: expected NAME:SLOT=VARIANT,... (e.g. llm:plan=llm)")
    variants: dict[str, str] = {}
    settings: dict[str, Any] = {}
    for pair in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = pair.partition("=")
        if not eq or not key or not value:
            raise InputError("arm", f"{name}: {pair!r} is not KEY=VALUE")
        if key in slots:
            variants[key] = value
        else:
            settings = deep_merge(settings, nested(key, _value(value)))
    try:
        return Arm(name=name, variants=variants, settings=settings)
    except ValidationError as exc:
        raise InputError("arm", describe_validation_error(exc)) from None


def nested(path: str, value: Any) -> dict[str, Any]:
    """``("search.zh.dense", 0.5)`` -> ``{"search": {"zh": {"dense": 0.5}}}``."""
    out: Any = value
    for part in reversed(path.split(".")):
        out = {part: out}
    return dict(out)


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{path}."))
        else:
            flat[path] = value
    return flat


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def arm_settings(base: Settings, arm: Arm, data_dir: Path) -> Settings:
    """The deployment's settings with the arm's changes, on the arm's own data dir. A key
    that is no setting is refused by name (Settings itself ignores unknown keys)."""
    for path in flatten(arm.settings):
        _check_path(path, arm.name)
    merged = deep_merge(base.model_dump(), arm.settings)
    merged.update(
        data_dir=data_dir,
        sql_url=None,
        chroma_path=None,
        chroma_host=None,
        checkpoint_url=None,
        personas_file=base.resolved_personas_file,
        checkpointer="sqlite",
    )
    try:
        return Settings(_env_file=None, **merged)  # type: ignore[call-arg]
    except ValidationError as exc:
        raise InputError(f"arm {arm.name}", describe_validation_error(exc)) from None


def _check_path(path: str, arm: str) -> None:
    model: Any = Settings
    for part in path.split("."):
        fields = getattr(model, "model_fields", None)
        if fields is None or part not in fields:
            raise InputError(
                f"arm {arm}", f"{path!r} is neither a node slot nor a setting (docs/experiments.md)"
            )
        model = fields[part].annotation


def load_spec(path: Path, overrides: Mapping[str, Any] | None = None) -> ExperimentSpec:
    """A TOML experiment file; ``dataset`` is read relative to the file."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InputError("spec", f"{path}: {exc}") from None
    arms = raw.get("arms")
    if isinstance(arms, dict):  # [arms.NAME] tables
        raw["arms"] = [{"name": name, **(body or {})} for name, body in arms.items()]
    raw.update(overrides or {})
    if "dataset" in raw and not Path(raw["dataset"]).is_absolute():
        raw["dataset"] = path.parent / raw["dataset"]
    try:
        return ExperimentSpec.model_validate(raw)
    except ValidationError as exc:
        raise InputError("spec", describe_validation_error(exc)) from None
