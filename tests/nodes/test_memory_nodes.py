"""Each memory node alone: real stores where the node writes, fake models where it thinks."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langgraph.types import Overwrite

from domain.scope import ChatScope, ForgetTarget
from nodes.deps import Deps
from nodes.memory.embed import embed, event_for, reply_context
from nodes.memory.intake import intake, validate_job
from nodes.memory.merge_profile import merge_profile_rules
from nodes.memory.quality_gate import quality_gate, route_after_gate
from nodes.memory.rewrite import render_rewrite_prompt, rewrite_llm, rewrite_rules
from state.context import Context
from state.validation import InputError
from stores.base import EventQuery, Persona
from stores.script import has_cjk
from stores.text import questions_in, without_questions
from tests.graphs.helpers import facts, job, run
from tests.helpers.fakes import FakeChat


def state_for(deps: Deps, **changes: Any) -> dict[str, Any]:
    out = intake(job(**changes), Context(), deps)  # type: ignore[arg-type]
    values = {k: v.value if isinstance(v, Overwrite) else v for k, v in out.items()}
    return {**job(**changes), **values}


def test_intake_validates_and_resets(deps: Deps) -> None:
    deps.personas.put_persona(Persona(persona_id="default", name="小爱"))
    dirty = {**job(), "attempts": 2, "offending": ["他"], "degraded": True}
    out = intake(dirty, Context(), deps)  # type: ignore[arg-type]
    assert out["persona_name"] == "小爱" and out["attempts"] == 0
    assert out["offending"] == [] and out["degraded"] is False
    with pytest.raises(InputError, match="user_id: missing"):
        intake({k: v for k, v in job().items() if k != "user_id"}, Context(), deps)  # type: ignore[arg-type]


def test_rewrite_rules_uses_whom_the_user_answered(deps: Deps) -> None:
    recent = [{"user_name": "阿强", "content": "你周末去哪了？"}]
    state = state_for(
        deps, action_summary="", new_info="你猜，我昨天去了你家", recent_messages=recent
    )
    out = rewrite_rules(state, Context(), deps)  # type: ignore[arg-type]
    assert out == {"text": "阿强猜，小明2026年11月15日去了阿强家", "attempts": 1}


def test_rewrite_llm_sends_the_seed_prompt_and_strips_quotes(deps: Deps) -> None:
    chat = FakeChat(script=["“小明2026年11月25日要去北京出差。”"])
    state = state_for(deps)
    out = rewrite_llm(state, Context(), deps.with_chat(chat))
    assert (out["text"], out["attempts"]) == ("小明2026年11月25日要去北京出差。", 1)
    assert out["usage"]["nodes"]["rewrite"]["calls"] == 1
    prompt = chat.last_prompt()
    assert "你是一个旁观者（史官）" in prompt and "（2026-11-16T10:05:00+08:00）" in prompt
    assert "2026年11月16日（星期一）10:05" in prompt and '群聊"技术交流群"' in prompt
    assert '新信息（"小明"说的话；“我”指"小明"）' in prompt and prompt.endswith("改写后的文本：")


def test_retry_prompt_gives_the_gates_reasons_and_the_names_to_keep(deps: Deps) -> None:
    state = {
        **state_for(deps),
        "text": "他明天到",
        "offending": ["他", "明天"],
        "reasons": ["relative words left: 他、明天", "drops the name 小明、小助手"],
    }
    prompt = render_rewrite_prompt(state)  # type: ignore[arg-type]
    assert '仍残留这些词："他"、"明天"' in prompt and '"drops the name 小明、小助手"' in prompt
    # No personas file: the persona is named by the bot's display name, never its id.
    assert '写出"小明"、"小助手"的名字' in prompt and '"default"的名字' not in prompt


CLEAN = "小助手帮小明查了2026年11月17日去北京的高铁；小明2026年11月25日要去北京出差，生日是11月23日"


def test_quality_gate_passes_loops_and_degrades(deps: Deps) -> None:
    base = state_for(deps)
    clean = quality_gate({**base, "text": CLEAN, "attempts": 1}, Context(), deps)  # type: ignore[arg-type]
    assert clean["reasons"] == [] and route_after_gate({**base, **clean}) == "embed"  # type: ignore[typeddict-item]
    again = quality_gate({**base, "text": "他明天去", "attempts": 1}, Context(), deps)  # type: ignore[arg-type]
    assert again["offending"] == ["他", "明天"]
    assert "drops the name 小明、小助手" in again["reasons"]
    assert route_after_gate({**base, **again}) == "rewrite"  # type: ignore[typeddict-item]
    done = quality_gate({**base, **again, "attempts": 2}, Context(), deps)  # type: ignore[arg-type]
    # the model's attempts failed; the offline rules rewrite passes: stored as passing,
    # saying it stood in
    rules = rewrite_rules(base, Context(), deps)["text"]  # type: ignore[arg-type]
    assert done.get("degraded") is not True and done["text"] == rules and done["reasons"] == []
    assert done["written_by"] == "rules" and done["notes"][0].endswith("stored the rules rewrite")
    assert route_after_gate({**base, **done}) == "embed"  # type: ignore[typeddict-item]


def test_the_least_bad_attempt_is_stored(deps: Deps) -> None:
    base = state_for(deps, action_summary="", new_info="他昨天说他下个月辞职")
    first = quality_gate({**base, "text": '{"x": 1}', "attempts": 1}, Context(), deps)  # type: ignore[arg-type]
    assert first["reasons"] == ["not prose: JSON"]
    second = {**base, "tried": first["tried"], "text": "阿强2026年11月15日说他2026年12月辞职"}
    done = quality_gate({**second, "attempts": 2}, Context(), deps)  # type: ignore[arg-type]
    # only 他 is left: as good as the rules rewrite, better than the raw text
    assert done["text"] == "阿强2026年11月15日说他2026年12月辞职"
    assert done["reasons"] == ["relative words left: 他"] and done["offending"] == ["他"]


def test_when_the_rules_do_no_better_than_the_raw_text_it_is_stored(deps: Deps) -> None:
    base = state_for(deps, action_summary="", new_info="他们说了")  # nothing the rules can fix
    done = quality_gate({**base, "text": '{"x": 1}', "attempts": 2}, Context(), deps)  # type: ignore[arg-type]
    assert done["degraded"] is True and done["text"] == "他们说了"


def test_embed_writes_one_event_with_its_scope(deps: Deps) -> None:
    recent = [
        {"user_name": "小爱", "content": "你什么时候出差？"},
        {"user_name": "小明", "content": "嗯"},
    ]
    state = {
        **state_for(deps, recent_messages=recent),
        "text": "小明2026年11月25日去北京",
        "degraded": False,
    }
    assert embed(state, Context(), deps) == {"status": "stored"}  # type: ignore[arg-type]
    assert embed(state, Context(), deps) == {"status": "stored"}  # type: ignore[arg-type]
    (event,) = deps.events.get(["r1"])
    assert (event.chat_type, event.chat_id, event.persona_id, event.user_id) == (
        "group",
        "1001",
        "default",
        "10001",
    )
    assert event.context == "小爱: 你什么时候出差？"
    assert deps.events.count() == 1


def test_a_chinese_exchange_is_found_by_what_the_bot_told_not_what_it_asked(
    deps: Deps,
) -> None:
    """The vector of a Chinese exchange holds the bot's answer beside the user's words:
    "你给我推荐过什么书" finds the memory where it recommended one, not the thanks after
    it; the bot's own question ("你最喜欢吃什么菜呢？") is no part of it (it holds no answer)."""
    told = "我回复了小明：“推荐你读余华的《活着》，写得很感人。你平时喜欢看什么类型的书？”"
    exchanges = [
        ("r1", "最近有点无聊，想找本书看看", told),
        ("r2", "谢谢你的推荐，我这周就去书店", "我回复了小明：“不客气，有空再聊！”"),
        ("r3", "我周末想学做饭", "我回复了小明：“好主意！你最喜欢吃什么菜呢？”"),
    ]
    for rid, said, action in exchanges:
        run(deps, job(rid, new_info=said, action_summary=action), thread=rid)
    (r1,) = deps.events.get(["r1"])
    assert "活着" in r1.text  # the stored memory says it too
    query = EventQuery(text="你给我推荐过什么书？", platform="qq", chat_type="group",
                       chat_id="1001", persona_id="default", top_k=3, asker_id="10001",
                       asker_name="小明")  # fmt: skip
    assert [h.event.id for h in deps.events.search(query)][0] == "r1"
    key = event_for({**state_for(deps, new_info="我周末想学做饭", action_summary=exchanges[2][2]),
                     "text": "小明周末想学做饭"}).key  # fmt: skip
    assert key == "小明：我周末想学做饭\n我回复了小明：“好主意！"


