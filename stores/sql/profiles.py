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

from sqlalchemy import Engine, delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from stores.base import (
    ChatScope,
    Clock,
    ForgetTarget,
    GroupProfile,
    LearnedProfile,
    ProfileChange,
    ProfileConflict,
    Relationship,
)
from stores.sql.covered import covered
from stores.sql.schema import (
    Base,
    GroupProfileRow,
    LearnedProfileRow,
    ProfileMergeRow,
    UnscopedProfileRow,
    UserRelationshipRow,
)


class SqlProfileStore:
    def __init__(self, engine: Engine, *, clock: Clock = time.time) -> None:
        self.engine = engine
        self.clock = clock

    def get_relationship(self, platform: str, user_id: str) -> Relationship | None:
        with Session(self.engine) as s:
            row = s.get(UserRelationshipRow, (platform, user_id))
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
        query = select(LearnedProfileRow).where(
            LearnedProfileRow.platform == platform, LearnedProfileRow.user_id == user_id
        )
        with Session(self.engine) as s:
            return [_learned(row) for row in s.scalars(query)]

    def get_learned(self, scope: ChatScope, user_id: str) -> LearnedProfile | None:
        key = (scope.platform, user_id, scope.chat_type, scope.chat_id)
        with Session(self.engine) as s:
            row = s.get(LearnedProfileRow, key)
            return None if row is None else _learned(row)

    def get_group(self, platform: str, group_id: str) -> GroupProfile | None:
        with Session(self.engine) as s:
            row = s.get(GroupProfileRow, (platform, group_id))
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
        with Session(self.engine) as s:
            row = s.get(UnscopedProfileRow, (platform, user_id))
            if row is None:
                return None
            keys = ("learned_in", "impression_text", "key_facts", "preference_keywords")
            return {k: getattr(row, k) for k in (*keys, "summary", "traits")}

    def was_applied(self, request_id: str) -> bool:
        with Session(self.engine) as s:
            return s.get(ProfileMergeRow, request_id) is not None

    def apply(self, change: ProfileChange) -> bool:
        now = self.clock()
        rel, learned, group = change.relationship, change.learned, change.group
        try:
            with self.engine.begin() as conn:
                # Written first: on SQLite the transaction takes the write lock at once.
                conn.execute(
                    insert(ProfileMergeRow).values(
                        request_id=change.request_id,
                        platform=rel.platform,
                        user_id=rel.user_id,
                        applied_at=now,
                    )
                )
                _write(
                    conn,
                    UserRelationshipRow,
                    (
                        UserRelationshipRow.platform == rel.platform,
                        UserRelationshipRow.user_id == rel.user_id,
                    ),
                    rel.version,
                    {
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
                _write(
                    conn,
                    LearnedProfileRow,
                    (
                        LearnedProfileRow.platform == learned.platform,
                        LearnedProfileRow.user_id == learned.user_id,
                        LearnedProfileRow.chat_type == learned.chat_type,
                        LearnedProfileRow.chat_id == learned.chat_id,
                    ),
                    learned.version,
                    {
                        "platform": learned.platform,
                        "user_id": learned.user_id,
                        "chat_type": learned.chat_type,
                        "chat_id": learned.chat_id,
                        "chat_name": learned.chat_name,
                        "user_name": learned.user_name,
                        "impression_text": learned.impression_text,
                        "key_facts": learned.key_facts,
                        "preference_keywords": learned.preference_keywords,
                        "summary": learned.summary,
                        "traits": learned.traits,
                        "updated_at": now,
                    },
                )
                if group is not None:
                    _write(
                        conn,
                        GroupProfileRow,
                        (
                            GroupProfileRow.platform == group.platform,
                            GroupProfileRow.group_id == group.group_id,
                        ),
                        group.version,
                        {
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

    def forget(self, target: ForgetTarget) -> dict[str, int]:
        """A person everywhere: their relationship, every chat's profile of them and the old
        unscoped content. A person in one chat: that chat's profile of them. A chat: what
        was learned in it about anyone, and its group profile."""
        removed: dict[str, int] = {}
        learned = covered(LearnedProfileRow, target)
        with self.engine.begin() as conn:
            removed["learned_profiles"] = conn.execute(
                delete(LearnedProfileRow).where(*learned)
            ).rowcount
            if target.user_id is not None and target.chat is None:
                person = (UserRelationshipRow.platform == target.platform,
                          UserRelationshipRow.user_id == target.user_id)  # fmt: skip
                removed["relationships"] = conn.execute(
                    delete(UserRelationshipRow).where(*person)
                ).rowcount
                removed["unscoped_profiles"] = conn.execute(
                    delete(UnscopedProfileRow).where(
                        UnscopedProfileRow.platform == target.platform,
                        UnscopedProfileRow.user_id == target.user_id,
                    )
                ).rowcount
                conn.execute(
                    delete(ProfileMergeRow).where(
                        ProfileMergeRow.platform == target.platform,
                        ProfileMergeRow.user_id == target.user_id,
                    )
                )
            if target.user_id is None and target.chat is not None:
                chat = target.chat
                removed["group_profiles"] = (
                    conn.execute(
                        delete(GroupProfileRow).where(
                            GroupProfileRow.platform == chat.platform,
                            GroupProfileRow.group_id == chat.chat_id,
                        )
                    ).rowcount
                    if chat.chat_type == "group"
                    else 0
                )
        return removed


def _learned(row: LearnedProfileRow) -> LearnedProfile:
    return LearnedProfile(
        platform=row.platform,
        user_id=row.user_id,
        chat_type=row.chat_type,  # type: ignore[arg-type]
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


def _write(
    conn: Any, table: type[Base], key: tuple[Any, ...], read_version: int, values: dict[str, Any]
) -> None:
    """Insert when the row did not exist when read (version 0), else compare-and-set."""
    if read_version == 0:
        conn.execute(insert(table).values(**values, version=1))
        return
    result = conn.execute(
        update(table)
        .where(*key, table.version == read_version)  # type: ignore[attr-defined]
        .values(**values, version=read_version + 1)
    )
    if result.rowcount != 1:
        raise ProfileConflict(f"{table.__tablename__}: changed since it was read")
