"""What the graphs need from storage, as small protocols. Backends: ``sql``, ``lexical``,
``chroma``, ``hybrid``. The graphs never import a backend."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from domain.scope import ChatScope, ChatType, ForgetTarget, Sharing, may_share
from stores.decay import Strength
from stores.said import Said
from stores.ties import Circle, Tie
from stores.when import window_of

JobStatus = Literal["queued", "running", "done", "failed"]


# --- events -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class EventRecord:
    """One event memory: the document is ``text``; its id is the memory job's request id."""

    id: str
    text: str
    timestamp: float  # epoch seconds, so Chroma can filter ranges
    user_id: str
    user_name: str
    platform: str
    chat_type: ChatType
    chat_id: str
    chat_name: str = ""
    persona_id: str = "default"
    degraded: bool = False
    # The message this event answered, from the job's recent_messages. Indexed for keyword
    # search ("yes, last week" is findable by the question's words), never shown as memory.
    context: str = ""
    context_user_id: str = ""  # who said it (forgetting them blanks it here too)
    importance: float = 0.5  # 0-1, from its words: how slowly it fades (stores/decay.py)
    # What its vector is made of, when not its text: the words as they were said, under
    # the speaker's name (never stored: a rewrite can misplace a 他 or a date that the
    # words themselves hold right, and e5 reads "name: words" best)
    key: str = field(default="", compare=False)
    # The words as said, when the speaker's own: the keyword side indexes them beside the
    # rewrite (a rewrite drops a word the question may use; never stored as text, so a
    # record read back and written again is indexed under its text alone)
    said: str = field(default="", compare=False)
    # Its ties to other members (``stores.ties``), stored with it and gone with it; None:
    # whatever it had stays (a record read back and written again: a context scrub)
    ties: tuple[Tie, ...] | None = field(default=None, compare=False)

    def passage(self) -> str:
        """What its vector is made of: its key, else the text under the name of who said
        it when the text does not say (the keyword side reads the name: ``index_text``)."""
        if self.key:
            return self.key
        if not self.user_name or self.user_name in self.text:
            return self.text
        return f"{self.user_name}：{self.text}"

    def metadata(self) -> dict[str, Any]:
        return {
            "timestamp": self.timestamp,
            "user_id": self.user_id,
            "user_name": self.user_name,
            "platform": self.platform,
            "chat_type": self.chat_type,
            "chat_id": self.chat_id,
            "chat_name": self.chat_name,
            "persona_id": self.persona_id,
            "degraded": self.degraded,
            "context": self.context,
            "context_user_id": self.context_user_id,
            "importance": self.importance,
        }

    @classmethod
    def from_metadata(cls, event_id: str, text: str, meta: dict[str, Any]) -> EventRecord:
        return cls(
            id=event_id,
            text=text,
            timestamp=float(meta["timestamp"]),
            user_id=str(meta["user_id"]),
            user_name=str(meta.get("user_name", "")),
            platform=str(meta["platform"]),
            chat_type=meta["chat_type"],
            chat_id=str(meta["chat_id"]),
            chat_name=str(meta.get("chat_name", "")),
            persona_id=str(meta.get("persona_id", "default")),
            degraded=bool(meta.get("degraded", False)),
            context=str(meta.get("context", "")),
            context_user_id=str(meta.get("context_user_id", "")),
            importance=float(meta.get("importance", 0.5)),
        )

    @property
    def scope(self) -> ChatScope:
        return ChatScope(platform=self.platform, chat_type=self.chat_type, chat_id=self.chat_id)


