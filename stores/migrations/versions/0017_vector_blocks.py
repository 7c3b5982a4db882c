"""A scope's vectors sealed in blocks (``event_vector_blocks``): read in a few rows, not one
row per event scattered over the table (a chat of 20k among 1M events: ~90 ms by row).

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "event_vector_blocks",
        sa.Column("bot_id", sa.String(64), primary_key=True),
        sa.Column("platform", sa.String(64), primary_key=True),
        sa.Column("chat_type", sa.String(16), primary_key=True),
        sa.Column("chat_id", sa.String(128), primary_key=True),
        sa.Column("persona_id", sa.String(128), primary_key=True),
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("ids", sa.Text(), nullable=False),
        sa.Column("written", sa.LargeBinary(), nullable=False),
        sa.Column("norms", sa.LargeBinary(), nullable=False),
        sa.Column("vectors", sa.LargeBinary(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("event_vector_blocks")
