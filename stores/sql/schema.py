"""Tables. Alembic (``stores/migrations``) creates them; a test checks the two agree."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Float,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

Json = JSON().with_variant(JSONB(), "postgresql")
ID = String(128)
PLATFORM = String(64)
BOT = String(64)


class Base(DeclarativeBase):
    pass


class Tenant:
    """Every row belongs to one bot (tenant), first in every key and every index: two bots
    on one database never read, write or erase each other's rows (docs/scopes.md)."""

    bot_id: Mapped[str] = mapped_column(BOT, primary_key=True, sort_order=-1)


class UserRelationshipRow(Tenant, Base):
    """seed 000 §2: the bot's relationship with one person on one platform. No content:
    what was learned about the person is in ``learned_profiles``, per chat."""

    __tablename__ = "user_relationships"

    platform: Mapped[str] = mapped_column(PLATFORM, primary_key=True)
    user_id: Mapped[str] = mapped_column(ID, primary_key=True)
    user_name: Mapped[str] = mapped_column(String(128))
    aliases: Mapped[list[str]] = mapped_column(Json, default=list)
    relationship_score: Mapped[float] = mapped_column(Float, default=0.0)
    relationship_stage: Mapped[str] = mapped_column(String(32), default="stranger")
    first_met_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    last_impression_update: Mapped[float | None] = mapped_column(Float, nullable=True)
    version: Mapped[int] = mapped_column(Integer, default=1)
    updated_at: Mapped[float] = mapped_column(Float)


class ProfileContent:
    """What is learned about a person: the columns every profile table has."""

    user_name: Mapped[str] = mapped_column(String(128), default="")
    impression_text: Mapped[str] = mapped_column(Text, default="")
    key_facts: Mapped[list[dict[str, str]]] = mapped_column(Json, default=list)
    preference_keywords: Mapped[list[str]] = mapped_column(Json, default=list)
    summary: Mapped[str] = mapped_column(Text, default="")
    traits: Mapped[dict[str, Any]] = mapped_column(Json, default=dict)
    version: Mapped[int] = mapped_column(Integer, default=1)
    updated_at: Mapped[float] = mapped_column(Float)


class LearnedProfileRow(Tenant, ProfileContent, Base):
    """What was learned about one person in one chat (seed 000 §2, seed 003 §3.3): the
    chat is the provenance every sharing policy filters on."""

    __tablename__ = "learned_profiles"

    platform: Mapped[str] = mapped_column(PLATFORM, primary_key=True)
    user_id: Mapped[str] = mapped_column(ID, primary_key=True)
    chat_type: Mapped[str] = mapped_column(String(16), primary_key=True)
    chat_id: Mapped[str] = mapped_column(ID, primary_key=True)
    chat_name: Mapped[str] = mapped_column(String(256), default="")


class UnscopedProfileRow(Tenant, ProfileContent, Base):
    """Content learned before profiles had provenance that could not be traced to one chat
    (migration 0006): kept for the operator, never shown to a model."""

    __tablename__ = "unscoped_profiles"

    platform: Mapped[str] = mapped_column(PLATFORM, primary_key=True)
    user_id: Mapped[str] = mapped_column(ID, primary_key=True)
    learned_in: Mapped[list[str]] = mapped_column(Json, default=list)


class GroupProfileRow(Tenant, Base):
    """seed 003 §3.4."""

    __tablename__ = "group_profiles"

    platform: Mapped[str] = mapped_column(PLATFORM, primary_key=True)
    group_id: Mapped[str] = mapped_column(ID, primary_key=True)
    group_name: Mapped[str] = mapped_column(String(256))
    summary: Mapped[str] = mapped_column(Text, default="")
    traits: Mapped[dict[str, Any]] = mapped_column(Json, default=dict)
    version: Mapped[int] = mapped_column(Integer, default=1)
    updated_at: Mapped[float] = mapped_column(Float)


class ProfileMergeRow(Tenant, Base):
    """One row per memory job whose profile change was applied: re-runs apply nothing."""

    __tablename__ = "profile_merges"

    __table_args__ = (Index("ix_profile_merges_user", "bot_id", "platform", "user_id"),)

    request_id: Mapped[str] = mapped_column(ID, primary_key=True)
    platform: Mapped[str] = mapped_column(PLATFORM)
    user_id: Mapped[str] = mapped_column(ID)
    applied_at: Mapped[float] = mapped_column(Float)


