"""embed: upsert the event into the event store; the id is the request id, so running the
same job twice leaves one document."""

from __future__ import annotations

from collections.abc import Mapping

from langgraph.graph import END

from nodes.deps import Deps
from nodes.memory.importance import importance
from nodes.memory.ties import ties_of
from state.context import Context
from state.memory import MemoryJob, MemoryState, current_job
from state.slots import EmbedWrites
from stores.base import EventRecord
from stores.script import has_cjk
from stores.text import questions_in, without_questions

MAX_CONTEXT_CHARS = 300


def reply_context(job: MemoryJob) -> tuple[str, str]:
    """The last message from someone else before this exchange (what the user answered),
    and who said it."""
    for message in reversed(job.recent_messages):
        if message.user_id != job.user_id and message.user_name != job.user_name:
            said = f"{message.user_name}: {message.content}"[:MAX_CONTEXT_CHARS]
            return said, message.user_id or ""
    return "", ""


def vector_key(job: MemoryJob, said: str, text: str) -> str:
    """What a memory's vector is made of, when not its ``text``. Chinese: the words as said,
    under the speaker's name (e5 reads "name：words" best, and a rewrite can misplace a
    他 the words hold right), then what the bot told in answer. Else the rewrite (on
    LoCoMo the words as said, I and you, put the dense side alone at R@5 0.386 against
    0.494). Neither holds what the bot asked: "你推荐过什么书" is about its answer, and
    "What kind of cuisine do you like?" holds none, so it drew questions to the exchange
    before the user's answer (MemoryBank, docs/benchmarks/memory.md, "Stop 66")."""
    if said and has_cjk(said):
        told = without_questions(job.action_summary)
        return f"{job.user_name}：{said}\n{told}" if told else f"{job.user_name}：{said}"
    kept = text
    for question in questions_in(job.action_summary):
        # once: the bot's words come first in the rewrite; the user may ask the same
        kept = kept.replace(question, " ", 1)
    return " ".join(kept.split()) if kept != text else ""


def event_for(
    state: MemoryState, people: Mapping[str, str] | None = None, bot_id: str = ""
) -> EventRecord:
    """The event a job's text makes, with the ties it shows; ``people``: the chat's members
    (user id -> name; a fact about one of them is what matters most), the bot's id apart."""
    job = current_job(state)
    people = people or {}
    context, context_user_id = reply_context(job)
    names = tuple({job.user_name, *(m.user_name for m in job.recent_messages), *people.values()})
    said = job.new_info if job.new_info_by == "user" else ""  # first-person facts read there
    return EventRecord(
        id=job.request_id,
        text=state["text"],
        timestamp=job.when.timestamp(),
        user_id=job.user_id,
        user_name=job.user_name,
        platform=job.platform,
        chat_type=job.chat_type,
        chat_id=job.scope_chat_id,
        chat_name=job.chat_name or "",
        persona_id=job.persona_id,
        degraded=bool(state.get("degraded")),
        context=context,
        context_user_id=context_user_id,
        importance=importance(state["text"], said, names),
        key=vector_key(job, said, state["text"]),
        said=said,
        ties=ties_of(job, people, bot_id),
    )


def embed(state: MemoryState, ctx: Context, deps: Deps) -> EmbedWrites:
    event = event_for(state, deps.people(current_job(state).scope.key), deps.limits.bot_id)
    deps.events.upsert(event)
    return {"status": "degraded" if event.degraded else "stored"}


def route_after_embed(state: MemoryState) -> str:
    return "merge_profile" if current_job(state).new_info else END


VARIANTS = {"embed": {"default": embed}}
