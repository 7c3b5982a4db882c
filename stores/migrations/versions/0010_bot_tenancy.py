"""the bot (tenant) in every table: first in every primary key and index, so two bots on one
database never read, write or erase each other's rows

Rows written before this revision belong to the deployment's own bot: the one bot in
``GROUPMIND_BOTS`` when exactly one is configured, else ``GROUPMIND_BOT_ID`` (handed to the
migration by ``stores.sql.migrate`` as ``owner``).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24
"""

import warnings

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

BOT = sa.String(length=64)

# table -> (new primary key or None, {index: columns} rebuilt with the bot first)
TABLES: dict[str, tuple[list[str] | None, dict[str, list[str]]]] = {
    "user_relationships": (["bot_id", "platform", "user_id"], {}),
    "learned_profiles": (["bot_id", "platform", "user_id", "chat_type", "chat_id"], {}),
    "unscoped_profiles": (["bot_id", "platform", "user_id"], {}),
    "group_profiles": (["bot_id", "platform", "group_id"], {}),
    "profile_merges": (
        ["bot_id", "request_id"],
        {"ix_profile_merges_user": ["bot_id", "platform", "user_id"]},
    ),
    "memory_jobs": (
        ["bot_id", "request_id"],
        {
            "ix_memory_jobs_user": ["bot_id", "platform", "user_id"],
            "ix_memory_jobs_chat": ["bot_id", "platform", "chat_type", "chat_id"],
        },
    ),
    "event_docs": (
        ["bot_id", "id"],
        {
            "ix_event_docs_scope_stats": [
                "bot_id",
                "platform",
                "chat_type",
                "chat_id",
                "persona_id",
                "length",
                "indexed_at",
                "id",
            ],
            "ix_event_docs_user": ["bot_id", "platform", "user_id"],
        },
    ),  # fmt: skip
    "event_terms": (
        ["bot_id", "event_id", "term"],
        {
            "ix_event_terms_lookup": [
                "bot_id",
                "platform",
                "chat_type",
                "chat_id",
                "term",
                "persona_id",
                "event_id",
                "tf",
                "length",
            ],
        },
    ),  # fmt: skip
    "messages": (
        None,  # the key stays seq; the bot leads the unique constraint and the indexes
        {
            "ix_messages_scope_time": ["bot_id", "stream", "persona_id", "timestamp"],
            "ix_messages_scope_reply": ["bot_id", "stream", "persona_id", "reply_to"],
            "ix_messages_user": ["bot_id", "platform", "user_id"],
        },
    ),
    "run_inbox": (
        ["bot_id", "thread_id", "message_id"],
        {"ix_run_inbox_scope": ["bot_id", "platform", "chat_type", "chat_id", "user_id"]},
    ),
    "chat_members": (["bot_id", "stream", "user_id"], {}),
    "chat_states": (["bot_id", "stream"], {"ix_chat_states_state": ["bot_id", "state"]}),
    "context_usage_records": (
        ["bot_id", "context_id"],
        {"ix_context_usage_scope_user": ["bot_id", "platform", "chat_type", "chat_id", "user_id"]},
    ),
}
# SQLite's foreign key from postings to events has no name; this names it so it can go.
NAMING = {"fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s"}


def owner() -> str:
    return str(op.get_context().config.attributes.get("owner") or "bot")  # type: ignore[union-attr]


def upgrade() -> None:
    with warnings.catch_warnings():  # SQLite's table copies note the new keys: expected
        warnings.simplefilter("ignore", sa.exc.SAWarning)
        _upgrade()


def _upgrade() -> None:
    bind = op.get_bind()
    sqlite = bind.dialect.name == "sqlite"
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("bot_id", BOT, nullable=True))
        op.execute(sa.text(f"UPDATE {table} SET bot_id = :owner").bindparams(owner=owner()))
    # The postings' foreign key leans on the events' key: it goes first, comes back last.
    if sqlite:
        with op.batch_alter_table("event_terms", naming_convention=NAMING) as batch:
            batch.drop_constraint("fk_event_terms_event_id_event_docs", type_="foreignkey")
    else:
        op.drop_constraint("event_terms_event_id_fkey", "event_terms", type_="foreignkey")
    for table, (key, indexes) in TABLES.items():
        for name in indexes:
            op.drop_index(name, table_name=table)
        with op.batch_alter_table(table, recreate="always" if sqlite else "auto") as batch:
            batch.alter_column("bot_id", existing_type=BOT, nullable=False)
            if key is not None:
                if not sqlite:  # older tables were renamed: their key has its own name
                    old = sa.inspect(bind).get_pk_constraint(table)["name"]
                    batch.drop_constraint(old, type_="primary")
                batch.create_primary_key(f"{table}_pkey", key)
            if table == "messages":
                batch.drop_constraint("uq_messages_scope_message", type_="unique")
                batch.create_unique_constraint(
                    "uq_messages_scope_message", ["bot_id", "stream", "persona_id", "message_id"]
                )
        for name, columns in indexes.items():
            op.create_index(name, table, columns)
    with op.batch_alter_table("event_terms") as batch:
        batch.create_foreign_key(
            "fk_event_terms_event",
            "event_docs",
            ["bot_id", "event_id"],
            ["bot_id", "id"],
            ondelete="CASCADE",
        )


def downgrade() -> None:
    raise NotImplementedError("a database shared by several bots cannot be split back")
