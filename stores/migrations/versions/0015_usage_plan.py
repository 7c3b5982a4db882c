"""Context-usage records keep what the console shows for a message: the memories the
reply was given (``memory_ids``) and the plan's ``action`` and ``reason``.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

Json = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("context_usage_records") as table:
        table.add_column(sa.Column("memory_ids", Json, nullable=False, server_default="[]"))
        table.add_column(sa.Column("action", sa.String(32), nullable=False, server_default=""))
        table.add_column(sa.Column("reason", sa.Text(), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("context_usage_records") as table:
        table.drop_column("reason")
        table.drop_column("action")
        table.drop_column("memory_ids")
