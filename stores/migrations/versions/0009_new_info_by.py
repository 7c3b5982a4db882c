"""memory_jobs: who wrote new_info. Jobs groupmind's hand-off queued before the field
existed carry the users' own words (我 = the speaker): they are marked "user", so the
historian does not read them as the bot's notes (the new default, seed 003's contract).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23
"""

import json

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

jobs = sa.table(
    "memory_jobs",
    sa.column("request_id", sa.String),
    sa.column("payload", sa.JSON().with_variant(postgresql.JSONB(), "postgresql")),
    sa.column("status", sa.String),
)


def upgrade() -> None:
    conn = op.get_bind()
    rows = conn.execute(
        sa.select(jobs.c.request_id, jobs.c.payload).where(
            jobs.c.request_id.like("mem-%"), jobs.c.status != "done"
        )
    ).all()
    for request_id, payload in rows:
        data = json.loads(payload) if isinstance(payload, str) else dict(payload)
        if "new_info_by" in data:
            continue
        data["new_info_by"] = "user"
        conn.execute(sa.update(jobs).where(jobs.c.request_id == request_id).values(payload=data))


def downgrade() -> None:
    pass  # the field is ignored by older code
