"""Whom a pronoun and where a place word stand for, in one speaker's words among many.

A group chat has many people: 他 is whoever was mentioned last (in the text before it,
else in the recent messages, newest first), 你们 the other people in the conversation,
那边 the place mentioned last. Each person is named once per clause: a later 我 in the same
clause is 自己, and a clause that opens with the person the previous clause opened with
drops the name (Chinese drops a repeated subject). 这里 is the chat only when the chat is
what is meant (这里有人…, 本群); otherwise it is where the speaker is. What cannot be
resolved is left as written: the quality gate flags it, and the job is stored degraded
with the word named.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from nodes.memory.lexicon import (
    ZH_FIRST,
    ZH_FIRST_PLURAL,
    ZH_SECOND,
    ZH_SECOND_PLURAL,
    zh_person_before,
    zh_pronoun_tokens,
)
from stores.text import NAME_POS, PLACE_POS, name_like, tagged
from stores.when import EN_MONTHS, EN_WEEKDAYS

# A relation someone owns (我的儿子, 你妹妹, 瑞秋的男朋友) is a person 他 / 她 can mean, and its
# gender says which (a brother is no 她); one nobody owns (朋友说他…) is not guessed.
KIN_MALE = ("男朋友", "男友", "儿子", "弟弟", "哥哥", "爸爸", "父亲", "老公", "丈夫", "爷爷",
            "外公", "叔叔", "舅舅", "侄子", "外甥")  # fmt: skip
KIN_FEMALE = ("女朋友", "女友", "女儿", "妹妹", "姐姐", "妈妈", "母亲", "老婆", "妻子", "奶奶",
              "外婆", "阿姨", "姑姑", "侄女", "外甥女")  # fmt: skip
KIN_ANY = ("朋友", "同事", "老板", "上司", "室友", "邻居", "老师", "同学", "孩子", "对象")
_KIN = "|".join(sorted((*KIN_MALE, *KIN_FEMALE, *KIN_ANY), key=len, reverse=True))
ZH_THIRD = {"他", "她"}
ZH_THIRD_PLURAL = {"他们", "她们"}
CLAUSE_END = "，,；;：:"
SENTENCE_END = "。！？!?\n…～~"
OPENERS = " \t\"'“”「」‘’"
# 这里 means the chat when it is asked about, addressed or talked in: 这里有人…, 这边的各位,
# 在这里聊过
ZH_CHAT_MEANT = re.compile(r"(?:有人|有没有|有谁|谁|大家|的人|的各位|各位|群|聊|说|问|发|讨论|提)")
ZH_HERE = ("这里", "这儿", "这边", "此处")
EN_CHAT_MEANT = re.compile(
    r"(?:anyone|anybody|everyone|everybody|people|guys|folks|someone|somebody)\s+$", re.I
)
EN_PLACE_NAME = re.compile(r"\b(?:in|at|to|from|near)\s+((?:[A-Z][\w'-]+)(?:\s+[A-Z][\w'-]+)*)")
EN_NOT_PLACE = re.compile(rf"(?:{'|'.join((*EN_MONTHS, *EN_WEEKDAYS))})\b")


@dataclass(frozen=True)
class Scene:
    """Who and where the relative words point at, for one speaker's text."""

    when: datetime
    speaker: str
    addressee: str
    place_zh: str  # what 这里 means when the chat is meant
    place_en: str  # what "here" means when the chat is meant
    names: tuple[str, ...] = field(default_factory=tuple)  # names known in the chat
    others: tuple[str, ...] = ()  # the conversation's other speakers, newest first
    earlier: tuple[str, ...] = ()  # the recent messages' texts, newest first
    earlier_by: tuple[str, ...] = ()  # who said each of them
    # whose "here" 这里 is when the chat is not meant: the speaker's, but a bot has no
    # place: in the bot's own notes it is the place of the person it talks with
    here_of: str = ""


