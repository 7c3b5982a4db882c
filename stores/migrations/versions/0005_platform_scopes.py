"""platform in every scope: events, postings, job and context-usage rows know their platform;
stored messages are unique per stream, persona and message id

Rows written before this revision take the deployment's default platform
(``GROUPMIND_DEFAULT_PLATFORM``, handed to the migration by ``stores.sql.migrate``).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

PLATFORM = sa.String(length=64)
ID = sa.String(length=128)


def default_platform() -> str:
    return str(op.get_context().config.attributes.get("default_platform") or "qq")  # type: ignore[union-attr]


def add_filled(table: str, columns: dict[str, Any], fill: str | None = None) -> None:
    """Add NOT NULL columns: nullable first, filled, then made NOT NULL."""
    with op.batch_alter_table(table) as batch:
        for name, type_ in columns.items():
            batch.add_column(sa.Column(name, type_, nullable=True))
    if fill:
        op.execute(sa.text(fill).bindparams(platform=default_platform()))


def not_null(table: str, columns: dict[str, Any]) -> None:
    with op.batch_alter_table(table) as batch:
        for name, type_ in columns.items():
            batch.alter_column(name, existing_type=type_, nullable=False)


def upgrade() -> None:
    conn = op.get_bind()
    platform = {"platform": PLATFORM}
    for table in ("event_docs", "event_terms", "profile_merges"):
        add_filled(table, platform, f"UPDATE {table} SET platform = :platform")
        not_null(table, platform)
    op.drop_index("ix_event_docs_scope_stats", table_name="event_docs")
    op.create_index(
        "ix_event_docs_scope_stats",
        "event_docs",
        ["platform", "chat_type", "chat_id", "persona_id", "length", "indexed_at", "id"],
    )
    op.create_index("ix_event_docs_user", "event_docs", ["platform", "user_id"])
    op.drop_index("ix_event_terms_lookup", table_name="event_terms")
    op.create_index(
        "ix_event_terms_lookup",
        "event_terms",
        ["platform", "chat_type", "chat_id", "term", "persona_id", "event_id", "tf", "length"],
    )
    op.drop_index("ix_profile_merges_user_id", table_name="profile_merges")
    op.create_index("ix_profile_merges_user", "profile_merges", ["platform", "user_id"])

    # Jobs: their scope and person as columns, from the payload, so forget can find them.
    job_columns = {"platform": PLATFORM, "chat_type": sa.String(16), "chat_id": ID, "user_id": ID}
    add_filled("memory_jobs", job_columns)
    jobs = sa.table(
        "memory_jobs",
        sa.column("request_id", ID),
        sa.column("payload", sa.JSON()),
        *(sa.column(name, type_) for name, type_ in job_columns.items()),
    )
    for request_id, payload in conn.execute(sa.select(jobs.c.request_id, jobs.c.payload)).all():
        p = payload if isinstance(payload, dict) else {}
        user_id = str(p.get("user_id") or "")
        chat_type = str(p.get("chat_type") or "group")
        conn.execute(
            jobs.update()
            .where(jobs.c.request_id == request_id)
            .values(
                platform=str(p.get("platform") or default_platform()),
                chat_type=chat_type,
                chat_id=str(p.get("chat_id") or (user_id if chat_type == "private" else "")),
                user_id=user_id,
            )
        )
    not_null("memory_jobs", job_columns)
    op.create_index("ix_memory_jobs_user", "memory_jobs", ["platform", "user_id"])
    op.create_index("ix_memory_jobs_chat", "memory_jobs", ["platform", "chat_type", "chat_id"])

    # Context-usage records: the context id is "platform:chat_type:chat_id|message_id".
    usage_columns = {"platform": PLATFORM, "chat_type": sa.String(16), "persona_id": ID}
    add_filled("context_usage_records", usage_columns)
    usage = sa.table(
        "context_usage_records",
        sa.column("context_id", sa.String(300)),
        *(sa.column(name, type_) for name, type_ in usage_columns.items()),
    )
    for (context_id,) in conn.execute(sa.select(usage.c.context_id)).all():
        parts = context_id.split("|", 1)[0].split(":")
        known = len(parts) >= 3 and parts[1] in ("group", "private")
        conn.execute(
            usage.update()
            .where(usage.c.context_id == context_id)
            .values(
                platform=parts[0] if known else default_platform(),
                chat_type=parts[1] if known else "group",
                persona_id="default",
            )
        )
    not_null("context_usage_records", usage_columns)
    op.drop_index("ix_context_usage_chat_user", table_name="context_usage_records")
    op.create_index(
        "ix_context_usage_scope_user",
        "context_usage_records",
        ["platform", "chat_type", "chat_id", "user_id"],
    )

    # Messages: a persona's conversation is its own, so the same message may be stored once
    # per persona of the chat.
    op.drop_index("ix_messages_stream_time", table_name="messages")
    op.drop_index("ix_messages_stream_reply", table_name="messages")
    with op.batch_alter_table("messages") as batch:
        batch.drop_constraint("uq_messages_stream_message", type_="unique")
        batch.create_unique_constraint(
            "uq_messages_scope_message", ["stream", "persona_id", "message_id"]
        )
    op.create_index("ix_messages_scope_time", "messages", ["stream", "persona_id", "timestamp"])
    op.create_index("ix_messages_scope_reply", "messages", ["stream", "persona_id", "reply_to"])
    op.create_index("ix_messages_user", "messages", ["platform", "user_id"])


def downgrade() -> None:
    op.drop_index("ix_messages_user", table_name="messages")
    op.drop_index("ix_messages_scope_reply", table_name="messages")
    op.drop_index("ix_messages_scope_time", table_name="messages")
    with op.batch_alter_table("messages") as batch:
        batch.drop_constraint("uq_messages_scope_message", type_="unique")
        batch.create_unique_constraint("uq_messages_stream_message", ["stream", "message_id"])
    op.create_index("ix_messages_stream_time", "messages", ["stream", "timestamp"])
    op.create_index("ix_messages_stream_reply", "messages", ["stream", "reply_to"])
    op.drop_index("ix_context_usage_scope_user", table_name="context_usage_records")
    op.create_index("ix_context_usage_chat_user", "context_usage_records", ["chat_id", "user_id"])
    with op.batch_alter_table("context_usage_records") as batch:
        for name in ("platform", "chat_type", "persona_id"):
            batch.drop_column(name)
    op.drop_index("ix_memory_jobs_chat", table_name="memory_jobs")
    op.drop_index("ix_memory_jobs_user", table_name="memory_jobs")
    with op.batch_alter_table("memory_jobs") as batch:
        for name in ("platform", "chat_type", "chat_id", "user_id"):
            batch.drop_column(name)
    op.drop_index("ix_profile_merges_user", table_name="profile_merges")
    op.create_index("ix_profile_merges_user_id", "profile_merges", ["user_id"])
    op.drop_index("ix_event_terms_lookup", table_name="event_terms")
    op.create_index(
        "ix_event_terms_lookup",
        "event_terms",
        ["chat_type", "chat_id", "term", "persona_id", "event_id", "tf", "length"],
    )
    op.drop_index("ix_event_docs_user", table_name="event_docs")
    op.drop_index("ix_event_docs_scope_stats", table_name="event_docs")
    op.create_index(
        "ix_event_docs_scope_stats",
        "event_docs",
        ["chat_type", "chat_id", "persona_id", "length", "indexed_at", "id"],
    )
    for table in ("event_docs", "event_terms", "profile_merges"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("platform")