def test_an_english_exchange_is_not_found_by_the_question_the_bot_asked(deps: Deps) -> None:
    """The bot asking "What kind of cuisine do you like?" holds no answer: the exchange
    that answers it comes first for "What kind of cuisine do I like?"."""
    exchanges = [
        ("r1", "I have been learning to cook lately",
         "I replied to Lucy: “Cooking is a fun skill! What kind of cuisine do you like?”"),
        ("r2", "Spicy food from Sichuan, the hotter the better", "I replied to Lucy: “Great!”"),
    ]  # fmt: skip
    for rid, said, action in exchanges:
        run(deps, job(rid, user_name="Lucy", new_info=said, action_summary=action), thread=rid)
    (r1,) = deps.events.get(["r1"])
    assert "What kind of cuisine do you like?" in r1.text  # stored as said, only not a key
    query = EventQuery(text="What kind of cuisine do I like?", platform="qq",
                       chat_type="group", chat_id="1001", persona_id="default", top_k=2,
                       asker_id="10001", asker_name="Lucy")  # fmt: skip
    assert [h.event.id for h in deps.events.search(query)][0] == "r2"
    echo = state_for(deps, user_name="Lucy", new_info="What do you like?",
                     action_summary="I replied to Lucy: “Nice. What do you like?”")  # fmt: skip
    rewrite = "the assistant replied to Lucy: “Nice. What do you like?”. What do you like?"
    # the bot's question goes; the same words asked by the user stay
    assert event_for({**echo, "text": rewrite}).key == (
        "the assistant replied to Lucy: “Nice. ”. What do you like?"
    )


