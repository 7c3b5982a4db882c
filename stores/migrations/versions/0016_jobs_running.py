"""A queued job is claimed only when no job of its chat is running (a chat's jobs run in
order): the running jobs of a chat are found by this index, without reading the chat's
finished ones.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26
"""

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

COLUMNS = ["status", "bot_id", "platform", "chat_type", "chat_id", "lease_until"]


def upgrade() -> None:
    op.create_index("ix_memory_jobs_running", "memory_jobs", COLUMNS)


def downgrade() -> None:
    op.drop_index("ix_memory_jobs_running", table_name="memory_jobs")
