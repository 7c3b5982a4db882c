"""reply graph: messages, chat members, chat states, context-usage records

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "messages",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("stream", sa.String(length=300), nullable=False),
        sa.Column("message_id", sa.String(length=128), nullable=False),
        sa.Column("platform", sa.String(length=64), nullable=False),
        sa.Column("chat_type", sa.String(length=16), nullable=False),
        sa.Column("chat_id", sa.String(length=128), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("user_name", sa.String(length=128), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("timestamp", sa.Float(), nullable=False),
        sa.Column("reply_to", sa.String(length=128), nullable=True),
        sa.Column("mentions", JSON, nullable=False),
        sa.Column("persona_id", sa.String(length=128), nullable=False),
        sa.Column("from_bot", sa.Boolean(), nullable=False),
        sa.Column("keywords", JSON, nullable=False),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("stream", "message_id", name="uq_messages_stream_message"),
    )
    op.create_index("ix_messages_stream_time", "messages", ["stream", "timestamp"])
    op.create_index("ix_messages_stream_reply", "messages", ["stream", "reply_to"])

    op.create_table(
        "chat_members",
        sa.Column("stream", sa.String(length=300), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("user_name", sa.String(length=128), nullable=False),
        sa.Column("last_seen", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("stream", "user_id"),
    )

    op.create_table(
        "chat_states",
        sa.Column("stream", sa.String(length=300), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("stream"),
    )
    op.create_index("ix_chat_states_state", "chat_states", ["state"])

    op.create_table(
        "context_usage_records",
        sa.Column("context_id", sa.String(length=300), nullable=False),
        sa.Column("chat_id", sa.String(length=128), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("trigger_message_id", sa.String(length=128), nullable=False),
        sa.Column("context_message_ids", JSON, nullable=False),
        sa.Column("relevance_scores", JSON, nullable=False),
        sa.Column("llm_response", sa.Text(), nullable=True),
        sa.Column("user_feedback", sa.Text(), nullable=True),
        sa.Column("success_indicator", sa.Float(), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("context_id"),
    )
    op.create_index("ix_context_usage_chat_user", "context_usage_records", ["chat_id", "user_id"])
    op.create_index("ix_context_usage_records_created_at", "context_usage_records", ["created_at"])


def downgrade() -> None:
    op.drop_table("context_usage_records")
    op.drop_table("chat_states")
    op.drop_table("chat_members")
    op.drop_table("messages")
