"""Relationships and profiles in SQL, written with optimistic concurrency.

Every row carries a ``version``. A change is applied in one transaction that first claims
its request id in ``profile_merges`` (so a re-run applies nothing) and then updates each
row only if its version is still the one that was read. A concurrent writer makes the
update match nothing: the whole transaction rolls back and the caller re-reads and
recomputes. No update is lost on SQLite or on PostgreSQL with many processes, and no lock
is held while a model thinks.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from sqlalchemy import Engine, insert, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from stores.base import Clock, Profile, ProfileChange, ProfileConflict, Relationship
from stores.sql.schema import (
    Base,
    GroupProfileRow,
    ProfileMergeRow,
    UserProfileRow,
    UserRelationshipRow,
)


class SqlProfileStore:
    def __init__(self, engine: Engine, *, clock: Clock = time.time) -> None:
        self.engine = engine
        self.clock = clock

    def get_relationship(self, user_id: str) -> Relationship | None:
        with Session(self.engine) as s:
            row = s.get(UserRelationshipRow, user_id)
            if row is None:
                return None
            return Relationship(
                user_id=row.user_id,
                user_name=row.user_name,
                aliases=list(row.aliases or []),
                impression_text=row.impression_text or "",
                key_facts=[dict(f) for f in row.key_facts or []],
                preference_keywords=list(row.preference_keywords or []),
                relationship_score=row.relationship_score,
                relationship_stage=row.relationship_stage,
                first_met_time=row.first_met_time,
                last_impression_update=row.last_impression_update,
                version=row.version,
            )

    def get_profile(self, kind: Literal["user", "group"], target_id: str) -> Profile | None:
        with Session(self.engine) as s:
            if kind == "user":
                user = s.get(UserProfileRow, target_id)
                if user is None:
                    return None
                return Profile(
                    kind="user",
                    target_id=user.user_id,
                    name=user.display_name,
                    summary=user.summary,
                    traits=dict(user.traits or {}),
                    updated_at=user.updated_at,
                    version=user.version,
                )
            group = s.get(GroupProfileRow, target_id)
            if group is None:
                return None
            return Profile(
                kind="group",
                target_id=group.group_id,
                name=group.group_name,
                summary=group.summary,
                traits=dict(group.traits or {}),
                updated_at=group.updated_at,
                version=group.version,
            )

    def was_applied(self, request_id: str) -> bool:
        with Session(self.engine) as s:
            return s.get(ProfileMergeRow, request_id) is not None

    def apply(self, change: ProfileChange) -> bool:
        now = self.clock()
        rel = change.relationship
        try:
            with self.engine.begin() as conn:
                # Written first: on SQLite the transaction takes the write lock at once.
                conn.execute(
                    insert(ProfileMergeRow).values(
                        request_id=change.request_id, user_id=rel.user_id, applied_at=now
                    )
                )
                _write(
                    conn,
                    UserRelationshipRow,
                    UserRelationshipRow.user_id == rel.user_id,
                    rel.version,
                    {
                        "user_id": rel.user_id,
                        "user_name": rel.user_name,
                        "aliases": rel.aliases,
                        "impression_text": rel.impression_text,
                        "key_facts": rel.key_facts,
                        "preference_keywords": rel.preference_keywords,
                        "relationship_score": rel.relationship_score,
                        "relationship_stage": rel.relationship_stage,
                        "first_met_time": rel.first_met_time,
                        "last_impression_update": rel.last_impression_update,
                        "updated_at": now,
                    },
                )
                user = change.user_profile
                _write(
                    conn,
                    UserProfileRow,
                    UserProfileRow.user_id == user.target_id,
                    user.version,
                    {
                        "user_id": user.target_id,
                        "display_name": user.name,
                        "summary": user.summary,
                        "traits": user.traits,
                        "updated_at": now,
                    },
                )
                group = change.group_profile
                if group is not None:
                    _write(
                        conn,
                        GroupProfileRow,
                        GroupProfileRow.group_id == group.target_id,
                        group.version,
                        {
                            "group_id": group.target_id,
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


def _write(
    conn: Any, table: type[Base], key: Any, read_version: int, values: dict[str, Any]
) -> None:
    """Insert when the row did not exist when read (version 0), else compare-and-set."""
    if read_version == 0:
        conn.execute(insert(table).values(**values, version=1))
        return
    result = conn.execute(
        update(table)
        .where(key, table.version == read_version)  # type: ignore[attr-defined]
        .values(**values, version=read_version + 1)
    )
    if result.rowcount != 1:
        raise ProfileConflict(f"{table.__tablename__}: changed since it was read")
