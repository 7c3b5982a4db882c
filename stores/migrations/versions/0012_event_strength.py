"""Decay and reinforcement: an event's importance (``event_docs.importance``, 0.5 for
events from before, as the store assumed) and how it was used (``event_strength``:
recalls, last recall, pinned).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("event_docs") as batch:
        batch.add_column(sa.Column("importance", sa.Float(), nullable=False, server_default="0.5"))
    op.create_table(
        "event_strength",
        sa.Column("bot_id", sa.String(length=64), nullable=False),
        sa.Column("id", sa.String(length=128), nullable=False),
        sa.Column("recalls", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("last_recalled", sa.Float(), nullable=False, server_default="0"),
        sa.Column("pinned", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.PrimaryKeyConstraint("bot_id", "id"),
    )


def downgrade() -> None:
    op.drop_table("event_strength")
    with op.batch_alter_table("event_docs") as batch:
        batch.drop_column("importance")
