"""Held postings: BM25 from memory answers what SQL answers, after any writes."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine

from stores.base import EventQuery, EventRecord
from stores.scope_postings import ScopePostings
from stores.sql import lexical
from stores.sql.engine import make_engine, migrate
from stores.sql.lexical import SqlLexicalIndex

WORDS = ["北京", "出差", "橘猫", "疫苗", "考研", "跑步", "显卡", "论文", "火锅", "吉他"]
USERS = ["小明", "阿强", "莉莉"]


def event(n: int, words: list[str], chat: str = "1001", persona: str = "default") -> EventRecord:
    return EventRecord(
        id=f"e{n}", text="".join(words) or "嗯", timestamp=1_790_000_000.0 + n,
        user_id=f"u{n % 3}", user_name=USERS[n % 3], platform="qq", chat_type="group",
        chat_id=chat, persona_id=persona,
    )  # fmt: skip


def query(text: str, chat: str = "1001") -> EventQuery:
    return EventQuery(
        text=text, platform="qq", chat_type="group", chat_id=chat, persona_id="default", top_k=5
    )


def searched(index: SqlLexicalIndex, q: EventQuery) -> list[tuple[str, float]]:
    members = index.scope_members(q, 10**6)
    return [(h.event.id, h.score) for h in index.search(q, members)]


def same(held: list[tuple[str, float]], sql: list[tuple[str, float]]) -> None:
    assert [i for i, _ in held] == [i for i, _ in sql]
    for (_, a), (_, b) in zip(held, sql, strict=True):
        assert math.isclose(a, b, rel_tol=1e-9)


texts = st.lists(st.sampled_from(WORDS), min_size=0, max_size=4)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.lists(texts, min_size=1, max_size=6)),
        st.tuples(st.sampled_from(["rewrite", "remove"]), st.tuples(st.integers(0, 999), texts)),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=40, deadline=None)
@given(steps, st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))
def test_held_bm25_equals_sql_after_any_writes(
    ops: list[tuple[str, Any]], asked: list[str]
) -> None:
    before = lexical.PRUNE_FROM_DOCS
    lexical.PRUNE_FROM_DOCS = 4  # the large-scope pruning too, at a test's size
    try:
        with tempfile.TemporaryDirectory() as tmp:
            engine = make_engine(f"sqlite:///{Path(tmp) / 'gm.db'}")
            migrate(engine)
            held = SqlLexicalIndex(engine, bot="b", held=ScopePostings(background=False))
            sql = SqlLexicalIndex(engine, bot="b")
            other = [event(900 + n, ["北京", "出差"], chat="2002") for n in range(3)]
            held.upsert_many(other)  # another chat's memories: never counted or found
            alive: list[int] = []
            serial = 0
            for op, arg in ops:
                if op == "add":
                    new = [event(serial + k, words) for k, words in enumerate(arg)]
                    serial += len(arg)
                    held.upsert_many(new)
                    alive += [serial - len(arg) + k for k in range(len(arg))]
                elif alive and op == "rewrite":
                    held.upsert_many([event(alive[arg[0] % len(alive)], arg[1])])
                elif alive:
                    held.remove([f"e{alive.pop(arg[0] % len(alive))}"])
                q = query("".join(asked))
                same(searched(held, q), searched(sql, q))
            engine.dispose()
    finally:
        lexical.PRUNE_FROM_DOCS = before


@pytest.fixture
def index(engine: Engine) -> SqlLexicalIndex:  # SQLite and PostgreSQL
    return SqlLexicalIndex(engine, bot="b", held=ScopePostings(background=False))


def test_new_memories_are_appended_and_a_rewrite_rebuilds(
    index: SqlLexicalIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[int | None] = []
    read = index._scope_postings

    def counted(q: EventQuery, ids: Any) -> list[Any]:
        reads.append(None if ids is None else len(ids))
        return read(q, ids)

    monkeypatch.setattr(index, "_scope_postings", counted)
    index.upsert_many([event(n, ["北京", "火锅"]) for n in range(10)])
    q = query("北京火锅")
    assert len(searched(index, q)) == 5 and reads == [None]  # built once, whole
    index.upsert_many([event(10, ["北京", "考研"]), event(11, ["吉他"])])
    assert [i for i, _ in searched(index, query("考研"))] == ["e10"]
    assert reads == [None, 2]  # the two new memories' postings only
    index.upsert_many([event(3, ["吉他"])])  # a rewrite: its old terms must go
    assert "e3" not in [i for i, _ in searched(index, q)]
    assert reads == [None, 2, None]  # rebuilt
    assert sorted(i for i, _ in searched(index, query("吉他"))) == ["e11", "e3"]
    # held behind the member list by two writes (a build that finished late): appended
    index.upsert_many([event(12, ["论文"])])
    index.scope_members(q, 10**6)  # the list moves on; the held postings do not
    index.upsert_many([event(13, ["论文"])])
    assert sorted(i for i, _ in searched(index, query("论文"))) == ["e12", "e13"]
    assert reads == [None, 2, None, 2]


def test_a_scope_being_built_is_answered_by_sql(sqlite_engine: Engine) -> None:
    postings = ScopePostings(background=True)
    index = SqlLexicalIndex(sqlite_engine, bot="b", held=postings)
    index.upsert_many([event(n, ["北京"]) for n in range(6)])
    q = query("北京")
    first = searched(index, q)  # SQL, while the scope loads in the background
    assert [i for i, _ in first] == ["e0", "e1", "e2", "e3", "e4"]
    key = ("b", q.scope, q.persona_id)
    postings._loader.join()  # type: ignore[union-attr]
    assert postings.holds(key)
    same(searched(index, q), first)


def test_appends_still_follow_when_sqlites_key_index_is_not_there(
    sqlite_engine: Engine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(lexical, "SQLITE_TERMS_KEY", "no_such_index")
    index = SqlLexicalIndex(sqlite_engine, bot="b", held=ScopePostings(background=False))
    index.upsert_many([event(n, ["北京"]) for n in range(6)])
    searched(index, query("北京"))
    index.upsert_many([event(6, ["北京", "考研"])])
    assert [i for i, _ in searched(index, query("考研"))] == ["e6"]
    assert "reading postings by plan" in caplog.text  # appended, by SQLite's own plan
    assert "could not follow" not in caplog.text
    same(
        searched(index, query("北京")),
        searched(SqlLexicalIndex(sqlite_engine, bot="b"), query("北京")),
    )