@dataclass(frozen=True, kw_only=True)
class EventQuery:
    """A search is always scoped to one chat on one platform: there is no way to build an
    unscoped one."""

    text: str
    platform: str
    chat_type: ChatType
    chat_id: str
    persona_id: str | None = None  # None: every persona (operator tools only)
    user_id: str | None = None
    top_k: int = 5
    time_from: float | None = None
    time_to: float | None = None
    # Who asks: "我" / "my" in the text means them (people-aware ranking; not a filter).
    asker_id: str | None = None
    asker_name: str = ""
    # The span the question is about ("上周": ``stores.when.window_of``), epoch seconds
    # [start, end): memories inside it are lifted, none is dropped.
    about: tuple[float, float] | None = None
    # When it is asked (epoch seconds; None: now): memories fade relative to it.
    now: float | None = None

    def __post_init__(self) -> None:
        if not self.platform:
            raise ValueError("platform: a search needs the platform of its chat")
        if self.chat_type not in ("group", "private"):
            raise ValueError(f"chat_type: unknown chat type {self.chat_type!r}")
        if not self.chat_id:
            raise ValueError("chat_id: a search needs the chat it is scoped to")
        if not 1 <= self.top_k <= 200:
            raise ValueError(f"top_k: must be between 1 and 200, got {self.top_k}")
        if self.time_from is not None and self.time_to is not None:
            if self.time_from > self.time_to:
                raise ValueError("time range: from is after to")

    @classmethod
    def asked(cls, text: str, at: datetime, **fields: Any) -> EventQuery:
        """A question as a chat asks it at ``at`` (the reply path, the benchmarks): its time
        words ("上周", "May 4th") are the span it is about, in ``at``'s own zone, and memories
        fade relative to ``at``, not the clock."""
        return cls(text=text, about=window_of(text, at), now=at.timestamp(), **fields)

    @classmethod
    def within(cls, scope: ChatScope, text: str = "", **fields: Any) -> EventQuery:
        """A read of one chat's memories (a listing, not a question: no text by default)."""
        return cls(text=text, platform=scope.platform, chat_type=scope.chat_type,
                   chat_id=scope.chat_id, **fields)  # fmt: skip

    @property
    def scope(self) -> ChatScope:
        return ChatScope(platform=self.platform, chat_type=self.chat_type, chat_id=self.chat_id)

    @property
    def plain(self) -> bool:
        """Scope and persona only: no user or time filter."""
        return self.user_id is None and self.time_from is None and self.time_to is None

    def admits(self, event: EventRecord) -> bool:
        """The scope and filters as a predicate: used to double-check every hit."""
        return (
            event.platform == self.platform
            and event.chat_type == self.chat_type
            and event.chat_id == self.chat_id
            and (self.persona_id is None or event.persona_id == self.persona_id)
            and (self.user_id is None or event.user_id == self.user_id)
            and (self.time_from is None or event.timestamp >= self.time_from)
            and (self.time_to is None or event.timestamp <= self.time_to)
        )


@dataclass(frozen=True)
class EventHit:
    event: EventRecord
    score: float

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.event.id,
            "text": self.event.text,
            "score": round(self.score, 6),
            "metadata": self.event.metadata(),
        }


@runtime_checkable
class EventStore(Protocol):
    def upsert(self, event: EventRecord) -> None: ...
    def search(self, query: EventQuery) -> list[EventHit]: ...
    def get(self, ids: Sequence[str]) -> list[EventRecord]: ...
    def count(self, scope: ChatScope | None = None) -> int: ...
    def covered(self, target: ForgetTarget) -> list[str]:
        """The ids of the events the target covers (what ``forget`` deletes)."""
        ...

    def forget(self, target: ForgetTarget) -> list[str]:
        """Delete the events the target covers; returns their ids."""
        ...

    def scrub_context(self, target: ForgetTarget, said: Said) -> list[str]:
        """Blank the answered message (``context``) of the events in the target's chats
        that hold one of the person's messages; returns their ids."""
        ...

    def circle(self, query: EventQuery, user_id: str) -> list[Circle]:
        """The person's ties with each other member in the query's chat and persona, the
        most tied first (``stores.ties``)."""
        ...