def test_without_questions_keeps_what_a_text_tells() -> None:
    assert (
        without_questions("我推荐《活着》。你看过吗？还有《兄弟》！")
        == "我推荐《活着》。还有《兄弟》！"
    )
    assert without_questions("“你最喜欢哪个菜系？”") == ""
    assert without_questions("Try the park. Have you been?") == "Try the park. "
    assert questions_in("I replied: “Great! What do you like? Go on.”") == ["What do you like?"]


@given(st.text(alphabet='ab 你？?。.!“”"[]吗\n', max_size=40))
def test_what_a_text_asks_is_in_it_and_never_empty(text: str) -> None:
    """A bot's reply is any text: each question found is a piece of it (the key replaces
    it in the rewrite: an empty one would split every character), and what it states is
    all of it exactly when it asks nothing."""
    assert all(q and q in text for q in questions_in(text))
    told = without_questions(text)
    assert len(told) <= len(text) and (told == text) == (not questions_in(text))


def test_reply_context_skips_the_users_own_messages(deps: Deps) -> None:
    only_self = validate_job(job(recent_messages=[{"user_name": "小明", "content": "在吗"}]), deps)
    assert reply_context(only_self) == ("", "")


def test_merge_rules_replaces_a_fact_of_the_same_type(deps: Deps) -> None:
    first = {**state_for(deps, new_info="我住在上海"), "text": "小明住在上海"}
    assert merge_profile_rules(first, Context(), deps) == {"profile": "updated"}  # type: ignore[arg-type]
    moved = {**state_for(deps, request_id="r2", new_info="我搬到了杭州"), "text": "小明搬到了杭州"}
    merge_profile_rules(moved, Context(), deps)  # type: ignore[arg-type]
    rel = deps.profiles.get_relationship("qq", "10001")
    learned = deps.profiles.get_learned(
        ChatScope(platform="qq", chat_type="group", chat_id="1001"), "10001"
    )
    assert learned is not None and facts(learned.key_facts) == [
        {"type": "location", "value": "杭州"}
    ]
    assert learned.key_facts[0]["source"] == "r2" and learned.key_facts[0]["by"] == "10001"
    # the old value stays as history, with its source and when it stopped holding
    (old,) = learned.traits["history"]
    assert (old["value"], old["source"], old["until"]) == ("上海", "r1", "2026-11-16")
    assert rel is not None and rel.relationship_score == 0.02
    assert "所在地：杭州" in learned.summary


