"""The offline profile merge: key facts and likes by pattern (``fact_rules``: Chinese and
English, about the speaker and about the people they talk to or name), affection from a
few sentiment words, group topics from keywords several people used.
Honest about what it is: pattern matching, not understanding. It writes no impression of
its own (an impression describes a person, and copying what they said would be
conversation content); the reply model's ``update_user_impression`` lines are kept.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

from domain.people import FACT_LABELS
from nodes.memory.fact_rules import ADDRESSEE, SELF, likes, stated
from nodes.memory.profile_change import (
    Current,
    base_learned,
    base_relationship,
    finish_relationship,
    merge_key_facts,
    provenance,
    trim_impression,
    unique,
)
from nodes.memory.rewrite import rules_parts
from state.memory import MemoryJob
from stores import topics as topic_counts
from stores.base import GroupProfile, LearnedProfile, ProfileChange
from stores.people import name_index
from stores.text import has_cjk, keywords

ALIAS = [
    re.compile(r"叫我([^，。,.!！?？\s]{1,8})"),
    re.compile(
        r"(?:^|[，。！？,.!?\s])我(?:叫|的名字是|的名字叫)([^，。,.!！?？\s]{2,6}?)(?=[，。,.!！?？\s]|$)"
    ),
    re.compile(r"\b(?:call me|[Mm]y name is) ([A-Z][a-z]+)"),
]
POSITIVE = re.compile(
    r"谢谢|感谢|喜欢你|爱你|哈哈|开心|太好了|厉害|\b(?:thanks?|thank you|love you|awesome|great|glad)\b",
    re.I,
)
NEGATIVE = re.compile(
    r"讨厌|滚|烦死|闭嘴|笨蛋|垃圾|\b(?:hate you|stupid|shut up|annoying|idiot)\b", re.I
)


def affection_change(text: str) -> float:
    """+0.01 for an ordinary exchange, +0.02 when warm, -0.03 when hostile."""
    if NEGATIVE.search(text):
        return -0.03
    return 0.02 if POSITIVE.search(text) else 0.01


def summarize_user(name: str, facts: list[dict[str, str]], prefs: list[str], zh: bool) -> str:
    parts = [
        f"{FACT_LABELS[f['type']][0]}：{f['value']}"
        if zh
        else f"{FACT_LABELS[f['type']][1]}: {f['value']}"
        for f in facts
    ]
    if prefs:
        parts.append(("喜欢：" if zh else "likes: ") + ("、" if zh else ", ").join(prefs[-8:]))
    if not parts:
        return ""
    return f"{name}：" + "；".join(parts) if zh else f"{name} — " + "; ".join(parts)


def group_profile(job: MemoryJob, current: GroupProfile | None, text: str) -> GroupProfile:
    """Topics are keywords at least two people used, counted per speaker so a person's
    words can be taken out again (``stores.topics``)."""
    traits = topic_counts.added(current.traits if current else {}, job.user_id, keywords(text, 5))
    name = job.chat_name or (current.name if current else job.scope_chat_id)
    zh = has_cjk(text) or has_cjk(name)
    summary = topic_counts.summary_of(name, traits["topics"], zh)
    return GroupProfile(
        platform=job.platform,
        group_id=job.scope_chat_id,
        name=name,
        summary=summary or (current.summary if current else ""),
        traits=traits,
        version=current.version if current else 0,
    )


def in_their_words(job: MemoryJob, persona: str) -> str:
    """new_info as the person would say it, which is what the patterns read: the bot's
    notes (``new_info_by="bot"``: 你 is them, 我 the bot) are made absolute, then their
    name becomes 我 / my / I."""
    if job.new_info_by == "user":
        return job.new_info
    text = rules_parts(job, persona)[1]
    if not job.user_name.isascii():
        return text.replace(job.user_name, "我")
    name = re.escape(job.user_name)
    return re.sub(rf"\b{name}\b", "I", re.sub(rf"\b{name}'s\b", "my", text))


def people_named(job: MemoryJob, members: Mapping[str, str]) -> dict[str, str]:
    """Name form -> user id of the chat's ``members`` (user id -> name) and of the people
    in the conversation (the speaker included; the conversation's names win)."""
    pairs = [(m.user_id, m.user_name) for m in job.recent_messages if m.user_id]
    return name_index([*members.items(), *pairs, (job.user_id, job.user_name)])


def told(job: MemoryJob, info: str, members: Mapping[str, str]) -> dict[str, list[dict[str, str]]]:
    """The facts ``info`` (``in_their_words``) states, by the user id they are about, with
    their provenance; ``members``: everyone who spoke in the chat (user id -> name), not
    only the few lines a job carries. Only the person's own words are credited to others:
    in the bot's notes about them (``new_info_by="bot"``) only they are the subject."""
    names = people_named(job, members)
    own_words = job.new_info_by == "user"
    by_user: dict[str, list[dict[str, str]]] = {}
    for fact in stated(info, tuple(names)):
        uid: str | None = None
        if fact.subject == SELF:
            uid = job.user_id
        elif own_words and fact.subject == ADDRESSEE:
            other = job.addressed()
            uid = other.user_id if other is not None else None
        elif own_words:
            uid = names.get(fact.subject)
        if uid is not None:
            entry = {"type": fact.type, "value": fact.value, **provenance(job)}
            by_user.setdefault(uid, []).append(entry)
    return by_user


def learn(learned: LearnedProfile, facts: list[dict[str, str]], prefs: list[str]) -> None:
    """Fold facts and likes into a chat's profile of someone: superseded values go to the
    profile's history; the summary and traits follow."""
    history = list(learned.traits.get("history", []))
    learned.key_facts = merge_key_facts(learned.key_facts, facts, history)
    learned.preference_keywords = unique([*learned.preference_keywords, *prefs], 20)
    zh = any(has_cjk(f["value"]) for f in learned.key_facts) or has_cjk(learned.user_name)
    learned.summary = summarize_user(
        learned.user_name, learned.key_facts, learned.preference_keywords, zh
    )
    learned.traits = {
        **learned.traits,
        "key_facts": {f["type"]: f["value"] for f in learned.key_facts},
        "preferences": learned.preference_keywords,
        "history": history,
    }


def rules_change(
    job: MemoryJob,
    current: Current,
    info: str,
    about: dict[str, list[dict[str, str]]],
    members: Mapping[str, str],
) -> ProfileChange:
    """The change ``info`` (``in_their_words``) makes, with ``about`` its facts (``told``,
    over the chat's ``members``): both are read once, before the read-compute-write loop
    that may run this again."""
    ts = job.when.timestamp()
    rel = base_relationship(job, current.relationship)
    learned = base_learned(job, current.learned)
    tool = [{**f.model_dump(), **provenance(job)} for f in job.key_facts]  # the reply model's
    learn(learned, [*about.get(job.user_id, []), *tool], likes(info))
    others = []
    names = {uid: name for name, uid in people_named(job, members).items()}
    for uid, facts in about.items():
        if uid == job.user_id or uid not in current.others:
            continue  # others not read before this merge are never written blind
        other = other_learned(job, uid, names.get(uid, uid), current.others[uid])
        learn(other, facts, [])
        others.append(other)
    aliases = [m.group(1) for p in ALIAS for m in p.finditer(info)]
    rel.aliases = [a for a in unique([*rel.aliases, *aliases], 20) if a != job.user_name]
    if job.impression_update:
        day = job.when.date().isoformat()
        learned.impression_text = trim_impression(
            f"{learned.impression_text}\n[{day}] {job.impression_update}".strip()
        )
    rel = finish_relationship(rel, affection_change(info), ts)
    from_tool = bool(job.key_facts or job.impression_update)  # the model's words, not theirs
    group = (
        group_profile(job, current.group, info)
        if job.chat_type == "group" and not from_tool
        else None
    )
    return ProfileChange(
        request_id=job.request_id,
        relationship=rel,
        learned=learned,
        group=group,
        others=tuple(others),
    )


def other_learned(
    job: MemoryJob, user_id: str, name: str, current: LearnedProfile | None
) -> LearnedProfile:
    """This chat's profile of someone the message talks about (a copy to change)."""
    if current is not None:
        return replace(current, key_facts=list(current.key_facts), traits=dict(current.traits))
    return LearnedProfile(
        platform=job.platform,
        user_id=user_id,
        chat_type=job.chat_type,
        chat_id=job.scope_chat_id,
        chat_name=job.chat_name or "",
        user_name=name,
    )