def people_in(text: str, known: Iterable[str]) -> list[tuple[int, str]]:
    """(offset, name) of every person named in ``text``: known names (longest first) and
    names jieba tags as a person's (nr)."""
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, str]] = []
    for name in sorted({n for n in known if len(n) > 1}, key=len, reverse=True):
        for m in re.finditer(re.escape(name), text):
            if all(m.end() <= s or m.start() >= e for s, e in taken):
                taken.append(m.span())
                found.append((m.start(), name))
    for word, flag, start in tagged(text):
        end = start + len(word)
        if flag in NAME_POS and name_like(word) and all(end <= s or start >= e for s, e in taken):
            found.append((start, word))
    return sorted(found)


def relations_in(text: str, scene: Scene, me: str = "", you: str = "") -> list[tuple[int, str]]:
    """(offset of the relation, "owner的relation") for each owned relation in ``text``:
    owned by a known name, or by 我 (``me``: whoever wrote ``text``) or 你 (``you``). A
    denied one (不是我男朋友) is nobody, and 我的朋友们 are many."""
    owners = [re.escape(n) for n in sorted(scene.names, key=len, reverse=True) if len(n) > 1]
    owners += [word for word, who in (("我", me), ("你", you)) if who]
    if not owners:
        return []
    found = []
    for m in re.finditer(rf"(?<!不是)({'|'.join(owners)})的?({_KIN})(?!们)", text):
        owner = {"我": me, "你": you}.get(m.group(1), m.group(1))
        if owner:
            found.append((m.start(2), f"{owner}的{m.group(2)}"))
    return found


def _fits(pronoun: str, person: str) -> bool:
    """A relation's gender against 他 / 她 (a name fits either: its gender is unknown)."""
    relation = person.rpartition("的")[2]
    if pronoun == "她":
        return relation not in KIN_MALE
    if pronoun == "他":
        return relation not in KIN_FEMALE
    return True


def _mentions(
    before: str, scene: Scene, pronoun: str = "", writers: bool = False
) -> Iterator[list[str]]:
    """The people named or owned (我的儿子) in the text before the pronoun, then in each
    recent message, newest first (the speaker excluded: they say 我), in order. With
    ``writers``, a recent message's 我的妈妈 counts too, as its writer's."""
    for n, text in enumerate((before, *scene.earlier)):
        found = [(at, name) for at, name in people_in(text, scene.names) if name != scene.speaker]
        if n == 0:
            found += relations_in(text, scene, scene.speaker, scene.addressee)
        else:
            writer = scene.earlier_by[n - 1] if writers and n <= len(scene.earlier_by) else ""
            found += relations_in(text, scene, writer)
        names = [name for _, name in sorted(found) if _fits(pronoun, name)]
        if names:
            yield list(dict.fromkeys(names))


def last_person(before: str, scene: Scene, pronoun: str = "") -> str | None:
    """The last person mentioned; the relations others wrote of their own (我妈妈) only
    when nobody is named: read by hand on DialogRE-cn train, they stood for the pronoun
    less often than a name further back did, and for 他们 mostly not at all."""
    for writers in (False, True):
        if names := next(_mentions(before, scene, pronoun, writers), None):
            return names[-1]
    return None


def last_people(before: str, scene: Scene) -> str | None:
    return next((join_names(names) for names in _mentions(before, scene) if len(names) > 1), None)


