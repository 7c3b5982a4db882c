"""Relationships, per-chat learned profiles and group profiles in SQL, written with
optimistic concurrency.

Every row carries a ``version``. A change is applied in one transaction that first claims
its request id in ``profile_merges`` (so a re-run applies nothing) and then updates each
row only if its version is still the one that was read. A concurrent writer makes the
update match nothing: the whole transaction rolls back and the caller re-reads and
recomputes. No update is lost on SQLite or on PostgreSQL with many processes, and no lock
is held while a model thinks.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from domain.scope import ChatScope, ForgetTarget
from stores import topics
from stores.base import (
    Clock,
    GroupProfile,
    LearnedProfile,
    ProfileChange,
    ProfileConflict,
    Relationship,
)
from stores.sql.covered import BOT, covered, mine, tenant
from stores.sql.engine import reads
from stores.sql.schema import (
    Base,
    GroupProfileRow,
    LearnedProfileRow,
    ProfileMergeRow,
    UnscopedProfileRow,
    UserRelationshipRow,
)
from stores.text import has_cjk


class SqlProfileStore:
    """One bot's people and groups."""

    def __init__(self, engine: Engine, *, bot: str, clock: Clock = time.time) -> None:
        self.engine = engine
        self.reads = reads(engine)  # single reads: no transaction (stores/sql/engine.py)
        self.bot = tenant(bot)
        self.clock = clock

    def _one(self, table: type[Base], **key: str) -> Any:
        """The row of ``table`` with this key (its ``_KEYS``), or None."""
        params = {"k_bot": self.bot, **{f"k_{k}": v for k, v in key.items()}}
        with self.reads.connect() as conn:
            return conn.execute(_GET[table], params).first()

    def get_relationship(self, platform: str, user_id: str) -> Relationship | None:
        row = self._one(UserRelationshipRow, platform=platform, user_id=user_id)
        if row is None:
            return None
        return Relationship(
            platform=row.platform,
            user_id=row.user_id,
            user_name=row.user_name,
            aliases=list(row.aliases or []),
            relationship_score=row.relationship_score,
            relationship_stage=row.relationship_stage,
            first_met_time=row.first_met_time,
            last_impression_update=row.last_impression_update,
            version=row.version,
        )

    def learned_about(self, platform: str, user_id: str) -> list[LearnedProfile]:
        params = {"k_bot": self.bot, "k_platform": platform, "k_user_id": user_id}
        with self.reads.connect() as conn:
            return [_learned(row) for row in conn.execute(_ABOUT, params)]

    def get_learned(self, scope: ChatScope, user_id: str) -> LearnedProfile | None:
        row = self._one(
            LearnedProfileRow,
            platform=scope.platform,
            user_id=user_id,
            chat_type=scope.chat_type,
            chat_id=scope.chat_id,
        )
        return None if row is None else _learned(row)

    def get_group(self, platform: str, group_id: str) -> GroupProfile | None:
        row = self._one(GroupProfileRow, platform=platform, group_id=group_id)
        if row is None:
            return None
        return GroupProfile(
            platform=row.platform,
            group_id=row.group_id,
            name=row.group_name,
            summary=row.summary,
            traits=dict(row.traits or {}),
            updated_at=row.updated_at,
            version=row.version,
        )

    def unscoped(self, platform: str, user_id: str) -> dict[str, Any] | None:
        """Content from before profiles had provenance (migration 0006): for the operator."""
        row = self._one(UnscopedProfileRow, platform=platform, user_id=user_id)
        if row is None:
            return None
        keys = ("learned_in", "impression_text", "key_facts", "preference_keywords")
        return {k: getattr(row, k) for k in (*keys, "summary", "traits")}

    def was_applied(self, request_id: str) -> bool:
        return self._one(ProfileMergeRow, request_id=request_id) is not None

    def apply(self, change: ProfileChange) -> bool:
        now = self.clock()
        rel, learned, group = change.relationship, change.learned, change.group
        try:
            with self.engine.begin() as conn:
                # Written first: on SQLite the transaction takes the write lock at once.
                conn.execute(
                    _INSERT[ProfileMergeRow],
                    {
                        "bot_id": self.bot,
                        "request_id": change.request_id,
                        "platform": rel.platform,
                        "user_id": rel.user_id,
                        "applied_at": now,
                    },
                )
                _write(
                    conn,
                    UserRelationshipRow,
                    rel.version,
                    {
                        "bot_id": self.bot,
                        "platform": rel.platform,
                        "user_id": rel.user_id,
                        "user_name": rel.user_name,
                        "aliases": rel.aliases,
                        "relationship_score": rel.relationship_score,
                        "relationship_stage": rel.relationship_stage,
                        "first_met_time": rel.first_met_time,
                        "last_impression_update": rel.last_impression_update,
                        "updated_at": now,
                    },
                )
                for one in (learned, *change.others):
                    self._write_learned(conn, one, now)
                if group is not None:
                    _write(
                        conn,
                        GroupProfileRow,
                        group.version,
                        {
                            "bot_id": self.bot,
                            "platform": group.platform,
                            "group_id": group.group_id,
                            "group_name": group.name,
                            "summary": group.summary,
                            "traits": group.traits,
                            "updated_at": now,
                        },
                    )
        except IntegrityError:
            if self.was_applied(change.request_id):
                return False
            raise ProfileConflict(f"user {rel.user_id}: created concurrently") from None
        return True

    def _write_learned(self, conn: Connection, one: LearnedProfile, now: float) -> None:
        _write(
            conn,
            LearnedProfileRow,
            one.version,
            {
                "bot_id": self.bot,
                "platform": one.platform,
                "user_id": one.user_id,
                "chat_type": one.chat_type,
                "chat_id": one.chat_id,
                "chat_name": one.chat_name,
                "user_name": one.user_name,
                "impression_text": one.impression_text,
                "key_facts": one.key_facts,
                "preference_keywords": one.preference_keywords,
                "summary": one.summary,
                "traits": one.traits,
                "updated_at": now,
            },
        )

    def forget(self, target: ForgetTarget) -> dict[str, int]:
        """A person everywhere: their relationship, every chat's profile of them and the old
        unscoped content. A person in one chat: that chat's profile of them. A chat: what
        was learned in it about anyone, and its group profile."""
        removed: dict[str, int] = {}
        learned = covered(LearnedProfileRow, target, self.bot)
        with self.engine.begin() as conn:
            if target.user_id is not None:
                removed["group_profiles_rebuilt"] = self._rebuild_groups(conn, target)
                removed["facts_they_told_removed"] = self._scrub_told(conn, target)
            removed["learned_profiles"] = conn.execute(
                delete(LearnedProfileRow).where(*learned)
            ).rowcount
            if target.user_id is not None and target.chat is None:
                person = (mine(UserRelationshipRow, self.bot),
                          UserRelationshipRow.platform == target.platform,
                          UserRelationshipRow.user_id == target.user_id)  # fmt: skip
                removed["relationships"] = conn.execute(
                    delete(UserRelationshipRow).where(*person)
                ).rowcount
                removed["unscoped_profiles"] = conn.execute(
                    delete(UnscopedProfileRow).where(
                        mine(UnscopedProfileRow, self.bot),
                        UnscopedProfileRow.platform == target.platform,
                        UnscopedProfileRow.user_id == target.user_id,
                    )
                ).rowcount
                conn.execute(
                    delete(ProfileMergeRow).where(
                        mine(ProfileMergeRow, self.bot),
                        ProfileMergeRow.platform == target.platform,
                        ProfileMergeRow.user_id == target.user_id,
                    )
                )
            if target.user_id is None and target.chat is not None:
                chat = target.chat
                removed["group_profiles"] = (
                    conn.execute(
                        delete(GroupProfileRow).where(
                            mine(GroupProfileRow, self.bot),
                            GroupProfileRow.platform == chat.platform,
                            GroupProfileRow.group_id == chat.chat_id,
                        )
                    ).rowcount
                    if chat.chat_type == "group"
                    else 0
                )
        return removed

    def _scrub_told(self, conn: Any, target: ForgetTarget) -> int:
        """What the person said about others (小明是医生, said by them, is in 小明's profile,
        ``by`` them): taken out, with its history; the summary that may quote it is cleared
        (the next merge writes it again)."""
        where = [mine(LearnedProfileRow, self.bot), LearnedProfileRow.platform == target.platform,
                 LearnedProfileRow.user_id != target.user_id]  # fmt: skip
        if target.chat is not None:
            where += [LearnedProfileRow.chat_type == target.chat.chat_type,
                      LearnedProfileRow.chat_id == target.chat.chat_id]  # fmt: skip
        removed = 0
        for row in conn.execute(select(LearnedProfileRow).where(*where)).all():
            facts = [f for f in row.key_facts or [] if f.get("by") != target.user_id]
            traits = dict(row.traits or {})
            history = [f for f in traits.get("history", []) if f.get("by") != target.user_id]
            gone = len(row.key_facts or []) - len(facts)
            if not gone and len(history) == len(traits.get("history", [])):
                continue
            removed += gone
            traits["history"] = history
            traits.pop("key_facts", None)
            conn.execute(
                update(LearnedProfileRow)
                .where(
                    *where,
                    LearnedProfileRow.user_id == row.user_id,
                    LearnedProfileRow.chat_type == row.chat_type,
                    LearnedProfileRow.chat_id == row.chat_id,
                )  # fmt: skip
                .values(key_facts=facts, traits=traits, summary="", version=row.version + 1)
            )
        return removed

    def _rebuild_groups(self, conn: Any, target: ForgetTarget) -> int:
        """The group profiles a person's words may be in, rebuilt without them: the topics
        from everyone else's counts, the summary from those topics (a model's summary of
        the group cannot be told apart by speaker, so it gives way), no model traits."""
        assert target.user_id is not None
        where = [mine(GroupProfileRow, self.bot), GroupProfileRow.platform == target.platform]
        if target.chat is not None:
            if target.chat.chat_type != "group":
                return 0
            where.append(GroupProfileRow.group_id == target.chat.chat_id)
        learned_in = set(
            conn.execute(
                select(LearnedProfileRow.chat_id).where(
                    *covered(LearnedProfileRow, target, self.bot),
                    LearnedProfileRow.chat_type == "group",
                )
            ).scalars()
        )
        rebuilt = 0
        for row in conn.execute(select(GroupProfileRow).where(*where)).all():
            traits = dict(row.traits or {})
            kept = topics.without(traits, target.user_id)
            if kept is None and row.group_id not in learned_in:
                continue  # nothing of theirs here
            kept = kept or {k: v for k, v in traits.items() if k.startswith("_") or k == "topics"}
            kept = {k: v for k, v in kept.items() if k.startswith("_") or k == "topics"}
            top = list(kept.get("topics") or [])
            zh = has_cjk(row.group_name) or any(has_cjk(t) for t in top)
            conn.execute(
                update(GroupProfileRow)
                .where(*where, GroupProfileRow.group_id == row.group_id)
                .values(
                    traits=kept,
                    summary=topics.summary_of(row.group_name, top, zh),
                    version=row.version + 1,
                    updated_at=self.clock(),
                )
            )
            rebuilt += 1
        return rebuilt