class MemoryJobRow(Tenant, Base):
    """The durable memory-job queue: one table for every bot, so one worker serves them all
    (each job runs with its own bot's stores)."""

    __tablename__ = "memory_jobs"
    __table_args__ = (
        Index("ix_memory_jobs_due", "status", "next_attempt_at"),
        Index("ix_memory_jobs_user", "bot_id", "platform", "user_id"),
        Index("ix_memory_jobs_chat", "bot_id", "platform", "chat_type", "chat_id"),
        # A chat's running jobs (a chat's jobs run in order, stores/sql/jobs.py).
        Index(
            "ix_memory_jobs_running",
            "status",
            "bot_id",
            "platform",
            "chat_type",
            "chat_id",
            "lease_until",
        ),
    )

    request_id: Mapped[str] = mapped_column(ID, primary_key=True)
    payload: Mapped[dict[str, Any]] = mapped_column(Json)
    # The job's scope and person, copied from the payload so forget can find them.
    platform: Mapped[str] = mapped_column(PLATFORM)
    chat_type: Mapped[str] = mapped_column(String(16))
    chat_id: Mapped[str] = mapped_column(ID)
    user_id: Mapped[str] = mapped_column(ID)
    status: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    result: Mapped[dict[str, Any] | None] = mapped_column(Json, nullable=True)
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)
    next_attempt_at: Mapped[float] = mapped_column(Float)
    locked_by: Mapped[str | None] = mapped_column(String(128), nullable=True)
    lease_until: Mapped[float | None] = mapped_column(Float, nullable=True)


class PersonaRow(Base):
    """seed 001 §1.1."""

    __tablename__ = "personas"

    persona_id: Mapped[str] = mapped_column(ID, primary_key=True)
    name: Mapped[str] = mapped_column(String(128))
    system_prompt: Mapped[str] = mapped_column(Text, default="")
    begin_dialogs: Mapped[list[str]] = mapped_column(Json, default=list)
    updated_at: Mapped[float] = mapped_column(Float)


class EventDocRow(Tenant, Base):
    """The lexical (BM25) side of event memory: one row per event, mirrored from Chroma's
    metadata so keyword search and its filters run in SQL."""

    __tablename__ = "event_docs"
    # Covering: scope statistics (count, mean length, last write) and the scope's ids with
    # their write times, speakers and event times read the index only.
    __table_args__ = (
        Index(
            "ix_event_docs_scope_stats",
            "bot_id",
            "platform",
            "chat_type",
            "chat_id",
            "persona_id",
            "length",
            "indexed_at",
            "id",
            "user_id",
            "user_name",
            "timestamp",
        ),
        Index("ix_event_docs_user", "bot_id", "platform", "user_id"),
        # the memories said just before one (a job's earlier talk, ``said_before``)
        Index(
            "ix_event_docs_scope_time",
            "bot_id",
            "platform",
            "chat_type",
            "chat_id",
            "persona_id",
            "timestamp",
        ),
    )

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    platform: Mapped[str] = mapped_column(PLATFORM)
    chat_type: Mapped[str] = mapped_column(String(16))
    chat_id: Mapped[str] = mapped_column(ID)
    chat_name: Mapped[str] = mapped_column(String(256), default="")
    persona_id: Mapped[str] = mapped_column(ID)
    user_id: Mapped[str] = mapped_column(ID)
    user_name: Mapped[str] = mapped_column(String(128))
    timestamp: Mapped[float] = mapped_column(Float)
    text: Mapped[str] = mapped_column(Text)
    degraded: Mapped[bool] = mapped_column(Boolean, default=False)
    context: Mapped[str] = mapped_column(Text, default="")
    context_user_id: Mapped[str] = mapped_column(ID, default="", server_default="")
    importance: Mapped[float] = mapped_column(Float, default=0.5, server_default="0.5")
    length: Mapped[int] = mapped_column(Integer)
    indexed_at: Mapped[float] = mapped_column(Float, server_default="0")
    # The event's vector, packed (stores/packed.py); read only when a chat's vectors are held.
    vector: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True, deferred=True)


