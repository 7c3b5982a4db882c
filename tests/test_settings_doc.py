"""docs/settings.md is written from the settings' own descriptions and cannot drift."""

from __future__ import annotations

from pydantic import BaseModel

from groupmind.settings import Settings
from groupmind.settings_doc import PAGE, render


def leaves(model: type[BaseModel], prefix: str = "") -> list[tuple[str, str | None]]:
    out = []
    for name, field in model.model_fields.items():
        default = field.get_default(call_default_factory=True)
        if isinstance(default, BaseModel):
            out += leaves(type(default), f"{prefix}{name.upper()}__")
        else:
            out.append((f"{prefix}{name.upper()}", field.description))
    return out


def test_the_settings_page_is_what_the_settings_say() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), "run make settings-doc"


def test_every_setting_says_what_it_does() -> None:
    found = leaves(Settings)
    assert len(found) > 80
    assert [env for env, about in found if not about] == []
    page = PAGE.read_text(encoding="utf-8")
    assert all(f"| `{env}` |" in page for env, _ in found)