def _learned(row: Any) -> LearnedProfile:
    return LearnedProfile(
        platform=row.platform,
        user_id=row.user_id,
        chat_type=row.chat_type,
        chat_id=row.chat_id,
        chat_name=row.chat_name,
        user_name=row.user_name,
        impression_text=row.impression_text or "",
        key_facts=[dict(f) for f in row.key_facts or []],
        preference_keywords=list(row.preference_keywords or []),
        summary=row.summary or "",
        traits=dict(row.traits or {}),
        updated_at=row.updated_at,
        version=row.version,
    )


def _write(conn: Connection, table: type[Base], read_version: int, values: dict[str, Any]) -> None:
    """Insert when the row did not exist when read (version 0), else compare-and-set: the
    row of this bot and key (``values``' own) at the version read."""
    if read_version == 0:
        conn.execute(_INSERT[table], {**values, "version": 1})
        return
    key = {"k_bot": values["bot_id"], **{f"k_{k}": values[k] for k in _KEYS[table]}}
    result = conn.execute(
        _CAS[table], {**values, **key, "k_version": read_version, "version": read_version + 1}
    )
    if result.rowcount != 1:
        raise ProfileConflict(f"{table.__tablename__}: changed since it was read")


# Every memory job reads and writes these: statements built once at import, bound per call
# (stores/sql/covered.py: BOT); a row's key columns, bound as ``k_<column>``.
_KEYS: dict[type[Base], tuple[str, ...]] = {
    UserRelationshipRow: ("platform", "user_id"),
    LearnedProfileRow: ("platform", "user_id", "chat_type", "chat_id"),
    GroupProfileRow: ("platform", "group_id"),
    UnscopedProfileRow: ("platform", "user_id"),
    ProfileMergeRow: ("request_id",),
}


def _keyed(table: Any) -> list[Any]:
    return [mine(table, BOT), *(getattr(table, k) == bindparam(f"k_{k}") for k in _KEYS[table])]


_GET = {table: select(table).where(*_keyed(table)) for table in _KEYS}
_CAS: dict[type[Base], Any] = {  # SET: the columns the parameters name
    table: update(table).where(*_keyed(table), table.version == bindparam("k_version"))
    for table in (UserRelationshipRow, LearnedProfileRow, GroupProfileRow)
}
_INSERT = {table: insert(table) for table in _KEYS}
_ABOUT = select(LearnedProfileRow).where(
    mine(LearnedProfileRow, BOT),
    LearnedProfileRow.platform == bindparam("k_platform"),
    LearnedProfileRow.user_id == bindparam("k_user_id"),
)
