"""Ties between members through the command line: replayed messages (replies and @s
among four people), a question naming two of them, the circle a profile shows, and a
forget that takes a person's ties with them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.groupmind.test_cli import cli_on, lines, write_jsonl

NAMES = {"u1": "小明", "u2": "小红", "u3": "阿杰", "u4": "老王"}


def message(n: int, uid: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"message_id": f"m{n}", "platform": "qq", "chat_type": "group", "chat_id": "g1",
            "user_id": uid, "user_name": NAMES[uid], "content": content,
            "timestamp": 1_772_000_000 + 60 * n, **extra}  # fmt: skip


CHAT = [
    message(1, "u3", "周末有人去爬山吗"),
    message(2, "u4", "我去，阿杰几点出发", mentions=["u3"]),
    message(3, "u1", "小红是我同事，她说想去"),
    message(4, "u2", "对啊，我请了假", reply_to="m3"),
    message(5, "u1", "那我们一起坐地铁过去吧", reply_to="m4"),
    message(6, "u3", "老王带点水", mentions=["u4"]),
    message(7, "u4", "没问题，我买了一箱矿泉水", reply_to="m6"),
    message(8, "u2", "不对，小明上次你说要开车", reply_to="m5"),
    message(9, "u3", "我周末还要去超市买菜"),
    message(10, "u4", "我最近在学做菜"),
    message(11, "u1", "阿杰你说的那个游戏好玩吗", reply_to="m9"),
    message(12, "u2", "老王做菜记得叫我尝尝", reply_to="m10"),
    message(13, "u1", "我最近在追一部美剧"),
    message(14, "u2", "我最近在学吉他，手指好疼"),
]


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    # a job a message; the side of ties between the people named, on (off by default)
    run = cli_on(tmp_path / "data", monkeypatch, chat__buffer_max="1", search__zh__between="1")
    result = run("replay", str(write_jsonl(tmp_path / "chat.jsonl", CHAT)), "--json")
    assert result.exit_code == 0, result.output
    return run


def test_a_question_naming_two_members_finds_their_exchange(cli: Any) -> None:
    result = cli("search", "小明和小红最近怎么样", "--chat-type", "group", "--chat-id", "g1",
                 "--top-k", "3", "--json")  # fmt: skip
    hits = lines(result.stdout)[0]
    others = ("美剧", "吉他", "游戏", "尝尝")  # their talk with others, or on their own
    texts = [hit["text"] for hit in hits]
    assert {hit["metadata"]["user_id"] for hit in hits} <= {"u1", "u2"}, texts
    assert len(hits) == 3 and not any(word in text for text in texts for word in others), texts


def test_a_profile_shows_the_circle_and_forget_takes_a_persons_ties(cli: Any) -> None:
    where = ("--chat-type", "group", "--chat-id", "g1", "--json")
    circle = lines(cli("profile", "u1", *where).stdout)[0]["circle"]
    hong = next(c for c in circle if c["user_id"] == "u2")
    assert hong["labels"] == ["同事"] and hong["counts"]["replied"] >= 1
    assert hong["counts"]["argued_by"] == 1 and hong["counts"]["agreed_by"] == 1
    assert circle[0]["user_id"] == "u2"  # the most tied first
    wang = lines(cli("profile", "u4", *where).stdout)[0]["circle"]
    assert [c["user_id"] for c in wang][:1] == ["u3"]  # 阿杰: answered, @-ed both ways
    forgot = cli("forget", "--user-id", "u2", "--yes", "--json")
    assert forgot.exit_code == 0, forgot.output
    after = lines(cli("profile", "u1", *where).stdout)[0]["circle"]
    assert "u2" not in {c["user_id"] for c in after}