@runtime_checkable
class MemoryStore(EventStore, Protocol):
    """Event memory as the graphs use it: search, plus what keeps it alive or lets it go
    (stores/decay.py)."""

    def upsert_many(
        self, events: Sequence[EventRecord], vectors: Sequence[Sequence[float]] | None = None
    ) -> None: ...

    def deferred(self) -> AbstractContextManager[list[EventRecord]]:
        """Upserts in this block (this thread and the graph runs it starts) are kept in the
        list it yields, not written: the caller writes them in one ``upsert_many``."""
        ...

    def said_before(
        self, query: EventQuery, at: float, limit: int, excluding: str = ""
    ) -> list[EventRecord]:
        """Up to ``limit`` memories said just before ``at`` in the query's scope, in the same
        talk, oldest first (``excluding`` one id: a job run again is not its own past)."""
        ...

    def recalled(self, ids: Sequence[str], at: float | None = None) -> None:
        """These memories were recalled (into a reply, a tool's answer): they fade slower."""
        ...

    def prefetch(self, query: EventQuery) -> None:
        """A hint that ``query`` will be searched soon: start what can start (its
        embedding), so the search finds it done. Never raises for a failure of its own."""
        ...

    def pin(self, ids: Sequence[str], pinned: bool = True) -> list[str]:
        """Pin (or unpin): never faded, never pruned. Returns the ids found."""
        ...

    def prune(self, now: float | None = None, cap: int | None = None) -> dict[str, int]:
        """Per chat over the cap, delete its weakest old, unimportant, never-recalled,
        unpinned memories; how many went, per chat key."""
        ...

    def remove(self, ids: Sequence[str]) -> None:
        """Erase these memories, wherever they are stored."""
        ...

    def stored(self, ids: Sequence[str]) -> set[str]:
        """Those of ``ids`` written whole, on every side (``get`` also returns an event a
        crash left on the first side only)."""
        ...

    def strengths(self, ids: Sequence[str]) -> dict[str, Strength]:
        """What decides these memories' retention (none for one never written)."""
        ...


# --- people and groups --------------------------------------------------------------------


@dataclass(kw_only=True)
class Relationship:
    """seed 000 §2: how the bot stands with one person. Shared by every chat and persona of
    the person's platform, so it carries no content: what was learned about the person
    lives in ``LearnedProfile`` rows, one per chat it was learned in."""

    platform: str
    user_id: str
    user_name: str
    aliases: list[str] = field(default_factory=list)
    relationship_score: float = 0.0
    relationship_stage: str = "stranger"
    first_met_time: float | None = None
    last_impression_update: float | None = None
    version: int = 0  # optimistic concurrency: bumped by every write


@dataclass(kw_only=True)
class LearnedProfile:
    """What was learned about one person in one chat (by any of its personas): key facts,
    preferences, the impression and the profile summary (seed 000 §2, seed 003 §3.3)."""

    platform: str
    user_id: str
    chat_type: ChatType
    chat_id: str
    chat_name: str = ""
    user_name: str = ""
    impression_text: str = ""
    # [{"type", "value", "source": message id, "by": who said it, "at": day}]
    key_facts: list[dict[str, str]] = field(default_factory=list)
    preference_keywords: list[str] = field(default_factory=list)
    summary: str = ""
    traits: dict[str, Any] = field(default_factory=dict)
    updated_at: float | None = None
    version: int = 0

    @property
    def scope(self) -> ChatScope:
        return ChatScope(platform=self.platform, chat_type=self.chat_type, chat_id=self.chat_id)


@dataclass(kw_only=True)
class GroupProfile:
    """seed 003 §3.4: what a group is about, learned in that group."""

    platform: str
    group_id: str
    name: str
    summary: str = ""
    # Keys starting with "_" are bookkeeping (e.g. keyword counts) that may hold words of
    # one persona's conversation: kept for the merge, never shown to a model.
    traits: dict[str, Any] = field(default_factory=dict)
    updated_at: float | None = None
    version: int = 0

    @property
    def scope(self) -> ChatScope:
        return ChatScope(platform=self.platform, chat_type="group", chat_id=self.group_id)

    @property
    def shown_traits(self) -> dict[str, Any]:
        return {k: v for k, v in self.traits.items() if not k.startswith("_")}

    @property
    def private_traits(self) -> dict[str, Any]:
        return {k: v for k, v in self.traits.items() if k.startswith("_")}