def test_affection_is_bounded_and_the_stage_follows_the_bands(deps: Deps) -> None:
    for i in range(25):
        warm = {**state_for(deps, request_id=f"w{i}", new_info="谢谢你，太好了"), "text": "x"}
        merge_profile_rules(warm, Context(), deps)  # type: ignore[arg-type]
    rel = deps.profiles.get_relationship("qq", "10001")
    assert rel is not None and rel.relationship_score == pytest.approx(0.5)  # 25 × +0.02
    assert rel.relationship_stage == "familiar"
    rude = {**state_for(deps, request_id="rude", new_info="滚，讨厌你"), "text": "x"}
    merge_profile_rules(rude, Context(), deps)  # type: ignore[arg-type]
    rel = deps.profiles.get_relationship("qq", "10001")
    assert rel is not None and rel.relationship_score == pytest.approx(0.47)


@pytest.mark.parametrize(
    ("by", "new_info", "expected"),
    [
        (
            "user",
            "我下个月要去杭州出差，你提醒我带身份证",
            "小明2026年12月要去杭州出差，小爱提醒小明带身份证",
        ),
        (
            "bot",
            "你下个月要去杭州出差，我提醒你带身份证",
            "小明2026年12月要去杭州出差，小爱提醒小明带身份证",
        ),
    ],
)
def test_new_info_by_says_whose_words_they_are(
    deps: Deps, by: str, new_info: str, expected: str
) -> None:
    deps.personas.put_persona(Persona(persona_id="default", name="小爱"))
    state = state_for(deps, action_summary="", new_info=new_info, new_info_by=by)
    assert rewrite_rules(state, Context(), deps)["text"] == expected  # type: ignore[arg-type]
    prompt = render_rewrite_prompt(state)  # type: ignore[arg-type]
    label = (
        '"小明"说的话；“我”指"小明"'
        if by == "user"
        else '小爱记下的关于"小明"的事；“我”指小爱，“你”指"小明"'
    )
    assert label in prompt
    assert (
        quality_gate({**state, "text": expected, "attempts": 1}, Context(), deps)["reasons"] == []
    )  # type: ignore[arg-type]


def test_the_rules_merge_reads_the_bots_notes_as_about_the_user(deps: Deps) -> None:
    state = state_for(
        deps, action_summary="", new_info="你的生日是3月8日，你在腾讯工作", new_info_by="bot"
    )
    assert merge_profile_rules(state, Context(), deps)["profile"] == "updated"  # type: ignore[arg-type]
    learned = deps.profiles.get_learned(
        ChatScope(platform="qq", chat_type="group", chat_id="1001"), "10001"
    )
    assert learned is not None
    assert {"type": "birthday", "value": "3月8日"} in facts(learned.key_facts)
    assert {"type": "workplace", "value": "腾讯"} in facts(learned.key_facts)


