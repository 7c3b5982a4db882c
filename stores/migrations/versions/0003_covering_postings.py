"""keyword search from covering indexes: postings carry persona and document length

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("event_terms") as batch:
        batch.add_column(
            sa.Column("persona_id", sa.String(length=128), server_default="default", nullable=False)
        )
        batch.add_column(sa.Column("length", sa.Integer(), server_default="1", nullable=False))
    op.execute(
        "UPDATE event_terms SET "
        "persona_id = (SELECT d.persona_id FROM event_docs d WHERE d.id = event_terms.event_id), "
        "length = (SELECT d.length FROM event_docs d WHERE d.id = event_terms.event_id)"
    )
    op.drop_index("ix_event_terms_scope_term", table_name="event_terms")
    op.create_index(
        "ix_event_terms_lookup",
        "event_terms",
        ["chat_type", "chat_id", "term", "persona_id", "event_id", "tf", "length"],
    )
    op.drop_index("ix_event_docs_scope", table_name="event_docs")
    op.create_index(
        "ix_event_docs_scope_stats",
        "event_docs",
        ["chat_type", "chat_id", "persona_id", "length", "id"],
    )


def downgrade() -> None:
    op.drop_index("ix_event_docs_scope_stats", table_name="event_docs")
    op.create_index("ix_event_docs_scope", "event_docs", ["chat_type", "chat_id", "persona_id"])
    op.drop_index("ix_event_terms_lookup", table_name="event_terms")
    op.create_index("ix_event_terms_scope_term", "event_terms", ["chat_type", "chat_id", "term"])
    with op.batch_alter_table("event_terms") as batch:
        batch.drop_column("length")
        batch.drop_column("persona_id")