@dataclass(kw_only=True)
class ProfileChange:
    """Everything one memory job changes about people and groups, applied atomically: the
    shared relationship, what was learned in the job's chat, and the group's profile."""

    request_id: str
    relationship: Relationship
    learned: LearnedProfile
    group: GroupProfile | None = None
    # what the message told about other people in the same chat (小明是医生 -> 小明's)
    others: tuple[LearnedProfile, ...] = ()


class ProfileConflict(Exception):
    """Someone else wrote the same user or group since it was read: read again, retry."""


@runtime_checkable
class ProfileStore(Protocol):
    def get_relationship(self, platform: str, user_id: str) -> Relationship | None: ...
    def learned_about(self, platform: str, user_id: str) -> list[LearnedProfile]:
        """Every chat's profile of this person, with the scope each was learned in."""
        ...

    def get_learned(self, scope: ChatScope, user_id: str) -> LearnedProfile | None: ...
    def get_group(self, platform: str, group_id: str) -> GroupProfile | None: ...
    def unscoped(self, platform: str, user_id: str) -> dict[str, Any] | None:
        """Content from before profiles had provenance, that no chat may see: operators only."""
        ...

    def was_applied(self, request_id: str) -> bool: ...
    def apply(self, change: ProfileChange) -> bool:
        """Write the change if nobody wrote these rows since they were read (their
        ``version``) and the request was not applied before. Returns False for a duplicate;
        raises ProfileConflict on a concurrent write."""
        ...

    def forget(self, target: ForgetTarget) -> dict[str, int]: ...


@dataclass(frozen=True)
class ProfileView:
    """What one chat may see of a person: the relationship, and the profiles learned in the
    chats the sharing policy admits (this chat's first)."""

    relationship: Relationship | None
    learned: list[LearnedProfile]

    @property
    def key_facts(self) -> list[dict[str, str]]:
        """This chat's facts first; another chat's only for a type not known here."""
        facts: list[dict[str, str]] = []
        for profile in self.learned:
            seen = {f["type"] for f in facts if f["type"] != "other"}
            facts += [f for f in profile.key_facts if f["type"] not in seen]
        return facts

    @property
    def preference_keywords(self) -> list[str]:
        return list(dict.fromkeys(p for lp in self.learned for p in lp.preference_keywords))


def profile_view(
    store: ProfileStore, user_id: str, shown_in: ChatScope, sharing: Sharing
) -> ProfileView:
    learned = [
        lp
        for lp in store.learned_about(shown_in.platform, user_id)
        if may_share(lp.scope, shown_in, sharing)
    ]
    learned.sort(key=lambda lp: (lp.scope != shown_in, -(lp.updated_at or 0.0)))
    return ProfileView(store.get_relationship(shown_in.platform, user_id), learned)


# --- personas -----------------------------------------------------------------------------


@dataclass(kw_only=True)
class Persona:
    """seed 001 §1.1: who the bot is in a chat. ``name`` is what memories and prompts call
    it; ``aliases`` are other names people address it by (each wakes it, like @bot);
    ``begin_dialogs`` is the opening dialogue, user and bot lines alternating."""

    persona_id: str
    name: str
    system_prompt: str = ""
    begin_dialogs: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)


@runtime_checkable
class PersonaStore(Protocol):
    def get_persona(self, persona_id: str) -> Persona | None: ...
    def put_persona(self, persona: Persona) -> None: ...
    def list_personas(self) -> list[Persona]: ...
    def persona_for(self, scope: ChatScope, default: str | None = None) -> str:
        """The persona that serves a chat when a message names none: the one chosen for
        the chat, else ``default`` (a bot's own), else the deployment's."""
        ...


@runtime_checkable
class Stickers(Protocol):
    def pick(self, text: str) -> dict[str, str]:
        """The sticker whose description is nearest in meaning: ``{"id", "description"}``."""
        ...


# --- the durable memory-job queue ---------------------------------------------------------


