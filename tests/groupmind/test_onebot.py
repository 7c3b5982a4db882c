"""The OneBot v11 bridge against an implementation stand-in written from the specification
(standins/onebot.py): reverse and forward WebSockets, both message forms, replies with
the right segments, echo matching, own messages ignored, malformed events skipped, a
dropped connection resumed, four chats at once, each in order."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from groupmind.onebot.brains import InProcessBrain
from groupmind.onebot.bridge import Bridge, Link, bearer
from groupmind.onebot.events import Malformed, answer_action, parse_cq, to_message
from groupmind.settings import Settings
from standins.onebot import SELF_ID, Implementation, group_event, private_event
from stores.journal import Journal, events

pytestmark = pytest.mark.slow
AT_BOT = {"type": "at", "data": {"qq": str(SELF_ID)}}


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(coro)


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "data": {"text": t}}


# --- events, alone ------------------------------------------------------------------------


def test_both_message_forms_read_the_same() -> None:
    array = group_event(1001, 20001, [
        {"type": "reply", "data": {"id": "555"}}, AT_BOT, text(" 看看这个 "),
        {"type": "face", "data": {"id": "14"}}, {"type": "image", "data": {"file": "a.jpg"}},
        {"type": "at", "data": {"qq": "20002", "name": "阿强"}}, text("[不是CQ码]"),
    ], card="小明")  # fmt: skip
    cq = {**array, "message": f"[CQ:reply,id=555][CQ:at,qq={SELF_ID}] 看看这个 [CQ:face,id=14]"
                             "[CQ:image,file=a.jpg][CQ:at,qq=20002,name=阿强]&#91;不是CQ码&#93;"}  # fmt: skip
    for event in (array, cq):
        m = to_message(event, self_id=str(SELF_ID), bot_id="bot")
        assert m["content"] == "看看这个 [表情][图片]@阿强 [不是CQ码]"
        assert m["mentions"] == ["bot", "20002"] and m["reply_to"] == "555"
        assert (m["user_name"], m["chat_id"], m["chat_type"]) == ("小明", "1001", "group")
    nick = to_message(private_event(20003, "hi"), self_id=str(SELF_ID), bot_id="bot")
    assert (nick["user_name"], nick["chat_id"]) == ("昵称20003", "20003")  # no card: nickname


def test_cq_escapes_and_malformed_events() -> None:
    assert parse_cq("a&amp;b[CQ:at,qq=1]") == [text("a&b"), {"type": "at", "data": {"qq": "1"}}]
    with pytest.raises(Malformed, match="message_id: missing"):
        to_message({"message_type": "group", "group_id": 1, "user_id": 2, "time": 1},
                   self_id="9", bot_id="bot")  # fmt: skip
    with pytest.raises(Malformed, match=r"message\[0\]: a segment"):
        to_message(private_event(1, [42]), self_id="9", bot_id="bot")


def test_answers_reply_to_the_message_and_at_its_sender_in_groups(tmp_path: Path) -> None:
    group = to_message(group_event(1001, 20001, "hi"), self_id="9", bot_id="bot")
    action, params = answer_action(group, {"action": "text_reply", "reply": "你好"})  # type: ignore[misc]
    assert action == "send_group_msg" and params["group_id"] == 1001
    assert params["message"] == [
        {"type": "reply", "data": {"id": group["message_id"]}},
        {"type": "at", "data": {"qq": "20001"}}, text(" "), text("你好"),
    ]  # fmt: skip
    dm = to_message(private_event(20002, "hi"), self_id="9", bot_id="bot")
    image = tmp_path / "s.png"
    image.write_bytes(b"\x89PNG")
    sticker = {"id": "hug", "description": "抱抱", "file": str(image), "face": "49"}
    action, params = answer_action(dm, {"action": "emoji_reply", "sticker": sticker})  # type: ignore[misc]
    assert action == "send_private_msg" and params["user_id"] == 20002
    assert params["message"][1]["data"]["file"] == "base64://iVBORw=="
    _, as_face = answer_action(dm, {"action": "emoji_reply", "sticker": sticker}, "face")  # type: ignore[misc]
    assert as_face["message"][1] == {"type": "face", "data": {"id": "49"}}
    assert answer_action(dm, {"action": "no_reply", "reply": ""}) is None


def test_responses_are_matched_by_echo() -> None:
    async def main() -> None:
        sent: list[dict[str, Any]] = []

        async def send(raw: str) -> None:
            sent.append(json.loads(raw))

        link = Link("1", send)
        first = asyncio.create_task(link.call("get_group_info", {"group_id": 1}))
        second = asyncio.create_task(link.call("get_group_info", {"group_id": 2}))
        await asyncio.sleep(0.05)
        for request in reversed(sent):  # answered out of order
            gid = request["params"]["group_id"]
            link.resolve(
                {"status": "ok", "retcode": 0, "data": {"gid": gid}, "echo": request["echo"]}
            )
        assert (await first)["data"]["gid"] == 1 and (await second)["data"]["gid"] == 2

    run(main())


# --- the bridge, end to end --------------------------------------------------------------


class SlowBrain:
    """The real brain, answering only after ``delay`` (to drop a connection meanwhile)."""

    def __init__(self, inner: InProcessBrain, delay: float) -> None:
        self.inner, self.delay = inner, delay

    async def answer(self, message: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(self.delay)
        return await self.inner.answer(message)

    async def close(self) -> None:
        await self.inner.close()


async def started(tmp_path: Path, delay: float = 0.0, **options: Any) -> tuple[Bridge, str, Any]:
    settings = Settings(_env_file=None, data_dir=tmp_path / "data")  # type: ignore[call-arg]
    brain: Any = await asyncio.to_thread(InProcessBrain, settings)
    journal = Journal(tmp_path / "data" / "onebot-journal.db")
    bridge = Bridge(SlowBrain(brain, delay) if delay else brain, journal, **options)
    server = await bridge.serve_reverse("127.0.0.1", 0)
    port = next(iter(server.sockets)).getsockname()[1]
    return bridge, f"ws://127.0.0.1:{port}/onebot/v11/ws", server


async def stopped(bridge: Bridge, server: Any) -> None:
    server.close()
    await server.wait_closed()
    await bridge.close()


def test_reverse_websocket_end_to_end(tmp_path: Path) -> None:
    async def main() -> None:
        bridge, url, server = await started(tmp_path, access_token="s3cret")
        for headers, status in (({}, 401), ({"Authorization": "Bearer nope"}, 403)):
            with pytest.raises(InvalidStatus) as refused:
                await connect(url, additional_headers={"X-Self-ID": "1", **headers})
            assert refused.value.response.status_code == status
        impl = Implementation(group_names={1001: "技术交流群"})
        await impl.dial(url, "s3cret")
        asked = group_event(1001, 20001, [AT_BOT, text(" 我下周三去北京出差")], card="小明")
        await impl.send(asked)
        await impl.send("{not json")  # malformed: skipped
        await impl.send({"post_type": "message", "message_type": "group", "user_id": 1})
        await impl.send(group_event(1001, SELF_ID, "我自己发的"))  # the bot's own
        await impl.send(
            {"post_type": "notice", "notice_type": "group_increase", "self_id": SELF_ID}
        )
        dm = private_event(20002, "[CQ:reply,id=77]你好呀[CQ:face,id=14]")
        await impl.send(dm)
        sends = await impl.wait_for(2)
        by_action = {a["action"]: a["params"] for a in sends}
        group = by_action["send_group_msg"]
        assert group["group_id"] == 1001
        assert group["message"][:2] == [
            {"type": "reply", "data": {"id": str(asked["message_id"])}},
            {"type": "at", "data": {"qq": "20001"}},
        ]
        assert group["message"][-1]["data"]["text"].startswith("[离线规则回复] 小明")
        private = by_action["send_private_msg"]
        assert private["user_id"] == 20002 and private["message"][0]["data"]["id"] == str(
            dm["message_id"]
        )
        assert all(a["type"] != "at" for a in private["message"])
        await asyncio.sleep(0.5)
        assert len(impl.sent("send_")) == 2 and bridge.skipped == 2  # own messages: no answer
        assert len(impl.sent("get_group_info")) == 1  # asked once, remembered
        inner: Any = bridge.brain
        stored = inner.session.deps.messages.get(
            "qq:private:20002", "default", [str(dm["message_id"])]
        )
        assert stored[0].reply_to == "77" and stored[0].content == "你好呀[表情]"
        jobs = inner.session.jobs.list()
        assert any(j.payload.get("chat_name") == "技术交流群" for j in jobs)
        await impl.hang_up()
        await stopped(bridge, server)

    run(main())


def test_a_dropped_connection_is_resumed_and_nothing_is_lost(tmp_path: Path) -> None:
    async def main() -> None:
        bridge, url, server = await started(tmp_path, delay=1.0)
        impl = Implementation()
        await impl.dial(url)
        await impl.send(private_event(20005, "在吗"))
        await asyncio.sleep(0.2)
        await impl.hang_up()  # gone before the answer is ready
        await asyncio.sleep(1.5)
        again = Implementation()
        await again.dial(url)
        (sent,) = await again.wait_for(1)
        assert sent["action"] == "send_private_msg" and sent["params"]["user_id"] == 20005
        await again.hang_up()
        await stopped(bridge, server)

    run(main())


def test_four_chats_at_once_each_in_order(tmp_path: Path) -> None:
    async def main() -> None:
        bridge, url, server = await started(tmp_path)
        impl = Implementation()
        await impl.dial(url)
        order: dict[int, list[str]] = {}
        for n in range(5):
            for user in (30001, 30002, 30003, 30004):
                event = private_event(user, f"第{n}条")
                order.setdefault(user, []).append(str(event["message_id"]))
                await impl.send(event)
        sends = await impl.wait_for(20, timeout=120)
        assert len(sends) == 20
        for user, ids in order.items():
            answered = [a["params"]["message"][0]["data"]["id"] for a in sends
                        if a["params"]["user_id"] == user]  # fmt: skip
            assert answered == ids  # every message answered once, in order
        await impl.hang_up()
        await stopped(bridge, server)

    run(main())


def test_forward_websocket_reconnects(tmp_path: Path) -> None:
    async def main() -> None:
        settings = Settings(_env_file=None, data_dir=tmp_path / "data")  # type: ignore[call-arg]
        brain = await asyncio.to_thread(InProcessBrain, settings)
        bridge = Bridge(brain, Journal(tmp_path / "journal.db"), access_token="tok")
        impl = Implementation()
        listening = await impl.listen(token="tok")
        port = next(iter(listening.sockets)).getsockname()[1]
        stop = asyncio.Event()
        dialing = asyncio.create_task(bridge.connect_forward(f"ws://127.0.0.1:{port}", stop))
        await asyncio.wait_for(bridge.linked.wait(), 10)
        await impl.send(private_event(20007, "你好"))
        assert len(await impl.wait_for(1)) == 1
        listening.close()  # the implementation restarts
        await listening.wait_closed()
        bridge.linked.clear()
        listening = await impl.listen(port=port, token="tok")
        await asyncio.wait_for(bridge.linked.wait(), 20)
        await impl.send(private_event(20007, "又来了"))
        assert len(await impl.wait_for(2)) == 2
        assert str(SELF_ID) in bridge.links  # learned from the events
        stop.set()
        await dialing
        listening.close()
        await bridge.close()

    run(main())


def test_one_connection_per_account_unless_the_token_says_so(tmp_path: Path) -> None:
    async def main() -> None:
        bridge, url, server = await started(tmp_path)  # no token: loopback only
        first = Implementation()
        await first.dial(url)
        await asyncio.wait_for(bridge.linked.wait(), 5)
        with pytest.raises(InvalidStatus) as refused:
            await Implementation().dial(url)
        assert refused.value.response.status_code == 409
        await first.hang_up()
        await stopped(bridge, server)
        bridge, url, server = await started(tmp_path / "t", access_token="tok")
        old, new = Implementation(), Implementation()
        await old.dial(url, "tok")
        await asyncio.sleep(0.2)
        await new.dial(url, "tok")  # with the token it takes over; the old one is closed
        await asyncio.sleep(0.2)
        await new.send(private_event(20009, "在吗"))
        assert len(await new.wait_for(1)) == 1 and old.sent("send_") == []
        await new.hang_up()
        await stopped(bridge, server)

    run(main())


def test_the_token_scheme_is_read_in_any_case() -> None:
    for header in ("Bearer tok", "bearer tok", "BEARER  tok ", "Token tok"):
        assert bearer(header) == "tok"
    assert bearer("Basic tok") == "" and bearer("") == ""


def test_idle_chats_give_back_their_task_and_queue(tmp_path: Path) -> None:
    async def main() -> None:
        bridge, url, server = await started(tmp_path, idle_s=0.3)
        impl = Implementation()
        await impl.dial(url)
        for user in range(30011, 30016):
            await impl.send(private_event(user, "你好"))
        await impl.wait_for(5)
        await asyncio.sleep(1.0)
        assert bridge.chats == {} and bridge.workers == {}
        await impl.send(private_event(30011, "又来了"))  # a chat comes back: served again
        assert len(await impl.wait_for(6)) == 6
        await impl.hang_up()
        await stopped(bridge, server)

    run(main())


def test_quoting_the_bot_addresses_it_and_ats_read_as_names(tmp_path: Path) -> None:
    async def main() -> None:
        bridge, url, server = await started(tmp_path)
        impl = Implementation(members={20012: "阿强"})
        await impl.dial(url)
        first = group_event(1001, 20011, [AT_BOT, text(" 在吗")])
        await impl.send(first)
        await impl.wait_for(1)
        await asyncio.sleep(0.3)  # the implementation's id for the answer is journaled
        with bridge.journal.engine.connect() as conn:
            (sent_id,) = conn.execute(select(events.c.sent_id)).scalars().all()
        assert sent_id is not None
        # The user quotes the bot's answer (no @ of the bot) and @s a member.
        quote = {"type": "reply", "data": {"id": sent_id}}
        at = {"type": "at", "data": {"qq": "20012"}}
        asked = group_event(1001, 20011, [quote, text("你说的是哪天？"), at])
        await impl.send(asked)
        assert len(await impl.wait_for(2)) == 2  # answered: a reply to the bot is for it
        inner: Any = bridge.brain
        (stored,) = inner.session.deps.messages.get("qq:group:1001", "default",
                                                    [str(asked["message_id"])])  # fmt: skip
        assert stored.reply_to == f"{first['message_id']}#reply"
        assert stored.content == "你说的是哪天？@阿强" and "20012" in stored.mentions
        await impl.hang_up()
        await stopped(bridge, server)

    run(main())


def test_an_answer_whose_confirmation_was_lost_is_not_sent_again(tmp_path: Path) -> None:
    async def main() -> None:
        bridge, url, server = await started(tmp_path)
        impl = Implementation(hang_up_on_send=1)  # takes the send, drops before answering
        await impl.dial(url)
        await impl.send(private_event(20013, "在吗"))
        await impl.wait_for(1)
        await asyncio.sleep(0.5)
        again = Implementation()
        await again.dial(url)
        await again.send(private_event(20013, "还在吗"))
        await again.wait_for(1)
        await asyncio.sleep(1.0)
        answered = [a["params"]["message"][0]["data"]["id"] for a in impl.actions + again.actions
                    if a["action"].startswith("send_")]  # fmt: skip
        assert len(answered) == len(set(answered)) == 2  # each answered once, none resent
        assert bridge.journal.counts() == {"unconfirmed": 1, "sent": 1}
        await again.hang_up()
        await stopped(bridge, server)

    run(main())


def test_the_bridge_answers_its_root_and_metrics_behind_a_key(tmp_path: Path) -> None:
    import urllib.error
    import urllib.request

    def fetch(url: str, **headers: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(
                urllib.request.Request(url, headers=headers), timeout=10
            ) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    async def main() -> None:
        bridge, url, server = await started(
            tmp_path, access_token="s3cret", metrics_key="the-bots-key-0123456789"
        )
        base = url.replace("ws://", "http://").removesuffix("/onebot/v11/ws")
        impl = Implementation(group_names={1001: "技术交流群"})
        await impl.dial(url, "s3cret")
        await impl.send(group_event(1001, 20001, [AT_BOT, text(" 在吗")], card="小明"))
        await impl.send(private_event(20002, "你好呀"))
        await impl.wait_for(2)
        await asyncio.sleep(0.3)  # the second confirmation is counted after it is journaled
        status, body = await asyncio.to_thread(fetch, f"{base}/")
        assert status == 200 and "/metrics" in body  # not a 404
        assert (await asyncio.to_thread(fetch, f"{base}/metrics"))[0] == 401
        assert (await asyncio.to_thread(fetch, f"{base}/metrics", Authorization="Bearer no"))[
            0
        ] == 401
        for auth in ({"Authorization": "Bearer s3cret"}, {"X-Api-Key": "the-bots-key-0123456789"}):
            status, body = await asyncio.to_thread(fetch, f"{base}/metrics", **auth)
            assert status == 200, body
            assert f'groupmind_bridge_connected{{bot="bot",self_id="{SELF_ID}"}} 1.0' in body
            assert 'groupmind_bridge_messages_total{bot="bot"} 2.0' in body
            assert 'groupmind_bridge_sent_total{bot="bot"} 2.0' in body
            assert 'groupmind_bridge_backlog{bot="bot"} 0.0' in body
        await impl.hang_up()
        await asyncio.sleep(0.2)
        _, body = await asyncio.to_thread(fetch, f"{base}/metrics", Authorization="Bearer s3cret")
        assert "groupmind_bridge_connected{" not in body  # gone with its connection
        await stopped(bridge, server)

    run(main())
