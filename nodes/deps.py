"""Clients the nodes use, bound once when a graph is built (never inside a node)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import Any, Protocol, Self, TypeVar

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver

from domain.limits import DEFAULTS, Limits
from domain.scope import ChatScope, ForgetTarget
from nodes.model import Prices, StructuredOutput
from nodes.settings import ChatRules, RankSettings
from state.validation import InputError
from stores.base import (
    BridgeJournal,
    ChatStateRegistry,
    ContextUsageStore,
    JobQueue,
    MemoryStore,
    MessageStore,
    PersonaStore,
    ProfileStore,
    RunInbox,
    Stickers,
)
from stores.said import Said
from stores.script import has_cjk

T = TypeVar("T")
log = logging.getLogger("groupmind")
_WARNED: set[str] = set()  # personas served under their id, warned about once


class _Inline(Executor):
    """Runs background work at once (tests, one-shot scripts)."""

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def]
        from concurrent.futures import Future

        future: Future[object] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - handed to the future like a pool would
            future.set_exception(exc)
        return future


class Foreground:
    """Which chats have a reply in flight, so background memory work can wait for a quiet
    moment instead of competing with replies for the GIL and the cores. A run that died
    mid-way stops counting after ``stale_s``."""

    def __init__(self, stale_s: float = 2.0) -> None:
        self.stale_s = stale_s
        self._active: dict[str, float] = {}
        self._last = 0.0  # the last time a reply started or finished
        self._lock = threading.Lock()

    def enter(self, key: str) -> None:
        with self._lock:
            self._active[key] = self._last = time.monotonic()

    def leave(self, key: str) -> None:
        with self._lock:
            self._active.pop(key, None)
            self._last = time.monotonic()

    def quiet_for(self) -> float:
        """Seconds since the last reply activity (0 while a reply is in flight)."""
        now = time.monotonic()
        with self._lock:
            self._active = {k: t for k, t in self._active.items() if now - t < self.stale_s}
            return 0.0 if self._active else now - self._last

    def wait_quiet(self, quiet_s: float, max_wait_s: float) -> None:
        """Until replies have paused for ``quiet_s``, or ``max_wait_s`` at most (so memory
        is never starved by a busy chat)."""
        deadline = time.monotonic() + max_wait_s
        while self.quiet_for() < quiet_s and time.monotonic() < deadline:
            time.sleep(0.005)


class NotAllowed(InputError):
    """A run acts on a platform its bot may not use: refused before anything is written."""

    def __init__(self, reason: str) -> None:
        super().__init__("platform", reason)


class ReplyThreads(Protocol):
    """A deployment's reply threads, for forget: a forgotten chat's deleted, a person's
    lines (and lines quoting them) taken out of the others. In-process they are the
    checkpointer's; on a LangGraph server, the server's (scrubbed from inside it)."""

    def scrub(self, streams: Sequence[str], target: ForgetTarget, said: Said) -> int: ...
    async def ascrub(self, streams: Sequence[str], target: ForgetTarget, said: Said) -> int: ...


@dataclass(frozen=True, kw_only=True)
class Model:
    """The chat model (None = offline: rule variants only) and how it is called; one per
    process, shared by every bot."""

    chat: BaseChatModel | None = None
    structured: StructuredOutput = field(default_factory=StructuredOutput)
    prices: Prices = field(default_factory=Prices)  # per 1k tokens, for cost estimates


@dataclass(frozen=True, kw_only=True)
class Knobs:
    """The nodes' settings (``GROUPMIND_RANK__*``, ``GROUPMIND_CHAT_STATES__*``...); a run's
    ``Context`` may override some of them (``Context.auto_top_k``)."""

    rank: RankSettings = field(default_factory=RankSettings)
    chat_rules: ChatRules = field(default_factory=ChatRules)
    auto_top_k: int = 3
    reply_history: int = 20  # a reply thread's history is pruned every this many runs (0: kept)
    # a memory job that brings no recent messages reads this many said before it (0: none)
    earlier_memories: int = 3


@dataclass(frozen=True, kw_only=True)
class Process:
    """What one process holds for every bot it serves: its background executor, the memory
    worker's wake-up and checkpointer, and which chats have a reply in flight."""

    background: Executor = field(default_factory=_Inline)  # work that must not delay a reply
    on_job: Callable[[], None] = lambda: None  # wakes the in-process memory worker
    foreground: Foreground = field(default_factory=Foreground)
    # The memory worker's checkpointer (threads = request ids): forget drops a job's.
    checkpoints: BaseCheckpointSaver[str] | None = None


