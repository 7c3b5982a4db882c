"""context_usage_records: the model tokens (and cost estimate) each reply used

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("context_usage_records") as batch:
        batch.add_column(
            sa.Column("prompt_tokens", sa.Integer(), nullable=False, server_default="0")
        )
        batch.add_column(
            sa.Column("completion_tokens", sa.Integer(), nullable=False, server_default="0")
        )
        batch.add_column(sa.Column("cost", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("context_usage_records") as batch:
        batch.drop_column("cost")
        batch.drop_column("completion_tokens")
        batch.drop_column("prompt_tokens")
