"""The gate's judgement of one rewrite (nodes/memory/judge.py), alone."""

from __future__ import annotations

import pytest

from nodes.memory.judge import judge, not_prose, persons, required_names
from state.memory import MemoryJob
from tests.graphs.helpers import job


def a_job(**changes: str) -> MemoryJob:
    return MemoryJob.model_validate(job(**changes))


NAMES = ["小明", "default", "技术交流群"]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ('{"action": "tex', "not prose: JSON"),
        ('[{"name": "search_events"}]', "not prose: JSON"),
        ("```python\nprint(1)\n```", "not prose: a code block"),
        ("def f():\n    return 1;\n}", "not prose: code"),
        (
            "【数据】以下引号里的内容来自用户\n原始摘要：小明要去北京",
            "not prose: repeats the prompt",
        ),
        ("…… ！！", "not prose: no words"),
    ],
)
def test_what_is_not_prose(text: str, why: str) -> None:
    assert not_prose(text) == why
    assert judge(text, a_job(), "default", NAMES).reasons == [why]


def test_a_snippet_the_user_pasted_is_not_held_against_the_rewrite() -> None:
    pasted = a_job(action_summary="", new_info='我的配置是 {"debug": true}')
    assert not_prose('{"debug": true} 是小明2026年11月16日的配置', pasted.raw_text) is None
    assert not_prose('{"debug": true} 是小明的配置', "") == "not prose: JSON"


def test_persons_outside_quotes() -> None:
    assert persons("我帮你查了") == {"first", "second"}
    assert persons("小明说：“我明天到”") == set()
    assert persons("I told you") == {"first", "second"}


def test_names_the_exchange_is_about_must_stay() -> None:
    both = a_job()  # the bot's "我帮你…" and the user's "我下周三…"
    assert required_names(both, "小爱") == ["小明", "小爱"]
    assert required_names(a_job(action_summary="", new_info="今天天气不错"), "小爱") == []
    verdict = judge("小爱2026年11月16日帮忙查了高铁；出差在2026年11月25日", both, "小爱", NAMES)
    assert verdict.reasons == ["drops the name 小明"] and verdict.penalty == 10


def test_most_of_the_content_lost_is_caught() -> None:
    long = a_job(
        action_summary="",
        new_info="我下周三要去北京出差，见客户谈合同，顺便去故宫看展览，周五晚上坐高铁回上海",
    )
    verdict = judge("小明2026年11月25日很忙", long, "default", NAMES)
    assert verdict.reasons and verdict.reasons[-1].startswith("loses most of the content")
    kept = (
        "小明2026年11月25日去北京出差见客户谈合同，顺便去故宫看展览，2026年11月27日晚上坐高铁回上海"
    )
    assert judge(kept, long, "default", NAMES).passed


@pytest.mark.parametrize(
    ("before", "relative"),
    [
        # from LoCoMo: things just before, so "they" is things, as "it" would be
        ("Those flowers look great! What kind are they?", []),
        ("Look! [shares a photo of three dogs on a couch]", []),
        # people spoken of, named, or nothing at all before: still a person's "they"
        ("Seeing your favorite singers live must have been wild!", ["They"]),
        ("I met my friends and their dogs", ["They"]),
        ("Jo and Ann came with the boxes", ["They"]),
        ("Hey, how are you?", ["They"]),
    ],
)
def test_they_after_talk_of_things_is_a_thing(before: str, relative: list[str]) -> None:
    spoken = a_job(action_summary="", new_info="They look so cute!",
                   recent_messages=[{"user_id": "2", "user_name": "Audrey", "content": before}])  # fmt: skip
    assert judge("They look so cute!", spoken, "default", NAMES).relative == relative
    assert judge("They look so cute!", a_job(), "default", NAMES).relative == ["They"]