@dataclass(kw_only=True)
class JobRow:
    request_id: str
    payload: dict[str, Any]
    bot_id: str = ""  # the bot whose job it is (its stores run it)
    status: JobStatus
    attempts: int = 0
    last_error: str | None = None
    result: dict[str, Any] | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    next_attempt_at: float = 0.0


@runtime_checkable
class JobQueue(Protocol):
    def enqueue(
        self, request_id: str, payload: dict[str, Any], *, scope: ChatScope, user_id: str
    ) -> bool:
        """Add a job (its chat and person kept beside the payload, so forget can find it);
        False when this request id is already queued, running or done."""
        ...

    def claim(self, worker: str, *, lease_s: float, request_id: str | None = None) -> JobRow | None:
        """Take the next due job (or a running one whose lease ran out after a crash)."""
        ...

    def claim_more(self, worker: str, *, lease_s: float, after: str, limit: int) -> list[JobRow]:
        """Up to ``limit`` more due jobs of the chat of ``after``, a job this worker holds,
        earliest first (a chat's backlog, run by one worker in order)."""
        ...

    def renew(self, request_id: str, worker: str, *, lease_s: float) -> bool:
        """Extend a running job's lease (the worker's heartbeat); False if it lost it."""
        ...

    def complete(self, request_id: str, result: dict[str, Any]) -> None: ...
    def complete_many(self, results: dict[str, dict[str, Any]]) -> None:
        """Jobs done, by request id with their results, all at once."""
        ...

    def fail(self, request_id: str, error: str, *, retry_at: float | None) -> None:
        """Record an error: back to ``queued`` until ``retry_at``, or ``failed`` if None."""
        ...

    def defer(self, request_id: str, reason: str, *, until: float) -> None:
        """Give a claimed job back, due again at ``until``, without counting the attempt
        (this worker could not run it; another one may)."""
        ...

    def get(self, request_id: str) -> JobRow | None: ...
    def counts(self) -> dict[str, int]: ...
    def forget(self, target: ForgetTarget, *, running: bool = False) -> list[JobRow]:
        """Delete the jobs the target covers and returns them: all but those a live worker
        holds, or with ``running`` those too."""
        ...

    def running(self, target: ForgetTarget, *, everyone: bool = False) -> list[str]:
        """Request ids of the target's jobs (``everyone``: of anyone in its chats) a live
        worker holds now."""
        ...

    def scrub(self, target: ForgetTarget, said: Said) -> list[str]:
        """Take a forgotten person's lines, and lines quoting them, out of the recent
        messages other jobs in the target's chats carry; returns the jobs changed."""
        ...

    def list(self, status: JobStatus | None = None, limit: int = 50) -> list[JobRow]: ...


Clock = Callable[[], float]


def job_thread_id(bot: str, request_id: str) -> str:
    """The checkpointer thread of a memory job run in-process: request ids are a bot's own
    (two bots may both have ``mem-1``), so the bot comes first (a bot id holds no '/')."""
    return f"{bot}/{request_id}"


# --- chat messages (the reply graph) ------------------------------------------------------


@dataclass(kw_only=True)
class StoredMessage:
    """A chat message as stored; ``seq`` orders messages by when groupmind saw them."""

    stream: str
    message_id: str
    platform: str
    chat_type: ChatType
    chat_id: str
    user_id: str
    user_name: str
    content: str
    timestamp: float
    reply_to: str | None = None
    mentions: list[str] = field(default_factory=list)
    persona_id: str = "default"
    from_bot: bool = False
    keywords: list[str] = field(default_factory=list)
    seq: int = 0


