"""The rules historian and the gate's lexicon: one table, so they must agree."""

from __future__ import annotations

from datetime import datetime

import pytest

from nodes.memory.absolute import Scene, absolutize
from nodes.memory.lexicon import find_relative
from tests.conftest import SHANGHAI

MONDAY = datetime(2026, 11, 16, 10, 5, tzinfo=SHANGHAI)  # a Monday
ZH = Scene(
    when=MONDAY,
    speaker="小明",
    addressee="小爱",
    place_zh="技术交流群",
    place_en="the group chat Tech",
    names=("小明", "小爱", "技术交流群"),
)
EN = Scene(
    when=MONDAY,
    speaker="Caroline",
    addressee="Melanie",
    place_zh="群",
    place_en="the group chat Tech",
    names=("Caroline", "Melanie"),
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("今天", "2026年11月16日"),
        ("昨天", "2026年11月15日"),
        ("前天", "2026年11月14日"),
        ("明天", "2026年11月17日"),
        ("后天", "2026年11月18日"),
        ("上周五", "2026年11月13日"),
        ("下周三", "2026年11月25日"),
        ("这周日", "2026年11月22日"),
        ("上周", "2026年11月9日那一周"),
        ("上个月", "2026年10月"),
        ("下个月", "2026年12月"),
        ("去年", "2025年"),
        ("今晚", "2026年11月16日晚上"),
        ("昨晚", "2026年11月15日晚上"),
        ("刚才", "2026年11月16日10:05前后"),
        ("三天前", "2026年11月13日"),
        ("两个月后", "2027年1月"),
    ],
)
def test_chinese_relative_times_become_dates(text: str, expected: str) -> None:
    assert absolutize(text, ZH) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I went yesterday.", "Caroline went on 15 November 2026."),
        ("Tomorrow I leave.", "On 17 November 2026 Caroline leave."),  # rules do not conjugate
        ("I met her last Friday.", "Caroline met her on Friday, 13 November 2026."),
        ("We moved last month.", "Caroline and others moved in October 2026."),
        ("I'm tired since yesterday", "Caroline is tired since 15 November 2026"),
        ("I have a dog, my dog barks", "Caroline has a dog, Caroline's dog barks"),
        ("Did you see it two days ago?", "Did Melanie see it on 14 November 2026?"),
        ("I painted it last week", "Caroline painted it in the week of 9 November 2026"),
        ("I love it here", "Caroline love it in the group chat Tech"),
    ],
)
def test_english_pronouns_times_and_places(text: str, expected: str) -> None:
    assert absolutize(text, EN) == expected


def test_chinese_pronouns_follow_the_speaker_and_places_the_chat() -> None:
    out = absolutize("我们在这里聊过，你说我家的猫很可爱", ZH)
    assert out == "小明等人在技术交流群聊过，小爱说小明家的猫很可爱"


def test_third_person_is_left_for_the_gate() -> None:
    out = absolutize("他昨天来过", ZH)
    assert out == "他2026年11月15日来过"
    assert [f.text for f in find_relative(out, ZH.names)] == ["他"]


@pytest.mark.parametrize(
    "text",
    [
        "其他人都说你好",  # 他 inside 其他, a greeting
        "小明说“我明天去”",  # quoted words are data
        "There is a cat. Hi there!",  # existential / greeting "there"
        "自我介绍一下",  # 我 inside a word
        "Caroline went to the park on 7 May 2023.",
        "小明2026年11月16日前后很忙",  # the rewrite's own date is not "16日前"
    ],
)
def test_gate_leaves_words_that_are_not_relative(text: str) -> None:
    assert find_relative(text, ("小明",)) == []


def test_names_are_protected_from_rewrite_and_gate() -> None:
    scene = Scene(
        when=MONDAY, speaker="小我", addressee="你好先生", place_zh="x", place_en="x",
        names=("小我", "你好先生"),
    )  # fmt: skip
    out = absolutize("我见到了你好先生", scene)
    assert out == "小我见到了你好先生"
    assert find_relative(out, scene.names) == []


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("我昨天在这里见到了他", ["pronoun", "time", "place", "pronoun"]),
        ("We met last Friday, three days ago, over there", ["pronoun", "time", "time", "place"]),
        ("They said you would come tonight", ["pronoun", "pronoun", "time"]),
    ],
)
def test_gate_finds_each_kind(text: str, kinds: list[str]) -> None:
    assert [f.kind for f in find_relative(text)] == kinds
