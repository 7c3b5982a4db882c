"""run_inbox: reply inputs journaled when a server run is created, so a run cancelled or
rolled back before it starts does not lose its message

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

ID = sa.String(length=128)


def upgrade() -> None:
    op.create_table(
        "run_inbox",
        sa.Column("thread_id", ID, nullable=False),
        sa.Column("message_id", ID, nullable=False),
        sa.Column(
            "payload", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=False
        ),
        sa.Column("platform", sa.String(length=64), nullable=False),
        sa.Column("chat_type", sa.String(length=16), nullable=False),
        sa.Column("chat_id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("received_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("thread_id", "message_id"),
    )
    op.create_index(
        "ix_run_inbox_scope", "run_inbox", ["platform", "chat_type", "chat_id", "user_id"]
    )


def downgrade() -> None:
    op.drop_index("ix_run_inbox_scope", table_name="run_inbox")
    op.drop_table("run_inbox")