@runtime_checkable
class MessageStore(Protocol):
    """Messages per stream and persona: every read names both (a persona's conversation is
    its own, docs/scopes.md)."""

    def add(self, message: StoredMessage) -> StoredMessage:
        """Store a message (idempotent by stream, persona and message id); returns it with
        its seq."""
        ...

    def get(
        self, stream: str, persona_id: str, message_ids: Sequence[str]
    ) -> list[StoredMessage]: ...
    def window(
        self,
        stream: str,
        persona_id: str,
        *,
        before: float,
        since: float,
        limit: int,
        exclude: str | None = None,
    ) -> list[StoredMessage]:
        """The latest ``limit`` messages with since <= timestamp <= before, oldest first."""
        ...

    def older(
        self, stream: str, persona_id: str, *, before_seq: int | None, limit: int
    ) -> list[StoredMessage]:
        """A page of the stream's history in the order it was stored: the ``limit`` messages
        before ``before_seq`` (None: the latest), oldest first."""
        ...

    def replies_to(
        self, stream: str, persona_id: str, message_ids: Sequence[str], limit: int
    ) -> list[StoredMessage]: ...
    def newer_than(self, stream: str, persona_id: str, seq: int) -> list[StoredMessage]: ...
    def members(self, stream: str) -> dict[str, str]:
        """user_id -> latest user_name of everyone who spoke in the stream (names, no
        content: shared by the chat's personas)."""
        ...

    def forget(self, target: ForgetTarget, said: Said | None = None) -> dict[str, int]:
        """Delete the messages (and memberships) the target covers; for a person, with
        ``said``, also the bot's lines in those chats that quote or name them; returns how
        many went, per stream."""
        ...

    def said_by(self, target: ForgetTarget) -> Said:
        """A person's names and messages in the chats the target covers."""
        ...


@runtime_checkable
class RunInbox(Protocol):
    """Reply inputs journaled when a server run is created, before it is queued: a run the
    server cancels or rolls back before it starts (double-texting) leaves its message
    here for the thread's next run to take."""

    def put(self, thread_id: str, message: dict[str, Any], *, scope: ChatScope) -> None: ...
    def waiting(self, thread_id: str) -> list[dict[str, Any]]:
        """The thread's journaled messages, oldest first."""
        ...

    def take(self, thread_id: str, message_ids: Sequence[str]) -> None: ...
    def forget(self, target: ForgetTarget) -> int: ...


class BridgeJournal(Protocol):
    """A chat bridge's own record of the events it received and the answers it sent (the
    OneBot bridge's journal), as forget sees it: one bot's rows."""

    def forget(self, target: ForgetTarget, said: Said) -> int:
        """Erase the chat's rows, or the person's and the rows quoting or naming them;
        how many went."""
        ...


@runtime_checkable
class ChatStateRegistry(Protocol):
    def set_state(self, stream: str, state: str) -> None: ...
    def count(self, state: str, *, excluding: str | None = None) -> int: ...
    def forget(self, stream: str) -> int: ...


def usage_id(stream: str, persona_id: str, message_id: str) -> str:
    """The context-usage record of a reply: one per stream, persona and message (JSON, not
    a joined string: ids may hold any separator)."""
    return json.dumps([stream, persona_id, message_id], ensure_ascii=False)


@dataclass(kw_only=True)
class ContextUsage:
    """seed 004 §4.2; ``context_id``: ``usage_id`` of the message."""

    context_id: str
    platform: str
    chat_type: ChatType
    chat_id: str
    persona_id: str
    user_id: str
    trigger_message_id: str
    context_message_ids: list[str]
    relevance_scores: dict[str, float]
    llm_response: str | None = None
    # the model tokens the reply used (plan, reply and its tool rounds), and their cost
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    memory_ids: list[str] = field(default_factory=list)  # the memories the reply was given
    action: str = ""  # the plan's decision, and why
    reason: str = ""


@runtime_checkable
class ContextUsageStore(Protocol):
    def record(self, usage: ContextUsage) -> None: ...
    def get(self, context_id: str) -> ContextUsage | None: ...
    def get_many(self, context_ids: Sequence[str]) -> dict[str, ContextUsage]:
        """The records there are, by id (one read for a page of messages)."""
        ...

    def forget(self, target: ForgetTarget, said: Said | None = None) -> int:
        """Delete the records of a chat, or of the replies to a person and, with ``said``,
        the records in their chats whose reply quotes or names them; returns how many."""
        ...