def test_what_someone_says_about_others_lands_in_their_profile_here(deps: Deps) -> None:
    scope = ChatScope(platform="qq", chat_type="group", chat_id="1001")
    recent = [
        {"user_id": "10002", "user_name": "小红", "content": "我刚下班"},
        {"user_id": "10003", "user_name": "阿强", "content": "大家好"},
    ]
    said = state_for(
        deps, action_summary="", new_info="你是厨师吧，小红是医生", recent_messages=recent
    )
    assert merge_profile_rules(said, Context(), deps) == {"profile": "updated"}  # type: ignore[arg-type]
    qiang, hong = (
        deps.profiles.get_learned(scope, "10003"),
        deps.profiles.get_learned(scope, "10002"),
    )
    assert qiang is not None and facts(qiang.key_facts) == [{"type": "job", "value": "厨师"}]
    assert hong is not None and facts(hong.key_facts) == [{"type": "job", "value": "医生"}]
    assert hong.key_facts[0]["by"] == "10001" and hong.key_facts[0]["source"] == "r1"
    other_chat = ChatScope(platform="qq", chat_type="group", chat_id="2002")
    assert deps.profiles.get_learned(other_chat, "10002") is None  # only this chat learned it
    # the teller forgotten: what they told about others goes with them
    removed = deps.profiles.forget(ForgetTarget(platform="qq", user_id="10001"))
    assert removed["facts_they_told_removed"] == 2
    hong = deps.profiles.get_learned(scope, "10002")
    assert hong is not None and hong.key_facts == [] and "医生" not in str(hong.traits)


def test_pronoun_and_place_values_from_a_model_are_refused_too(deps: Deps) -> None:
    from nodes.memory.profile_change import merge_key_facts

    proposed = [{"type": "location", "value": "那个地方"}, {"type": "partner", "value": "她"},
                {"type": "job", "value": "厨师"}]  # fmt: skip
    assert merge_key_facts([], proposed) == [{"type": "job", "value": "厨师"}]


def test_a_member_who_spoke_before_the_hand_off_is_named_too(deps: Deps) -> None:
    """A job carries only the lines since the last hand-off: 阿强, who spoke in the chat
    earlier (and the bot, which is nobody's subject), are known from the chat's messages."""
    from stores.base import StoredMessage

    scope = ChatScope(platform="qq", chat_type="group", chat_id="1001")
    assert deps.messages is not None
    for i, (uid, name) in enumerate([("10003", "阿强"), ("bot", "小助手")]):
        deps.messages.add(StoredMessage(stream=scope.key, message_id=f"m{i}", platform="qq",
                                        chat_type="group", chat_id="1001", user_id=uid,
                                        user_name=name, content="大家好", timestamp=1.0 + i,
                                        from_bot=uid == "bot"))  # fmt: skip
    said = state_for(deps, action_summary="", new_info="阿强是医生，小助手是厨师",
                     recent_messages=[])  # fmt: skip
    assert merge_profile_rules(said, Context(), deps) == {"profile": "updated"}  # type: ignore[arg-type]
    qiang = deps.profiles.get_learned(scope, "10003")
    assert qiang is not None and facts(qiang.key_facts) == [{"type": "job", "value": "医生"}]
    assert deps.profiles.get_learned(scope, "bot") is None


def test_the_rules_merge_reads_the_message_once_and_can_run_again(deps: Deps) -> None:
    """The read-compute-write loop may compute twice (a concurrent write): the statement,
    read once before it, must come out the same both times."""
    from nodes.memory.profile_change import Current
    from nodes.memory.profile_rules import rules_change, told
    from state.memory import current_job

    recent = [{"user_id": "10002", "user_name": "小红", "content": "在吗"}]
    state = state_for(deps, new_info="我住在杭州，小红是医生", recent_messages=recent)
    job = current_job(state)  # type: ignore[arg-type]
    about = told(job, job.new_info, {})
    current = Current(None, None, None, others={"10002": None})
    first, again = (rules_change(job, current, job.new_info, about, {}) for _ in range(2))
    assert (
        facts(first.learned.key_facts)
        == facts(again.learned.key_facts)
        == [{"type": "location", "value": "杭州"}]
    )
    assert [facts(o.key_facts) for o in again.others] == [[{"type": "job", "value": "医生"}]]


def test_what_one_member_says_another_has_is_told_about_them(deps: Deps) -> None:
    from nodes.memory.profile_rules import told
    from state.memory import current_job

    recent = [{"user_id": "10002", "user_name": "小红", "content": "在吗"}]
    state = state_for(deps, new_info="小红的男朋友下周来看她", recent_messages=recent)
    job = current_job(state)  # type: ignore[arg-type]
    about = told(job, job.new_info, {})
    assert [(f["type"], f["value"]) for f in about["10002"]] == [("partner", "男朋友")]
    assert job.user_id not in about  # the teller has no boyfriend by saying so


