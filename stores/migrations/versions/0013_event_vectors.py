"""Each event's vector in SQL too, as int8 with its scale (``event_docs.vector``, 388
bytes for e5-small): a process holds a chat's vectors from SQL, not by opening Chroma's
whole HNSW index (2.2 GB at 1M events in an embedded Chroma). Events from before have
none: their vectors still come from Chroma.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("event_docs") as batch:
        batch.add_column(sa.Column("vector", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("event_docs") as batch:
        batch.drop_column("vector")