def join_names(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else "、".join(names[:-1]) + "和" + names[-1]


def last_place_zh(before: str, scene: Scene) -> str | None:
    for text in (before, *scene.earlier):
        places = [w for w, flag, _ in tagged(text) if flag in PLACE_POS and len(w) > 1]
        if places:
            return places[-1]
    return None


def last_place_en(before: str, scene: Scene) -> str | None:
    for text in (before, *scene.earlier):
        if found := [p for p in EN_PLACE_NAME.findall(text) if not EN_NOT_PLACE.match(p)]:
            return str(found[-1])
    return None


def _who(pronoun: str, before: str, scene: Scene) -> str | None:
    if pronoun in ZH_FIRST:
        return scene.speaker
    if pronoun in ZH_SECOND:
        return scene.addressee
    if pronoun in ZH_THIRD:
        noun = zh_person_before(before, len(before), pronoun)
        if noun < 0:
            return last_person(before, scene, pronoun)
        # bound in these words (你的糕点厨师，她…): a person named after that noun, or none
        named = [(at, name) for at, name in people_in(before, scene.names) if name != scene.speaker]
        named += relations_in(before, scene, scene.speaker, scene.addressee)
        after = [name for at, name in sorted(named) if at >= noun and _fits(pronoun, name)]
        return after[-1] if after else None
    if pronoun in ZH_FIRST_PLURAL:
        return f"{scene.speaker}等人"
    if pronoun in ZH_SECOND_PLURAL:
        return join_names(scene.others[:3]) if scene.others else scene.addressee
    if pronoun in ZH_THIRD_PLURAL:
        if zh_person_before(before, len(before), pronoun) >= 0:
            return None  # bound in these words (那些编剧…他们): it stays
        return last_people(before, scene)
    return None  # 它: a thing, left for the gate


def zh_pronoun_edits(text: str, scene: Scene) -> list[tuple[int, int, str]]:
    """(start, end, replacement) for each Chinese pronoun the rules resolve."""
    edits: list[tuple[int, int, str]] = []
    clause, cursor, opened_at = 0, 0, 0
    opener: dict[int, str] = {}  # clause -> the person it opens with (this sentence)
    for start, end, pronoun in zh_pronoun_tokens(text):
        for i in range(cursor, start):
            if text[i] in SENTENCE_END:
                opener.clear()
            if text[i] in CLAUSE_END or text[i] in SENTENCE_END:
                clause, opened_at = clause + 1, i + 1
        cursor = start
        who = _who(pronoun, text[:start], scene)
        if who is None:
            continue
        if len(pronoun) > 1 or pronoun in ZH_FIRST_PLURAL:
            edits.append((start, end, who))
            continue
        at_open = not text[opened_at:start].strip(OPENERS)
        if at_open and opener.get(clause - 1) == who and text[end : end + 1] != "的":
            replacement = ""  # the same subject goes on: 我去了，我很开心 -> 小明去了，很开心
        elif opener.get(clause) == who:
            replacement = "自己"  # 我觉得我不行 -> 小明觉得自己不行
        else:
            replacement = who
        if at_open and text[end : end + 1] != "的":  # 我的… is a topic, not a subject
            opener[clause] = who
        edits.append((start, end, replacement))
    return edits


def zh_place(text: str, start: int, end: int, scene: Scene) -> str:
    """What 这里 / 那边 stand for at text[start:end]."""
    word, after = text[start:end], text[end : end + 3]
    if word == "本群" or (word in ZH_HERE and ZH_CHAT_MEANT.match(after)):
        return scene.place_zh
    if _after_person(text[:start], scene):
        return ""  # 我这边没问题 -> 小明没问题: the person is the place
    if word in ZH_HERE:
        return f"{scene.here_of or scene.speaker}所在的地方"
    return last_place_zh(text[:start], scene) or f"{scene.speaker}提到的地方"


def _after_person(before: str, scene: Scene) -> bool:
    tail = before.rstrip()
    if tail[-1:] in {"我", "你", "他", "她", "您", "俺", "咱"} or tail.endswith(("们",)):
        return True
    return any(tail.endswith(n) for n in (scene.speaker, scene.addressee, *scene.names) if n)


def en_place(text: str, start: int, word: str, scene: Scene) -> str:
    """What "here" / "there" stand for (a phrase that can stand where it stood)."""
    if word.lower() == "here":
        if EN_CHAT_MEANT.search(text[:start]):
            return f"in {scene.place_en}"
        return f"where {scene.here_of or scene.speaker} is"
    place = last_place_en(text[:start], scene)
    return f"in {place}" if place else f"at the place {scene.speaker} mentioned"
