"""A scope's events by time: a memory job that brings no recent messages reads the ones
said just before it in its chat (``said_before``) without scanning the chat's index.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-04
"""

from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_event_docs_scope_time",
        "event_docs",
        ["bot_id", "platform", "chat_type", "chat_id", "persona_id", "timestamp"],
    )


def downgrade() -> None:
    op.drop_index("ix_event_docs_scope_time", table_name="event_docs")
