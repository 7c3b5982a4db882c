"""event_docs.indexed_at: when each row was last written, so a process can tell that an
event it holds in memory (its vector, for exact in-scope search) was rewritten elsewhere

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("event_docs") as batch:
        batch.add_column(sa.Column("indexed_at", sa.Float(), server_default="0", nullable=False))
    op.drop_index("ix_event_docs_scope_stats", table_name="event_docs")
    op.create_index(
        "ix_event_docs_scope_stats",
        "event_docs",
        ["chat_type", "chat_id", "persona_id", "length", "indexed_at", "id"],
    )


def downgrade() -> None:
    op.drop_index("ix_event_docs_scope_stats", table_name="event_docs")
    op.create_index(
        "ix_event_docs_scope_stats",
        "event_docs",
        ["chat_type", "chat_id", "persona_id", "length", "id"],
    )
    with op.batch_alter_table("event_docs") as batch:
        batch.drop_column("indexed_at")
