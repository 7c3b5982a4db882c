"""The data ``make bench-memory`` runs on, as memory jobs, questions and profile facts.

- ``people``: the Chinese group-member paraphrase set (``benchmarks.zh_people``, made here).
- ``dialogre``: DialogRE's Chinese Friends dialogues (public; research use). Each dialogue is
  one group chat, each turn one memory job with the turns before it as the bot's hand-off
  passes them (the last ten, the speaker's own left out). The speakers get
  their names (DialogRE's ``per:alternate_names``; the one the dialogue uses most). From
  each relation fact about a person we ask a templated question ("乔伊是做什么的？");
  evidence: the turns holding the answer and the relation's trigger (or, without a
  trigger, the answer and the person). Where both sides of a relation are people of the
  dialogue, it is also asked naming both ("瑞秋和罗斯是什么关系？", category
  "between two people"), by a third person of the dialogue. Profile gold: the facts whose relation maps to a
  profile slot, "self" when the person says the answer themselves, "others" when only
  others do.
- ``dialogre-en``: the same from DialogRE's English original (Friends transcripts; many
  speakers to a scene), the questions asked in English ("How old is Emma?", "How do Joey
  Tribbiani and Pheebs get along?"): English talk among many.
- ``statements``: DuLeMon's persona entries (189 first-person statements: 我是巨蟹座,
  我在邮局工作, ...), each said once in a chat, against slot labels made here by hand
  (``benchmarks.dulemon_slots``): profile-slot recall and precision on self-statements.
- ``dulemon``: DuLeMon's Chinese persona chats (public; Apache-2.0). Each user utterance
  tagged with a persona entry (U1: 我 是 巨蟹 座) is a self-statement: a profile fact learned
  from it must be part of that entry (precision), and each entry with a slot should be
  learned (recall).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

from benchmarks import dulemon_slots, zh_people
from nodes.memory.lexicon import find_relative
from nodes.reply.hand_off import MAX_RECENT
from state.memory import MAX_RECENT_CHARS, cut

TZ = timezone(timedelta(hours=8))
START = datetime(2024, 3, 1, 20, 0, tzinfo=TZ)


@dataclass(frozen=True)
class Question:
    text: str
    chat_id: str
    asker_id: str
    asker_name: str
    gold: frozenset[str]
    category: str
    chat_type: Literal["group", "private"] = "group"


@dataclass(frozen=True)
class Fact:
    user_id: str
    slot: str
    value: str
    said_by: str  # "self" | "others"
    source: str = ""  # the persona entry a DuLeMon fact comes from


@dataclass
class MemorySet:
    name: str
    jobs: list[dict[str, Any]] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    # request id -> the persona entry its words use (DuLeMon), for precision
    sources: dict[str, str] = field(default_factory=dict)
    raw: dict[str, str] = field(default_factory=dict)  # request id -> "name: raw turn"
    # request id -> answers its raw text holds, which its stored text must keep too
    kept: dict[str, set[str]] = field(default_factory=dict)
    # every value learned is judged (a person with no gold for the slot: wrong), not only
    # values in slots that have gold
    judge_all: bool = False


def job(
    rid: str,
    chat: str,
    uid: str,
    name: str,
    text: str,
    when: datetime,
    recent: list[Any],
    chat_type: str = "group",
    action: str = "",
) -> dict[str, Any]:
    return {
        "request_id": rid,
        "action_summary": action,
        "new_info": text,
        "user_id": uid,
        "user_name": name,
        "platform": "qq",
        "chat_type": chat_type,
        "chat_id": chat,
        "chat_name": "",
        "persona_id": "default",
        "timestamp": when.isoformat(),
        # as the bot's hand-off writes them: the last MAX_RECENT messages, the speaker's own
        # left out (unless nothing else is left), each cut to its limit
        "recent_messages": [
            {**m, "content": cut(m["content"], MAX_RECENT_CHARS)}
            for m in [m for m in recent[-MAX_RECENT:] if m["user_id"] != uid]
            or recent[-MAX_RECENT:]
        ],
        "new_info_by": "user",
    }


def people_set() -> MemorySet:
    said, questions = zh_people.build()
    ids = {p: f"u{i}" for i, p in enumerate(zh_people.PEOPLE)}
    out = MemorySet("people")
    recent: list[dict[str, str]] = []
    for i, s in enumerate(said):
        when = START + timedelta(minutes=7 * i)
        out.jobs.append(job(s.id, "people", ids[s.user], s.user, s.text, when, recent))
        out.raw[s.id] = f"{s.user}: {s.text}"
        recent.append({"user_id": ids[s.user], "user_name": s.user, "content": s.text})
    for q in questions:
        first = q.text.startswith("我")
        out.questions.append(
            Question(
                q.text,
                "people",
                ids[q.asker],
                q.asker,
                frozenset({q.gold}),
                "asks about self" if first else "names a member",
            )
        )
    return out


# --- DialogRE -------------------------------------------------------------------------------

QUESTIONS = {
    "per:title": "{x}是做什么的？",
    "per:age": "{x}多大了？",
    "per:girl/boyfriend": "{x}的恋人是谁？",
    "per:spouse": "{x}的另一半是谁？",
    "per:siblings": "{x}有哪些兄弟姐妹？",
    "per:parents": "{x}的爸妈是谁？",
    "per:children": "{x}的孩子是谁？",
    "per:other_family": "{x}有哪些亲戚？",
    "per:roommate": "{x}和谁住在一起？",
    "per:friends": "{x}的朋友有谁？",
    "per:place_of_residence": "{x}住在哪里？",
    "per:pet": "{x}养了什么宠物？",
    "per:place_of_work": "{x}在哪里上班？",
    "per:employee_or_member_of": "{x}在哪个单位？",
    "per:origin": "{x}是哪里人？",
    "per:visited_place": "{x}去过哪里？",
    "per:boss": "{x}的老板是谁？",
    "per:subordinate": "{x}手下有谁？",
    "per:client": "{x}的客户是谁？",
    "per:works": "{x}有什么作品？",
    "per:schools_attended": "{x}在哪里上学？",
    "per:neighbor": "{x}的邻居是谁？",
    "per:dates": "{x}和谁约会过？",
    "per:positive_impression": "{x}喜欢谁？",
    "per:negative_impression": "{x}讨厌谁？",
    "per:acquaintance": "{x}认识谁？",
}
# Per-relation tables are long and thin (1-17 questions each): reported in three groups.
# A relation between two people, asked naming both (a question about two members of a
# group: how they get along, what they are to each other). Made here from DialogRE's
# relation facts whose two sides are both people named in the dialogue.
PAIR_QUESTIONS = {
    "per:girl/boyfriend": "{x}和{y}是什么关系？",
    "per:spouse": "{x}和{y}是什么关系？",
    "per:siblings": "{x}和{y}是什么关系？",
    "per:parents": "{x}和{y}是什么关系？",
    "per:children": "{x}和{y}是什么关系？",
    "per:other_family": "{x}和{y}是亲戚吗？",
    "per:roommate": "{x}和{y}住在一起吗？",
    "per:friends": "{x}和{y}关系怎么样？",
    "per:neighbor": "{x}和{y}是邻居吗？",
    "per:boss": "{x}和{y}谁管谁？",
    "per:subordinate": "{x}和{y}谁管谁？",
    "per:dates": "{x}和{y}约会过吗？",
    "per:positive_impression": "{x}觉得{y}怎么样？",
    "per:negative_impression": "{x}和{y}是不是闹矛盾了？",
}
PAIRS = "between two people"
# The same questions in English, for DialogRE's English original (``dialogre-en``)
QUESTIONS_EN = {
    "per:title": "What does {x} do for a living?",
    "per:age": "How old is {x}?",
    "per:girl/boyfriend": "Who is {x} going out with?",
    "per:spouse": "Who is {x} married to?",
    "per:siblings": "Who are {x}'s brothers and sisters?",
    "per:parents": "Who are {x}'s parents?",
    "per:children": "Who are {x}'s children?",
    "per:other_family": "Who are {x}'s relatives?",
    "per:roommate": "Who does {x} live with?",
    "per:friends": "Who are {x}'s friends?",
    "per:place_of_residence": "Where does {x} live?",
    "per:pet": "What pet does {x} have?",
    "per:place_of_work": "Where does {x} work?",
    "per:employee_or_member_of": "Which organisation is {x} part of?",
    "per:origin": "Where is {x} from?",
    "per:visited_place": "Where has {x} been?",
    "per:boss": "Who is {x}'s boss?",
    "per:subordinate": "Who works for {x}?",
    "per:client": "Who is {x}'s client?",
    "per:works": "What works has {x} made?",
    "per:schools_attended": "Where did {x} go to school?",
    "per:neighbor": "Who is {x}'s neighbour?",
    "per:dates": "Who has {x} been on a date with?",
    "per:positive_impression": "Who does {x} like?",
    "per:negative_impression": "Who does {x} dislike?",
    "per:acquaintance": "Who does {x} know?",
}
PAIR_QUESTIONS_EN = {
    "per:girl/boyfriend": "What are {x} and {y} to each other?",
    "per:spouse": "What are {x} and {y} to each other?",
    "per:siblings": "What are {x} and {y} to each other?",
    "per:parents": "What are {x} and {y} to each other?",
    "per:children": "What are {x} and {y} to each other?",
    "per:other_family": "Are {x} and {y} family?",
    "per:roommate": "Do {x} and {y} live together?",
    "per:friends": "How do {x} and {y} get along?",
    "per:neighbor": "Are {x} and {y} neighbours?",
    "per:boss": "Which of {x} and {y} is the boss?",
    "per:subordinate": "Which of {x} and {y} is the boss?",
    "per:dates": "Have {x} and {y} been on a date?",
    "per:positive_impression": "What does {x} think of {y}?",
    "per:negative_impression": "Have {x} and {y} fallen out?",
}
GROUPS = {
    "facts": ("title", "age", "pet", "works"),
    "places and organisations": ("place_of_residence", "origin", "visited_place",
                                 "place_of_work", "employee_or_member_of", "schools_attended"),
}  # fmt: skip
SLOTS = {
    "per:age": "age",
    "per:title": "job",
    "per:place_of_residence": "location",
    "per:origin": "hometown",
    "per:place_of_birth": "hometown",
    "per:girl/boyfriend": "partner",
    "per:spouse": "partner",
    "per:pet": "pet",
    "per:place_of_work": "workplace",
    "per:employee_or_member_of": "workplace",
    "per:schools_attended": "school",
    "per:date_of_birth": "birthday",
}
SPEAKER = re.compile(r"^(Speaker \d+)[:：]\s*(.*)$", re.S)


def speaker_names(turns: list[str], facts: list[dict[str, Any]]) -> dict[str, str]:
    """Speaker N -> the alternate name the dialogue uses most (else the first given)."""
    text = "\n".join(turns)
    names: dict[str, list[str]] = {}
    for f in facts:
        if "per:alternate_names" in f["r"] and f["x"].startswith("Speaker "):
            names.setdefault(f["x"], []).append(f["y"])

    def uses(name: str) -> tuple[bool, int]:
        if not name.isascii():
            return True, text.count(name)
        # English: a name, not a word inside others ("man" in "woman", "Hey, man")
        return name[:1].isupper(), len(re.findall(rf"\b{re.escape(name)}\b", text))

    return {
        speaker: max(options, key=lambda n: (*uses(n), -options.index(n)))
        for speaker, options in names.items()
    }


def dialogre_set(path: Path, limit: int | None, lang: str = "cn") -> MemorySet:
    data = json.loads(path.read_text())[:limit]
    out = MemorySet("dialogre" if lang == "cn" else f"dialogre-{lang}")
    questions, pair_questions = (
        (QUESTIONS, PAIR_QUESTIONS) if lang == "cn" else (QUESTIONS_EN, PAIR_QUESTIONS_EN)
    )
    day = START
    for d, (turns, facts) in enumerate(data):
        chat = f"friends-{d}"
        names = speaker_names(turns, facts)
        said: list[tuple[str, str, str]] = []  # (request id, speaker, text)
        recent: list[dict[str, str]] = []
        for t, turn in enumerate(turns):
            m = SPEAKER.match(turn)
            if not m:
                continue
            speaker, text = m.group(1), m.group(2).strip()
            if not text:
                continue
            name = names.get(speaker, speaker)
            uid = f"{chat}-{speaker.split()[1]}"
            rid = f"{chat}:{t}"
            when = day + timedelta(minutes=t)
            out.jobs.append(job(rid, chat, uid, name, text, when, recent))
            out.raw[rid] = f"{name}: {text}"
            recent.append({"user_id": uid, "user_name": name, "content": text})
            said.append((rid, speaker, text))
        day += timedelta(days=1)
        seen: set[tuple[str, ...]] = set()
        for f in facts:
            x = names.get(f["x"], f["x"])
            y = names.get(f["y"], f["y"])
            for rel, trigger in zip(f["r"], f["t"], strict=False):
                gold = evidence(said, f["x"], x, f["y"], y, trigger)
                for rid in gold:
                    # an answer holding a pronoun (我的朋友) is rewritten by design
                    if y in out.raw[rid].partition(": ")[2] and not find_relative(y):
                        out.kept.setdefault(rid, set()).add(y)
                pair = (x, y, rel)
                if (
                    rel in pair_questions
                    and gold
                    and pair not in seen
                    and len(gold) <= 5
                    and x != y
                    and y in names.values()
                    and x in names.values()
                ):
                    seen.add(pair)
                    asker = next((s for _, s, _ in said if names.get(s) not in (x, y)), None)
                    if asker is not None:
                        out.questions.append(Question(
                            pair_questions[rel].format(x=x, y=y), chat,
                            f"{chat}-{asker.split()[1]}", names.get(asker, asker),
                            frozenset(gold), PAIRS,
                        ))  # fmt: skip
                if rel in questions and gold and (x, rel) not in seen and len(gold) <= 5:
                    seen.add((x, rel))
                    uid = f"{chat}-{f['x'].split()[1]}" if f["x"].startswith("Speaker ") else ""
                    asker = next((s for _, s, _ in said if s != f["x"]), "Speaker 1")
                    out.questions.append(
                        Question(
                            questions[rel].format(x=x),
                            chat,
                            f"{chat}-{asker.split()[1]}",
                            names.get(asker, asker),
                            frozenset(gold),
                            group_of(rel),
                        )
                    )
                if rel in SLOTS and f["x"].startswith("Speaker ") and uid_ok(y):
                    by = "self" if any(s == f["x"] and y in text for _, s, text in said) else None
                    if by is None and any(y in text for _, _, text in said):
                        by = "others"
                    if by:
                        out.facts.append(Fact(f"{chat}-{f['x'].split()[1]}", SLOTS[rel], y, by))
    return out


def group_of(relation: str) -> str:
    name = relation.split(":")[1]
    return next((g for g, names in GROUPS.items() if name in names), "relations to people")


def uid_ok(value: str) -> bool:
    return bool(value) and not value.startswith("Speaker ")


def evidence(
    said: list[tuple[str, str, str]], xs: str, x: str, ys: str, y: str, trigger: str
) -> set[str]:
    """Turns holding the answer (or said by it, when it is a speaker) and the trigger; with
    no trigger, the answer and the person (named, or speaking)."""

    def has(who_s: str, who: str, s: str, text: str) -> bool:
        return who in text or s == who_s

    answer = [(rid, s, text) for rid, s, text in said if has(ys, y, s, text) and y in text]
    if trigger:
        found = {rid for rid, _, text in answer if trigger in text}
        return found or {rid for rid, _, text in said if trigger in text and x in text}
    return {rid for rid, s, text in answer if has(xs, x, s, text)}


# --- DuLeMon --------------------------------------------------------------------------------

ENTRY = re.compile(r"^([UB]\d+):\s*(.*)$")


def dulemon_set(path: Path) -> MemorySet:
    out = MemorySet("dulemon")
    samples = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for d, sample in enumerate(samples):
        chat, uid = f"dulemon-{d}", f"dulemon-user-{d}"
        entries = {
            m.group(1): m.group(2).replace(" ", "")
            for e in sample.get("user_said_persona", [])
            if (m := ENTRY.match(e))
        }
        name = next(
            (v[2:] for v in entries.values() if v.startswith("我叫") and len(v) <= 6), f"用户{d}"
        )
        recent: list[dict[str, str]] = []
        for t, line in enumerate(sample["conversation"]):
            who, _, rest = line.partition(": ")
            text, _, tag = rest.partition("\t")
            text = text.replace(" ", "")
            speaker, speaker_id = (name, uid) if who == "Usr" else ("小助手", "bot")
            if who == "Usr":
                rid = f"{chat}:{t}"
                out.jobs.append(
                    job(rid, chat, uid, name, text, START + timedelta(minutes=t), recent)
                )
                out.raw[rid] = f"{name}: {text}"
                if tag.strip() in entries:
                    out.sources[rid] = entries[tag.strip()]
            recent.append({"user_id": speaker_id, "user_name": speaker, "content": text})
        used = Counter(out.sources[r] for r in out.sources if r.startswith(f"{chat}:"))
        out.facts += [Fact(uid, "", e, "self", e) for e in entries.values() if used[e]]
    return out


def statements_set(path: Path) -> MemorySet:
    out = MemorySet("statements", judge_all=True)
    gold = dulemon_slots.labels()
    slot_names = {"like": "preference"}
    for d, line in enumerate(path.read_text().splitlines()):
        sample = json.loads(line)
        for side, keys in (("bot", ("bot_persona",)),
                           ("user", ("user_said_persona", "user_no_said_persona"))):  # fmt: skip
            uid, chat = f"persona-{d}-{side}", f"persona-{d}"
            name = f"{'伙伴' if side == 'bot' else '用户'}{d}"
            for t, entry in enumerate(e for k in keys for e in sample.get(k, [])):
                m = ENTRY.match(entry)
                if not m:
                    continue
                key, text = f"{d}:{m.group(1)}", m.group(2).replace(" ", "")
                rid = f"{chat}:{side}:{t}"
                when = START + timedelta(minutes=t)
                out.jobs.append(job(rid, chat, uid, name, text, when, []))
                out.raw[rid] = f"{name}: {text}"
                out.sources[rid] = key
                for slot, value in gold.get(key, []):
                    out.facts.append(Fact(uid, slot_names.get(slot, slot), value, "self", key))
    return out
