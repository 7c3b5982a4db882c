"""A scope's member list (``SqlLexicalIndex.scope_members``): what a held chat keeps for
as long as the process lives, read once and then grown by what is written since."""

from __future__ import annotations

import gc
from dataclasses import replace

import pytest
from sqlalchemy import Engine

from stores.base import EventQuery, EventRecord
from stores.sql import SqlLexicalIndex

NAMES = {"u0": "小明", "u1": "莉莉", "u2": "阿强"}


def event(n: int) -> EventRecord:
    user = f"u{n % 3}"
    return EventRecord(id=f"e{n}", text=f"第{n}条：周末去爬山", timestamp=1e9 + n,
                       user_id=user, user_name=NAMES[user], platform="qq", chat_type="group",
                       chat_id="g1", persona_id="default")  # fmt: skip


QUERY = EventQuery(text="爬山", platform="qq", chat_type="group", chat_id="g1",
                   persona_id="default")  # fmt: skip


def test_a_listed_scope_leaves_no_object_per_memory_for_the_collector(engine: Engine) -> None:
    """A full garbage collection visits every tracked object; a 20k chat's list of one
    named tuple per memory made each one of a 1M process ~10 ms longer (docs/benchmarks/scale.md)."""
    index = SqlLexicalIndex(engine, bot="bot-a")
    index.upsert_many([event(n) for n in range(3000)], [[1.0] * 8] * 3000)
    index.scope_members(replace(QUERY, chat_id="g2"), 10_000)  # SQLAlchemy's first-use setup
    gc.collect()
    before = len(gc.get_objects())
    members = index.scope_members(QUERY, 10_000)
    gc.collect()
    assert members is not None and len(members.ids) == 3000
    assert len(gc.get_objects()) - before < 100  # not one (or more) per memory
    assert members.said_by["e4"] == ("u1", "莉莉") and members.written["e4"] > 0


def test_a_grown_list_knows_who_said_the_new_memories(engine: Engine) -> None:
    index = SqlLexicalIndex(engine, bot="bot-a")
    index.upsert_many([event(n) for n in range(30)], [[1.0] * 8] * 30)
    first = index.scope_members(QUERY, 1000)
    renamed = replace(event(30), user_name="强哥")
    index.upsert_many([renamed], [[1.0] * 8])
    grown = index.scope_members(QUERY, 1000)
    assert first is not None and grown is not None
    assert grown.grown_from == first.version and "e30" in grown.since  # from the last write on
    assert grown.said_by["e30"] == ("u0", "强哥") and len(grown.ids) == 31
    people = index.scope_people(QUERY, grown)
    assert people.share["u0"] == pytest.approx(11 / 31)  # e0, e3 … e30
    assert people.names["小明"] == people.names["强哥"] == "u0"