@dataclass(frozen=True, kw_only=True)
class Deps:
    """One bot's stores, its limits (``limits.bot_id`` is whose they are), the nodes'
    knobs, the model and what its process holds; each part is passed whole."""

    events: MemoryStore
    profiles: ProfileStore
    personas: PersonaStore
    # the reply graph's
    messages: MessageStore | None = None
    chat_states: ChatStateRegistry | None = None
    context_usage: ContextUsageStore | None = None
    jobs: JobQueue | None = None  # hand-off writes memory jobs here
    run_inbox: RunInbox | None = None  # server runs' inputs, journaled (double-texting)
    bridge_journal: BridgeJournal | None = None  # what a chat bridge received and sent
    stickers: Stickers | None = None
    limits: Limits = DEFAULTS
    knobs: Knobs = field(default_factory=Knobs)
    model: Model = field(default_factory=Model)
    process: Process = field(default_factory=Process)

    def with_chat(self, chat: BaseChatModel | None) -> Self:
        """The same stores over another chat model (an experiment's arm, a test's)."""
        return replace(self, model=replace(self.model, chat=chat))

    def allow(self, platforms: Iterable[str]) -> None:
        """Refuse (NotAllowed) unless every platform is one this bot may act on."""
        allowed = self.limits.platforms
        if allowed is None:
            return
        for platform in platforms:
            if platform not in allowed:
                mine = ", ".join(sorted(allowed)) or "none"
                raise NotAllowed(
                    f"platform {platform!r} is not one of bot {self.limits.bot_id!r}'s ({mine})"
                )

    @cached_property
    def validation(self) -> dict[str, object]:
        """The deployment's limits (typed) and its personas, as pydantic validation context
        for inputs (``state.validation.context_limits``): built once per ``Deps`` (frozen:
        its limits and personas never change under it); read, never changed."""
        return {"limits": self.limits, "persona_for": self.persona_for}

    def persona_for(self, platform: str, chat_type: str, chat_id: str) -> str:
        """The persona that serves a chat when a message names none."""
        scope = ChatScope(platform=platform, chat_type=chat_type, chat_id=chat_id)  # type: ignore[arg-type]
        return self.personas.persona_for(scope, self.limits.default_persona)

    def persona_name(self, persona_id: str, said: str = "") -> str:
        """The display name; an unconfigured persona is served under the bot's name
        (settings ``bot_name``, or ``bot_name_en`` when what is ``said`` in the chat is not
        Chinese; one warning), never under its id."""
        persona = self.personas.get_persona(persona_id)
        if persona is not None:
            return persona.name
        if said and not has_cjk(said):
            return self.limits.bot_name_en
        if persona_id not in _WARNED:
            _WARNED.add(persona_id)
            log.warning(
                "persona %r is not configured (groupmind persona set %s --name ...): it is "
                "called %r (GROUPMIND_BOT_NAME)",
                persona_id,
                persona_id,
                self.limits.bot_name,
            )
        return self.limits.bot_name

    def people(self, stream: str) -> dict[str, str]:
        """user id -> name of everyone who spoke in the stream, the bot left out (a memory
        job carries only the lines since the last hand-off); {} without a message store."""
        members = self.messages.members(stream) if self.messages is not None else {}
        members.pop(self.limits.bot_id, None)
        return members

    def persona_names(self, persona_id: str) -> list[str]:
        """Every name the persona answers to: its display name and its aliases (an
        unconfigured persona's is the bot's name: its id is a key, never a name)."""
        persona = self.personas.get_persona(persona_id)
        return [persona.name, *persona.aliases] if persona else [self.limits.bot_name]


@dataclass(frozen=True, kw_only=True)
class ReplyDeps(Deps):
    """What the reply graph runs on: the stores it cannot do without are not optional (a
    deployment builds them all: ``groupmind.wiring``). The memory graph reads the message
    store when there is one (who spoke in a chat); forget erases what there is."""

    # field(): required here, though Deps gives them a default of None
    messages: MessageStore = field()
    chat_states: ChatStateRegistry = field()
    context_usage: ContextUsageStore = field()
    jobs: JobQueue = field()  # hand-off writes memory jobs here
    stickers: Stickers = field()


@dataclass(frozen=True, kw_only=True)
class ForgetDeps(Deps):
    """What the forget graph runs on: besides the bot's stores, what forget must reach
    that they do not hold, each required (None only where the process has none)."""

    reply_threads: ReplyThreads | None = field()  # the reply threads to scrub
    # the copies groupmind made of the bot's data (exports, experiments' arms)
    copies: Callable[[ForgetTarget, Said], dict[str, Any]] = field()
    # what makes the engines let go of erased rows on disk (a report per store)
    compact: Callable[[], dict[str, str]] | None = field()

    @classmethod
    def over(
        cls,
        deps: Deps,
        *,
        reply_threads: ReplyThreads | None,
        copies: Callable[[ForgetTarget, Said], dict[str, Any]],
        compact: Callable[[], dict[str, str]] | None,
    ) -> ForgetDeps:
        """The bot's ``deps`` (each part as it is), with what forget reaches beyond them."""
        own = {f.name: getattr(deps, f.name) for f in fields(Deps)}
        return cls(**own, reply_threads=reply_threads, copies=copies, compact=compact)


def need_chat(deps: Deps) -> BaseChatModel:
    """The chat model of an ``llm`` variant (checked when the variant was chosen)."""
    if deps.model.chat is None:
        raise RuntimeError("Deps.model.chat is not configured: set GROUPMIND_CHAT_MODEL")
    return deps.model.chat


def need(dep: T | None, name: str) -> T:
    """A store this process may lack (a worker's queue, the checkpointer), or a clear
    error naming it."""
    if dep is None:
        raise RuntimeError(f"Deps.{name} is not configured in this process")
    return dep
