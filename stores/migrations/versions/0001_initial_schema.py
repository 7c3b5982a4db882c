"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "event_docs",
        sa.Column("id", sa.String(length=128), nullable=False),
        sa.Column("chat_type", sa.String(length=16), nullable=False),
        sa.Column("chat_id", sa.String(length=128), nullable=False),
        sa.Column("chat_name", sa.String(length=256), nullable=False),
        sa.Column("persona_id", sa.String(length=128), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("user_name", sa.String(length=128), nullable=False),
        sa.Column("timestamp", sa.Float(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("degraded", sa.Boolean(), nullable=False),
        sa.Column("context", sa.Text(), nullable=False),
        sa.Column("length", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_event_docs_scope", "event_docs", ["chat_type", "chat_id", "persona_id"])

    op.create_table(
        "group_profiles",
        sa.Column("group_id", sa.String(length=128), nullable=False),
        sa.Column("group_name", sa.String(length=256), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("traits", JSON, nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("group_id"),
    )
    op.create_table(
        "memory_jobs",
        sa.Column("request_id", sa.String(length=128), nullable=False),
        sa.Column("payload", JSON, nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("result", JSON, nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.Column("next_attempt_at", sa.Float(), nullable=False),
        sa.Column("locked_by", sa.String(length=128), nullable=True),
        sa.Column("lease_until", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("request_id"),
    )
    op.create_index("ix_memory_jobs_due", "memory_jobs", ["status", "next_attempt_at"])

    op.create_table(
        "personas",
        sa.Column("persona_id", sa.String(length=128), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("system_prompt", sa.Text(), nullable=False),
        sa.Column("begin_dialogs", JSON, nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("persona_id"),
    )
    op.create_table(
        "profile_merges",
        sa.Column("request_id", sa.String(length=128), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("applied_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("request_id"),
    )
    op.create_index("ix_profile_merges_user_id", "profile_merges", ["user_id"])

    op.create_table(
        "user_profiles",
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("display_name", sa.String(length=128), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("traits", JSON, nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("user_id"),
    )
    op.create_table(
        "user_relationships",
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("user_name", sa.String(length=128), nullable=False),
        sa.Column("aliases", JSON, nullable=False),
        sa.Column("impression_text", sa.Text(), nullable=False),
        sa.Column("key_facts", JSON, nullable=False),
        sa.Column("preference_keywords", JSON, nullable=False),
        sa.Column("relationship_score", sa.Float(), nullable=False),
        sa.Column("relationship_stage", sa.String(length=32), nullable=False),
        sa.Column("first_met_time", sa.Float(), nullable=True),
        sa.Column("last_impression_update", sa.Float(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("user_id"),
    )
    op.create_table(
        "event_terms",
        sa.Column("event_id", sa.String(length=128), nullable=False),
        sa.Column("term", sa.String(length=64), nullable=False),
        sa.Column("tf", sa.Integer(), nullable=False),
        sa.Column("chat_type", sa.String(length=16), nullable=False),
        sa.Column("chat_id", sa.String(length=128), nullable=False),
        sa.ForeignKeyConstraint(["event_id"], ["event_docs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("event_id", "term"),
    )
    op.create_index("ix_event_terms_scope_term", "event_terms", ["chat_type", "chat_id", "term"])


def downgrade() -> None:
    op.drop_index("ix_event_terms_scope_term", table_name="event_terms")
    op.drop_table("event_terms")
    op.drop_table("user_relationships")
    op.drop_table("user_profiles")
    op.drop_index("ix_profile_merges_user_id", table_name="profile_merges")
    op.drop_table("profile_merges")
    op.drop_table("personas")
    op.drop_index("ix_memory_jobs_due", table_name="memory_jobs")
    op.drop_table("memory_jobs")
    op.drop_table("group_profiles")
    op.drop_index("ix_event_docs_scope", table_name="event_docs")
    op.drop_table("event_docs")