@pytest.mark.parametrize(
    ("text", "said", "level"),
    [
        ("小明住在杭州", "", 1.0),  # a fact in the memory's words
        ("小明说了自己的情况", "我是医生", 1.0),  # a first-person fact in theirs
        ("Caroline said she loves hiking", "", 0.8),
        ("小明最近迷上了原神", "", 0.8),
        ("小明明天下午三点去医院复查", "", 0.6),
        ("小明周末去买冲浪板", "", 0.6),  # a plan with its time
        ("小明去买冲浪板", "", 0.4),
        ("小明说哈哈哈好的", "", 0.2),
        ("Melanie said lol ok", "", 0.2),
    ],
)
def test_importance_ranks_facts_over_tastes_over_plans_over_chit_chat(
    text: str, said: str, level: float
) -> None:
    from nodes.memory.importance import importance

    assert importance(text, said, ("小明", "Caroline", "Melanie")) == level


def test_the_stored_event_carries_its_importance(deps: Deps) -> None:
    state = {**state_for(deps, new_info="我住在杭州"), "text": "小明住在杭州"}
    embed(state, Context(), deps)  # type: ignore[arg-type]
    (stored,) = deps.events.get([state["request_id"]])
    assert stored.importance == 1.0


def test_here_in_the_bots_own_notes_is_the_users_place(deps: Deps) -> None:
    """A bot has no place: "这边" in a note the bot wrote (我 = the bot, 你 = the user) is
    where the user is, or the chat when the chat is meant; in the user's words, theirs."""
    note = state_for(deps, user_name="小林", action_summary="", new_info_by="bot",
                     new_info="你说这边的咖啡店都太贵")  # fmt: skip
    text = rewrite_rules(note, Context(), deps)["text"]  # type: ignore[arg-type]
    assert "小林所在的地方" in text and "小助手所在的地方" not in text
    chat = state_for(deps, user_name="小林", action_summary="", new_info_by="bot",
                     new_info="你问这边有人会修自行车吗")  # fmt: skip
    assert "技术交流群" in rewrite_rules(chat, Context(), deps)["text"]  # type: ignore[arg-type]
    own = state_for(deps, user_name="小林", action_summary="", new_info="我这边下雪了")
    assert "小助手" not in rewrite_rules(own, Context(), deps)["text"]  # type: ignore[arg-type]
    english = state_for(deps, user_name="Lin", action_summary="", new_info_by="bot",
                        new_info="You said the coffee here is too expensive")  # fmt: skip
    said = rewrite_rules(english, Context(), deps)["text"]  # type: ignore[arg-type]
    assert "where Lin is" in said and "小助手" not in said


def test_an_unconfigured_persona_is_named_in_the_chats_language(deps: Deps) -> None:
    assert state_for(deps)["persona_name"] == deps.limits.bot_name == "小助手"
    english = state_for(deps, action_summary="", new_info="I moved to Berlin last week")
    assert english["persona_name"] == deps.limits.bot_name_en
    assert deps.persona_names("default") == [deps.limits.bot_name]  # its id is no name either


def test_an_english_answer_is_remembered_in_english(deps: Deps) -> None:
    """The bot's action frames its answer in the answer's language: no 回复了 around English."""
    from nodes.reply.hand_off import reply_summary

    action = reply_summary("Lin", "Try the bakery on Main Street!")
    job = state_for(deps, user_name="Lin", action_summary=action,
                    new_info="Where can I get good bread?")  # fmt: skip
    text = rewrite_rules(job, Context(), deps)["text"]  # type: ignore[arg-type]
    assert text.startswith(f"{deps.limits.bot_name_en} replied to Lin: “Try the bakery")
    assert not has_cjk(text)
    assert reply_summary("小林", "试试那家面包店").startswith("我回复了小林：")
