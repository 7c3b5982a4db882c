"""The plugin keeps rank_context's contract on real states (groupmind.testing), and
ranks what it says it ranks."""

from __future__ import annotations

from pathlib import Path

from groupmind_rank_keywords import rank_keywords

from groupmind.testing import check_variant, installed, sample_messages


def test_it_keeps_the_contract_and_prefers_shared_words(tmp_path: Path) -> None:
    messages = sample_messages()
    outputs = check_variant("rank_context", rank_keywords, data_dir=tmp_path, messages=messages)
    assert outputs  # every run that reached rank_context
    # "@bot 北京最近冷吗？" shares 北京 with "大家早，我下周三要去北京出差" only
    asked = next(o for o in outputs if o["ranked"] and o["ranked"][0][0] == "s1")
    assert asked["context_ids"] == ["s1"] and asked["ranked"][0][1] > 0


def test_groupmind_finds_it_by_its_entry_point() -> None:
    assert installed("rank_context")["keywords"] == "keywords = groupmind_rank_keywords:VARIANTS"