class EventVectorBlockRow(Tenant, Base):
    """A scope's vectors sealed in blocks (``stores.sql.blocks``): a chat's 20k vectors are
    ~40 rows to read, not 20k rows interleaved among a million. Derived from
    ``event_docs.vector`` (each id with the write time it was read at, so a rewritten event
    is read from its row again); dropped with any of its events, resealed later."""

    __tablename__ = "event_vector_blocks"

    platform: Mapped[str] = mapped_column(PLATFORM, primary_key=True)
    chat_type: Mapped[str] = mapped_column(String(16), primary_key=True)
    chat_id: Mapped[str] = mapped_column(ID, primary_key=True)
    persona_id: Mapped[str] = mapped_column(ID, primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    ids: Mapped[str] = mapped_column(Text)  # newline-separated
    written: Mapped[bytes] = mapped_column(LargeBinary)  # float64 each: indexed_at as read
    norms: Mapped[bytes] = mapped_column(LargeBinary)  # float32 each: of the int8 codes
    vectors: Mapped[bytes] = mapped_column(LargeBinary)  # packed, one width, back to back


class EventStrengthRow(Tenant, Base):
    """How an event was used: recalls into a reply and an operator's pin (stores/decay.py).
    Apart from ``event_docs``, whose rows a re-index replaces; deleted with them
    (``SqlLexicalIndex.remove``). Its scope is the event's: every read joins ``event_docs``."""

    __tablename__ = "event_strength"

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    recalls: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    last_recalled: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    pinned: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class EventTieRow(Tenant, Base):
    """A memory's ties to other members (``stores.ties``): its speaker (``user_id``) to
    ``other_id``, with the memory's scope and persona copied in. Replaced when the memory
    is written, deleted with it (``SqlLexicalIndex.remove``)."""

    __tablename__ = "event_ties"
    __table_args__ = (
        Index("ix_event_ties_user", "bot_id", "platform", "chat_type", "chat_id", "user_id"),
        Index("ix_event_ties_other", "bot_id", "platform", "chat_type", "chat_id", "other_id"),
    )

    event_id: Mapped[str] = mapped_column(ID, primary_key=True)
    other_id: Mapped[str] = mapped_column(ID, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    label: Mapped[str] = mapped_column(String(64), primary_key=True)
    other_name: Mapped[str] = mapped_column(String(128))
    user_id: Mapped[str] = mapped_column(ID)
    user_name: Mapped[str] = mapped_column(String(128))
    platform: Mapped[str] = mapped_column(PLATFORM)
    chat_type: Mapped[str] = mapped_column(String(16))
    chat_id: Mapped[str] = mapped_column(ID)
    persona_id: Mapped[str] = mapped_column(ID)
    timestamp: Mapped[float] = mapped_column(Float)


class EventTermRow(Tenant, Base):
    """Postings: term frequency per event, with the scope, persona and document length
    copied in so a scoped keyword search reads one covering index, no join."""

    __tablename__ = "event_terms"
    __table_args__ = (
        ForeignKeyConstraint(
            ["bot_id", "event_id"],
            ["event_docs.bot_id", "event_docs.id"],
            ondelete="CASCADE",
            name="fk_event_terms_event",
        ),
        Index(
            "ix_event_terms_lookup",
            "bot_id",
            "platform",
            "chat_type",
            "chat_id",
            "term",
            "persona_id",
            "event_id",
            "tf",
            "length",
        ),  # fmt: skip
    )

    event_id: Mapped[str] = mapped_column(ID, primary_key=True)
    term: Mapped[str] = mapped_column(String(64), primary_key=True)
    tf: Mapped[int] = mapped_column(Integer)
    platform: Mapped[str] = mapped_column(PLATFORM)
    chat_type: Mapped[str] = mapped_column(String(16))
    chat_id: Mapped[str] = mapped_column(ID)
    persona_id: Mapped[str] = mapped_column(ID, server_default="default")
    length: Mapped[int] = mapped_column(Integer, server_default="1")


class MessageRow(Base):
    """Every chat message groupmind saw (and every reply it made), per bot and stream."""

    __tablename__ = "messages"
    __table_args__ = (
        UniqueConstraint(
            "bot_id", "stream", "persona_id", "message_id", name="uq_messages_scope_message"
        ),
        Index("ix_messages_scope_time", "bot_id", "stream", "persona_id", "timestamp"),
        Index("ix_messages_scope_reply", "bot_id", "stream", "persona_id", "reply_to"),
        Index("ix_messages_user", "bot_id", "platform", "user_id"),
    )

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    bot_id: Mapped[str] = mapped_column(BOT)
    stream: Mapped[str] = mapped_column(String(300))  # platform:chat_type:chat_id
    message_id: Mapped[str] = mapped_column(ID)
    platform: Mapped[str] = mapped_column(PLATFORM)
    chat_type: Mapped[str] = mapped_column(String(16))
    chat_id: Mapped[str] = mapped_column(ID)
    user_id: Mapped[str] = mapped_column(ID)
    user_name: Mapped[str] = mapped_column(String(128))
    content: Mapped[str] = mapped_column(Text)
    timestamp: Mapped[float] = mapped_column(Float)
    reply_to: Mapped[str | None] = mapped_column(ID, nullable=True)
    mentions: Mapped[list[str]] = mapped_column(Json, default=list)
    persona_id: Mapped[str] = mapped_column(ID)
    from_bot: Mapped[bool] = mapped_column(Boolean, default=False)
    keywords: Mapped[list[str]] = mapped_column(Json, default=list)  # cut once, on store


class RunInboxRow(Tenant, Base):
    """Reply inputs journaled as a server run is created (``stores.base.RunInbox``)."""

    __tablename__ = "run_inbox"
    __table_args__ = (
        Index("ix_run_inbox_scope", "bot_id", "platform", "chat_type", "chat_id", "user_id"),
    )

    thread_id: Mapped[str] = mapped_column(ID, primary_key=True)
    message_id: Mapped[str] = mapped_column(ID, primary_key=True)
    payload: Mapped[dict[str, Any]] = mapped_column(Json)
    platform: Mapped[str] = mapped_column(PLATFORM)
    chat_type: Mapped[str] = mapped_column(String(16))
    chat_id: Mapped[str] = mapped_column(ID)
    user_id: Mapped[str] = mapped_column(ID)
    received_at: Mapped[float] = mapped_column(Float)


class ChatMemberRow(Tenant, Base):
    """Who speaks in a chat, for recognising ``@name`` and ``name:`` in text."""

    __tablename__ = "chat_members"

    stream: Mapped[str] = mapped_column(String(300), primary_key=True)
    user_id: Mapped[str] = mapped_column(ID, primary_key=True)
    user_name: Mapped[str] = mapped_column(String(128))
    last_seen: Mapped[float] = mapped_column(Float)


class ChatStateRow(Tenant, Base):
    """Each stream's chat state, mirrored from its thread so the FOCUSED cap can count."""

    __tablename__ = "chat_states"
    __table_args__ = (Index("ix_chat_states_state", "bot_id", "state"),)

    stream: Mapped[str] = mapped_column(String(300), primary_key=True)
    state: Mapped[str] = mapped_column(String(16))
    updated_at: Mapped[float] = mapped_column(Float)


class ContextUsageRow(Tenant, Base):
    """seed 004 §4.2: which context each reply was given, for later tuning."""

    __tablename__ = "context_usage_records"
    __table_args__ = (
        Index(
            "ix_context_usage_scope_user", "bot_id", "platform", "chat_type", "chat_id", "user_id"
        ),
    )

    context_id: Mapped[str] = mapped_column(String(300), primary_key=True)
    platform: Mapped[str] = mapped_column(PLATFORM)
    chat_type: Mapped[str] = mapped_column(String(16))
    chat_id: Mapped[str] = mapped_column(ID)
    persona_id: Mapped[str] = mapped_column(ID)
    user_id: Mapped[str] = mapped_column(ID)
    trigger_message_id: Mapped[str] = mapped_column(ID)
    context_message_ids: Mapped[list[str]] = mapped_column(Json)
    relevance_scores: Mapped[dict[str, float]] = mapped_column(Json)
    llm_response: Mapped[str | None] = mapped_column(Text, nullable=True)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    cost: Mapped[float | None] = mapped_column(Float, nullable=True)
    # what the console shows for the message: the memories given, the plan's decision
    memory_ids: Mapped[list[str]] = mapped_column(Json, default=list, server_default="[]")
    action: Mapped[str] = mapped_column(String(32), default="", server_default="")
    reason: Mapped[str] = mapped_column(Text, default="", server_default="")
    user_feedback: Mapped[str | None] = mapped_column(Text, nullable=True)
    success_indicator: Mapped[float | None] = mapped_column(Float, nullable=True)
    created_at: Mapped[float] = mapped_column(Float, index=True)


class ConsoleSessionRow(Base):
    """A console login (``groupmind.console.sessions``): the cookie holds a random id, this
    row only its hash, the bot and key it was opened with, the session's CSRF token and one notice
    to show on the next page. No key is ever kept."""

    __tablename__ = "console_sessions"

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    bot_id: Mapped[str] = mapped_column(BOT)
    # SHA-256 of the key it was opened with ('' without keys): a key taken away, or
    # changed, ends its sessions
    key_hash: Mapped[str] = mapped_column(String(64))
    csrf: Mapped[str] = mapped_column(String(64))
    notice: Mapped[str] = mapped_column(Text, default="", server_default="")
    created_at: Mapped[float] = mapped_column(Float)
    expires_at: Mapped[float] = mapped_column(Float, index=True)
