"""docs/settings.md is written from the settings' own descriptions and cannot drift."""

from __future__ import annotations

from groupmind.settings_doc import PAGE, render


def test_the_settings_page_is_what_the_settings_say() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), "run make settings-doc"


def test_every_setting_says_what_it_does() -> None:
    rows = [line for line in render().splitlines() if line.startswith("| `")]
    assert len(rows) > 80
    assert [r for r in rows if r.endswith("|  |")] == []  # a setting with no description
    names = {r.split("`")[1] for r in rows}
    # nested models by their whole path, as the environment spells them
    assert {"SEARCH__ZH__DENSE", "SEARCH__OTHER__TIME", "RANK__WEIGHTS__REPLY_CHAIN"} <= names
