"""The ties a memory's words show (``nodes.memory.ties``): answered, named, agreed, argued,
and relations stated, in Chinese and English; nothing for a name that is no member."""

from __future__ import annotations

from typing import Any

from nodes.memory.ties import ties_of
from state.memory import MemoryJob
from stores.ties import Tie

MEMBERS = {"u2": "小红", "u3": "阿杰", "u4": "Melanie", "u5": "Jon"}


def job(new_info: str, **fields: Any) -> MemoryJob:
    return MemoryJob.model_validate(
        {"request_id": "r1", "action_summary": "", "new_info": new_info, "user_id": "u1",
         "user_name": "小明", "platform": "qq", "chat_type": "group", "chat_id": "g1",
         "timestamp": "2026-03-01T20:00:00+08:00", "new_info_by": "user", **fields}
    )  # fmt: skip


def stated(ties: tuple[Tie, ...]) -> set[tuple[str, str]]:
    return {(t.other_name, t.label) for t in ties if t.kind == "stated"}


def test_relations_stated_about_a_member_in_both_languages() -> None:
    assert stated(ties_of(job("小红是我同事，天天一起加班"), MEMBERS)) == {("小红", "同事")}
    assert stated(ties_of(job("我和阿杰是室友"), MEMBERS)) == {("阿杰", "室友")}
    assert stated(ties_of(job("我女朋友小红今天生日"), MEMBERS)) == {("小红", "女朋友")}
    assert stated(ties_of(job("My wife Melanie paints"), MEMBERS)) == {("Melanie", "wife")}
    assert stated(ties_of(job("Jon and I are neighbours"), MEMBERS)) == {("Jon", "neighbours")}


def test_a_denied_relation_or_a_stranger_makes_no_stated_tie() -> None:
    assert stated(ties_of(job("小红不是我女朋友！"), MEMBERS)) == set()
    assert ties_of(job("小芳是我同事"), MEMBERS) == ()  # no member of this chat
    named = ties_of(job("小红不是我女朋友！"), MEMBERS)
    assert Tie("u2", "小红", "mentioned") in named  # named, still


def test_whom_they_answered_the_reply_they_sent_first_else_whom_they_spoke_after() -> None:
    recent = [{"user_id": "u3", "user_name": "阿杰", "content": "周末爬山吗"},
              {"user_id": "u2", "user_name": "小红", "content": "我不去"}]  # fmt: skip
    last = ties_of(job("同意，太累了", recent_messages=recent), MEMBERS)
    assert Tie("u2", "小红", "followed") in last and Tie("u2", "小红", "agreed") in last
    assert not any(t.kind == "replied" for t in last)  # no reply, no @: only a guess
    sent = ties_of(job("不对，上次你说要去", recent_messages=recent, to=["u3"]), MEMBERS)
    assert {(t.other_id, t.kind) for t in sent} == {("u3", "replied"), ("u3", "argued")}


def test_the_bot_and_the_speaker_are_never_tied_and_the_bots_words_make_none() -> None:
    recent = [{"user_id": "bot", "user_name": "小助手", "content": "大家好"}]
    assert ties_of(job("你好呀", recent_messages=recent), {**MEMBERS, "bot": "小助手"}, "bot") == ()
    assert ties_of(job("小明是我同事"), {"u1": "小明"}) == ()  # themself
    assert ties_of(job("小红是我同事", new_info_by="bot"), MEMBERS) == ()
