"""profiles with provenance: the relationship (per platform and person) keeps no content;
what was learned about a person is kept per chat (learned_profiles); group profiles per
platform

Old rows knew no chat. A person whose applied memory jobs all came from one chat gets their
old facts, preferences, impression and summary as that chat's; otherwise the content can
not be attributed without mixing chats, so it is kept for the operator in
``unscoped_profiles`` (``groupmind profile`` shows it, ``groupmind forget`` erases it) and
never shown to a model.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23
"""

import time
from collections import defaultdict

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
PLATFORM = sa.String(length=64)
ID = sa.String(length=128)


def default_platform() -> str:
    return str(op.get_context().config.attributes.get("default_platform") or "qq")  # type: ignore[union-attr]


def content_columns() -> list[sa.Column]:  # type: ignore[type-arg]
    return [
        sa.Column("user_name", sa.String(128), nullable=False),
        sa.Column("impression_text", sa.Text(), nullable=False),
        sa.Column("key_facts", JSON, nullable=False),
        sa.Column("preference_keywords", JSON, nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("traits", JSON, nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
    ]


def upgrade() -> None:
    conn = op.get_bind()
    platform = default_platform()
    learned = op.create_table(
        "learned_profiles",
        sa.Column("platform", PLATFORM, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("chat_type", sa.String(16), nullable=False),
        sa.Column("chat_id", ID, nullable=False),
        sa.Column("chat_name", sa.String(256), nullable=False),
        *content_columns(),
        sa.PrimaryKeyConstraint("platform", "user_id", "chat_type", "chat_id"),
    )
    unscoped = op.create_table(
        "unscoped_profiles",
        sa.Column("platform", PLATFORM, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("learned_in", JSON, nullable=False),  # the chats it may have come from
        *content_columns(),
        sa.PrimaryKeyConstraint("platform", "user_id"),
    )
    relationships = op.create_table(
        "user_relationships_v2",
        sa.Column("platform", PLATFORM, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("user_name", sa.String(128), nullable=False),
        sa.Column("aliases", JSON, nullable=False),
        sa.Column("relationship_score", sa.Float(), nullable=False),
        sa.Column("relationship_stage", sa.String(32), nullable=False),
        sa.Column("first_met_time", sa.Float(), nullable=True),
        sa.Column("last_impression_update", sa.Float(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("platform", "user_id"),
    )
    groups = op.create_table(
        "group_profiles_v2",
        sa.Column("platform", PLATFORM, nullable=False),
        sa.Column("group_id", ID, nullable=False),
        sa.Column("group_name", sa.String(256), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("traits", JSON, nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("platform", "group_id"),
    )

    # Which chats each person's applied jobs came from.
    chats: dict[str, set[tuple[str, str, str, str]]] = defaultdict(set)
    merges = sa.table("profile_merges", sa.column("request_id", ID), sa.column("user_id", ID))
    jobs = sa.table(
        "memory_jobs",
        sa.column("request_id", ID),
        sa.column("payload", JSON),
        *(sa.column(c, ID) for c in ("platform", "chat_type", "chat_id")),
    )
    rows = conn.execute(
        sa.select(
            merges.c.user_id, jobs.c.platform, jobs.c.chat_type, jobs.c.chat_id, jobs.c.payload
        ).join_from(merges, jobs, merges.c.request_id == jobs.c.request_id)
    ).all()
    for user_id, job_platform, chat_type, chat_id, payload in rows:
        name = str(payload.get("chat_name") or "") if isinstance(payload, dict) else ""
        chats[user_id].add((job_platform, chat_type, chat_id, name))

    old_users = sa.table(
        "user_profiles",
        sa.column("user_id", ID),
        sa.column("summary", sa.Text()),
        sa.column("traits", JSON),
    )
    users = {r.user_id: r for r in conn.execute(sa.select(old_users)).all()}
    old_relationships = sa.table(
        "user_relationships",
        *(sa.column(c, ID) for c in ("user_id", "user_name", "relationship_stage")),
        *(sa.column(c, JSON) for c in ("aliases", "key_facts", "preference_keywords")),
        sa.column("impression_text", sa.Text()),
        *(sa.column(c, sa.Float()) for c in ("relationship_score", "first_met_time")),
        *(sa.column(c, sa.Float()) for c in ("last_impression_update", "updated_at")),
        sa.column("version", sa.Integer()),
    )
    now = time.time()
    for rel in conn.execute(sa.select(old_relationships)).mappings().all():
        conn.execute(
            relationships.insert().values(
                platform=platform,
                user_id=rel["user_id"],
                user_name=rel["user_name"],
                aliases=rel["aliases"],
                relationship_score=rel["relationship_score"],
                relationship_stage=rel["relationship_stage"],
                first_met_time=rel["first_met_time"],
                last_impression_update=rel["last_impression_update"],
                version=rel["version"],
                updated_at=rel["updated_at"],
            )
        )
        user = users.get(rel["user_id"])
        content = {
            "user_name": rel["user_name"],
            "impression_text": rel["impression_text"] or "",
            "key_facts": rel["key_facts"] or [],
            "preference_keywords": rel["preference_keywords"] or [],
            "summary": user.summary if user else "",
            "traits": user.traits if user else {},
            "version": 1,
            "updated_at": now,
        }
        keys = ("impression_text", "key_facts", "preference_keywords", "summary")
        if not any(content[k] for k in keys):
            continue
        came_from = sorted(chats.get(rel["user_id"], set()))
        if len({c[:3] for c in came_from}) == 1:
            job_platform, chat_type, chat_id, name = came_from[0]
            conn.execute(
                learned.insert().values(
                    platform=job_platform,
                    user_id=rel["user_id"],
                    chat_type=chat_type,
                    chat_id=chat_id,
                    chat_name=name,
                    **content,
                )
            )
        else:
            conn.execute(
                unscoped.insert().values(
                    platform=platform,
                    user_id=rel["user_id"],
                    learned_in=[":".join(c[:3]) for c in came_from],
                    **content,
                )
            )
    old_groups = sa.table(
        "group_profiles",
        *(sa.column(c, ID) for c in ("group_id", "group_name", "summary")),
        sa.column("traits", JSON),
        sa.column("version", sa.Integer()),
        sa.column("updated_at", sa.Float()),
    )
    for group in conn.execute(sa.select(old_groups)).mappings().all():
        conn.execute(groups.insert().values(platform=platform, **dict(group)))

    op.drop_table("user_profiles")
    op.drop_table("user_relationships")
    op.drop_table("group_profiles")
    op.rename_table("user_relationships_v2", "user_relationships")
    op.rename_table("group_profiles_v2", "group_profiles")


def downgrade() -> None:
    raise NotImplementedError(
        "0006: profiles kept per chat cannot be merged back into one row per person without "
        "mixing what each chat may see; restore a backup taken before the upgrade instead"
    )
