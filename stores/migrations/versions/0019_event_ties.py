"""Ties between members, kept with the memory that shows them (``stores.ties``).

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

SCOPE = ["bot_id", "platform", "chat_type", "chat_id"]


def upgrade() -> None:
    op.create_table(
        "event_ties",
        sa.Column("bot_id", sa.String(64), primary_key=True),
        sa.Column("event_id", sa.String(128), primary_key=True),
        sa.Column("other_id", sa.String(128), primary_key=True),
        sa.Column("kind", sa.String(16), primary_key=True),
        sa.Column("label", sa.String(64), primary_key=True),
        sa.Column("other_name", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("user_name", sa.String(128), nullable=False),
        sa.Column("platform", sa.String(64), nullable=False),
        sa.Column("chat_type", sa.String(16), nullable=False),
        sa.Column("chat_id", sa.String(128), nullable=False),
        sa.Column("persona_id", sa.String(128), nullable=False),
        sa.Column("timestamp", sa.Float(), nullable=False),
    )
    op.create_index("ix_event_ties_user", "event_ties", [*SCOPE, "user_id"])
    op.create_index("ix_event_ties_other", "event_ties", [*SCOPE, "other_id"])


def downgrade() -> None:
    op.drop_index("ix_event_ties_other", table_name="event_ties")
    op.drop_index("ix_event_ties_user", table_name="event_ties")
    op.drop_table("event_ties")
