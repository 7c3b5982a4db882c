"""docs/settings.md, written from the settings' own descriptions: one place says what a
setting does (its ``Field``), and the page cannot drift from it (``make settings-doc``
writes it; ``tests/groupmind/test_settings_doc.py`` fails when the two differ)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr

from groupmind.settings import Settings

PAGE = Path(__file__).resolve().parents[1] / "docs" / "settings.md"
HEAD = """# Settings

<!-- written by `make settings-doc` from the settings' descriptions (groupmind/settings.py
and the models it nests); tests/groupmind/test_settings_doc.py fails when the two drift apart -->

Environment variables (or `.env`), prefix `GROUPMIND_`; nested ones with `__`
(`GROUPMIND_RANK__THRESHOLD=0.2`, `GROUPMIND_SEARCH__ZH__DENSE=1`); lists and objects as
JSON. Explicit arguments (`--data-dir`, `--bot`) beat the environment.
"""


def shown(value: Any) -> str:
    """A default as an operator would write it."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, SecretStr):
        return "set"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, (list, dict)) and not value:
        return "none"
    return f"`{value}`"


def row(env: str, value: Any, about: str | None) -> str:
    text = (about or "").replace("|", "\\|").replace("\n", " ")
    return f"| `{env}` | {shown(value)} | {text} |"


def rows(model: BaseModel, prefix: str) -> Iterator[str]:
    """One table row per leaf setting below ``model`` (a default instance): nested models
    by their path."""
    for name, field in type(model).model_fields.items():
        value, env = getattr(model, name), f"{prefix}{name.upper()}"
        if isinstance(value, BaseModel):
            yield from rows(value, f"{env}__")
        else:
            yield row(env, value, field.description)


def render() -> str:
    table = ["| setting | default | |", "| --- | --- | --- |"]
    out = [HEAD, "## The deployment", "", *table]
    nested = []
    for name, field in Settings.model_fields.items():
        value = field.get_default(call_default_factory=True)
        if isinstance(value, BaseModel):
            nested.append((name.upper(), field.description, value))
        else:
            out.append(row(name.upper(), value, field.description))
    for env, about, model in nested:
        out += ["", f"## `{env}`: {about}", "", *table, *rows(model, f"{env}__")]
    return "\n".join(out) + "\n"


def main() -> None:
    """``make settings-doc``: write the page (``--check``: exit 1 if it is not current)."""
    page = render()
    if "--check" in sys.argv:
        current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if current != page:
            raise SystemExit(f"{PAGE} is not current: run make settings-doc")
        return
    PAGE.write_text(page, encoding="utf-8")
    print(f"written: {PAGE}")


if __name__ == "__main__":
    main()
