"""docs/settings.md is written from the settings' own descriptions and cannot drift."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupmind.settings import Settings
from groupmind.settings_doc import PAGE, render
from nodes.settings import ChatRules


def test_the_settings_page_is_what_the_settings_say() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), "run make settings-doc"


def test_every_setting_says_what_it_does() -> None:
    rows = [line for line in render().splitlines() if line.startswith("| `")]
    assert len(rows) > 80
    assert [r for r in rows if r.endswith("|  |")] == []  # a setting with no description
    names = {r.split("`")[1] for r in rows}
    # nested models by their whole path, as the environment spells them
    assert {"SEARCH__ZH__DENSE", "SEARCH__OTHER__TIME", "RANK__WEIGHTS__REPLY_CHAIN"} <= names


def test_the_chat_state_rules_read_under_their_new_and_their_old_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)  # no .env of the checkout's
    monkeypatch.setenv("GROUPMIND_CHAT_STATES__BUFFER_MAX", "7")
    assert Settings().chat_states.buffer_max == 7
    monkeypatch.delenv("GROUPMIND_CHAT_STATES__BUFFER_MAX")
    monkeypatch.setenv("GROUPMIND_CHAT__FOCUSED_CAP", "5")  # a deployment's old .env
    assert Settings().chat_states.focused_cap == 5
    assert Settings(chat_states=ChatRules(buffer_max=4)).chat_states.buffer_max == 4
