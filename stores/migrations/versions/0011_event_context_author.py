"""event_docs: who said the message an event answered (``context_user_id``), so forgetting
that person blanks it in other people's events too. Events from before keep '' (a forget
matches their context by the person's name instead).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("event_docs") as batch:
        batch.add_column(
            sa.Column("context_user_id", sa.String(length=128), nullable=False, server_default="")
        )


def downgrade() -> None:
    with op.batch_alter_table("event_docs") as batch:
        batch.drop_column("context_user_id")
