"""The scope index covers each event's time (``timestamp``): search spreads a memory's
relevance to the memories said just before and after it (``stores.fused.spread``), so a
scope's member list carries when each was said, still read from the index alone.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-04
"""

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

BEFORE = ["bot_id", "platform", "chat_type", "chat_id", "persona_id", "length", "indexed_at", "id",
          "user_id", "user_name"]  # fmt: skip


def upgrade() -> None:
    op.drop_index("ix_event_docs_scope_stats", table_name="event_docs")
    op.create_index("ix_event_docs_scope_stats", "event_docs", [*BEFORE, "timestamp"])


def downgrade() -> None:
    op.drop_index("ix_event_docs_scope_stats", table_name="event_docs")
    op.create_index("ix_event_docs_scope_stats", "event_docs", BEFORE)
