"""The rules historian: rewrite one speaker's text into absolute form, offline.

First person becomes the speaker, second person the addressee, third person the person
mentioned last, relative dates an absolute date computed from the job's own timestamp (in
its offset's local time), and places the place meant (``coref``: the chat only when the
chat is meant). What the rules cannot resolve is left for the quality gate to flag.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from datetime import date, datetime, timedelta

from nodes.memory.coref import Scene, en_place, zh_place, zh_pronoun_edits
from nodes.memory.coref_en import en_third_edits
from nodes.memory.lexicon import (
    EN_FIRST,
    EN_FIRST_PLURAL,
    EN_SECOND,
    EN_TIME,
    WEEKDAYS,
    ZH_PLACE,
    ZH_TIME,
    _free,
    en_places,
    protected_spans,
)
from stores.people import name_forms
from stores.text import has_cjk
from stores.when import (
    EN_DAY_OFFSET,
    EN_MONTHS,
    EN_VAGUE,
    ZH_DAY_OFFSET,
    ZH_DAYPART,
    en_number,
    month_shift,
    week_start,
    zh_number,
)

ZH_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_LEADING_PREPOSITION = re.compile(r"^(?:on|in|at|as of) ")
_PREPOSITION = re.compile(
    r"\b(?:since|until|till|from|before|after|by|of|for|than|to|in|at|on|into|near|around)\s+$",
    re.I,
)


# --- dates --------------------------------------------------------------------------------


def zh_date(d: date) -> str:
    return f"{d.year}年{d.month}月{d.day}日"


def en_date(d: date) -> str:
    return f"{d.day} {EN_MONTHS[d.month - 1]} {d.year}"


_ZH_YEAR = {"前年": -2, "去年": -1, "今年": 0, "明年": 1, "后年": 2}
_ZH_NUMERIC = re.compile(
    r"([一二两三四五六七八九十\d]+)(天|日|周|个星期|个礼拜|个月|年)(以前|之前|前|以后|之后|后)"
)
_ZH_WEEK = re.compile(r"(上|下|这|本)个?(?:周|星期|礼拜)([一二三四五六日天末]?)")


def zh_time(word: str, now: datetime) -> str:
    today = now.date()
    if word in ZH_DAY_OFFSET:
        return zh_date(today + timedelta(days=ZH_DAY_OFFSET[word]))
    if word in ZH_DAYPART:
        days, part = ZH_DAYPART[word]
        return zh_date(today + timedelta(days=days)) + part
    if word in _ZH_YEAR:
        return f"{today.year + _ZH_YEAR[word]}年"
    if word in ("上个月", "上月", "下个月", "下月", "这个月", "本月"):
        d = month_shift(today, -1 if word[0] == "上" else 1 if word[0] == "下" else 0)
        return f"{d.year}年{d.month}月"
    if word in ("刚才", "刚刚", "方才"):
        return f"{zh_date(today)}{now:%H:%M}前后"
    if word in ("前几天", "几天前"):
        return f"{zh_date(today)}前的几天"  # not "之前几天": it holds 前几天 again
    if word in ("这几天", "最近", "近来", "近日"):
        return f"{zh_date(today)}前后"
    if word in ("现在", "目前", "此刻", "如今"):
        return f"{zh_date(today)}时"
    if m := _ZH_WEEK.fullmatch(word):
        weeks = {"上": -1, "下": 1}.get(m.group(1), 0)
        monday = week_start(today, weeks)
        if m.group(2) == "末":
            saturday = monday + timedelta(days=5)
            return f"{zh_date(saturday)}至{(saturday + timedelta(days=1)).day}日周末"
        if m.group(2):
            return zh_date(monday + timedelta(days=ZH_WEEKDAY[m.group(2)]))
        return f"{zh_date(monday)}那一周"
    if m := _ZH_NUMERIC.fullmatch(word):
        n, unit, direction = zh_number(m.group(1)), m.group(2), m.group(3)
        sign = -1 if "前" in direction else 1
        if unit in ("天", "日"):
            return zh_date(today + timedelta(days=sign * n))
        if unit in ("周", "个星期", "个礼拜"):
            return f"{zh_date(today + timedelta(weeks=sign * n))}前后"
        if unit == "个月":
            d = month_shift(today, sign * n)
            return f"{d.year}年{d.month}月"
        return f"{today.year + sign * n}年"
    return word


def en_time(phrase: str, now: datetime) -> str:
    """An absolute phrase that can stand where the relative one stood ("on 7 May 2023")."""
    p, today = phrase.lower(), now.date()
    if p in ("tonight", "last night"):
        return f"on the night of {en_date(today - timedelta(days=p == 'last night'))}"
    if p in EN_DAY_OFFSET:
        return f"on {en_date(today + timedelta(days=EN_DAY_OFFSET[p]))}"
    if p.startswith("this ") and p[5:] in ("morning", "afternoon", "evening"):
        return f"on the {p[5:]} of {en_date(today)}"
    if p == "just now":
        return f"at {now:%H:%M} on {en_date(today)}"
    if p in ("right now", "these days", "nowadays"):
        return f"as of {en_date(today)}"
    if p in ("recently", "lately", "the other day"):
        return f"in the days before {en_date(today)}"
    which, _, unit = p.partition(" ")
    if unit in WEEKDAYS:
        target = WEEKDAYS.index(unit)
        if which == "last":
            back = (today.weekday() - target) % 7 or 7
            d = today - timedelta(days=back)
        elif which in ("next", "coming"):
            d = today + timedelta(days=(target - today.weekday()) % 7 or 7)
        else:
            d = week_start(today) + timedelta(days=target)
        return f"on {unit.capitalize()}, {en_date(d)}"
    if which in ("last", "next", "this", "coming") and unit in ("weekend", "week", "month", "year"):
        step = {"last": -1, "next": 1, "coming": 1}.get(which, 0)
        if unit == "weekend":
            saturday = week_start(today, step) + timedelta(days=5)
            return f"on the weekend of {en_date(saturday)}"
        if unit == "week":
            return f"in the week of {en_date(week_start(today, step))}"
        if unit == "month":
            d = month_shift(today, step)
            return f"in {EN_MONTHS[d.month - 1]} {d.year}"
        return f"in {today.year + step}"
    if p.endswith(" ago"):
        amount, unit = p[: -len(" ago")].rsplit(" ", 1)
        unit = unit.rstrip("s")
        n = en_number(amount)
        if amount in EN_VAGUE:
            return f"a few {unit}s before {en_date(today)}"
        if unit == "day":
            return f"on {en_date(today - timedelta(days=n))}"
        if unit == "week":
            return f"around {en_date(today - timedelta(weeks=n))}"
        if unit == "month":
            d = month_shift(today, -n)
            return f"in {EN_MONTHS[d.month - 1]} {d.year}"
        return f"in {today.year - n}"
    return phrase


# --- pronouns and places ------------------------------------------------------------------


def _en_pronoun(word: str, scene: Scene) -> str:
    w = word.replace("’", "'")
    lower = w.lower()
    head, _, tail = lower.partition("'")
    if head in ("i", "me", "myself") or (head == "i" and tail):
        who = scene.speaker
        return who + {"m": " is", "ve": " has", "d": " would", "ll": " will"}.get(tail, "")
    if head in ("my", "mine"):
        return f"{scene.speaker}'s"
    if head in ("we", "us", "ourselves"):
        who = f"{scene.speaker} and others"
        return who + {"re": " are", "ve": " have", "d": " would", "ll": " will"}.get(tail, "")
    if head in ("our", "ours"):
        return f"{scene.speaker}'s"
    if head in ("your", "yours"):
        return f"{scene.addressee}'s"
    return scene.addressee + {"re": " is", "ve": " has", "d": " would", "ll": " will"}.get(tail, "")


# A name called out at the start ("瑞秋，你…", "Rachel, you…") is whom 你 / you means there.
VOCATIVE = re.compile(
    r"^[\s\"'“”「]*(?:(?:嘿|嗨|喂|哦|噢|哎|hey|hi|oh)[\s,，!！]*)?([^\s,，!！:：。？?]{2,16})[,，!！]",
    re.IGNORECASE,
)


def called(text: str, scene: Scene) -> str | None:
    """The known person a text opens by calling to (by their name or a part of it: 瑞秋
    for 瑞秋·格林), if any, never the speaker."""
    m = VOCATIVE.match(text)
    if m is None:
        return None
    word = m.group(1)
    for name in scene.names:
        if name and name != scene.speaker and word in name_forms(name):
            return name
    return None


def absolutize(text: str, scene: Scene) -> str:
    """Replace every relative word the rules can resolve; leave the rest as written."""
    if (who := called(text, scene)) is not None:
        scene = replace(scene, addressee=who)
    spans = protected_spans(text, scene.names)
    edits: list[tuple[int, int, str, bool]] = []  # start, end, replacement, is a phrase

    def add(start: int, end: int, replacement: str, phrase: bool = False) -> None:
        if _free(start, end, spans) and all(end <= s or start >= e for s, e, _, _ in edits):
            edits.append((start, end, replacement, phrase))

    def each(pattern: re.Pattern[str], fn: Callable[[str], str], phrase: bool = False) -> None:
        for m in pattern.finditer(text):
            add(m.start(), m.end(), fn(m.group(0)), phrase)

    each(ZH_TIME, lambda w: zh_time(w, scene.when))
    for m in ZH_PLACE.finditer(text):
        add(m.start(), m.end(), zh_place(text, m.start(), m.end(), scene))
    each(EN_TIME, lambda w: en_time(w, scene.when), phrase=True)
    for m in en_places(text):
        add(m.start(), m.end(), en_place(text, m.start(), m.group(0), scene), True)
    for pattern in (EN_FIRST, EN_FIRST_PLURAL, EN_SECOND):
        each(pattern, lambda w: _en_pronoun(w, scene))
    for start, end, replacement in en_third_edits(text, scene):
        add(start, end, replacement)
    if has_cjk(text):
        for start, end, replacement in zh_pronoun_edits(text, scene):
            add(start, end, replacement)

    out, cursor = [], 0
    for start, end, replacement, phrase in sorted(edits):
        if phrase and _PREPOSITION.search(text[:start]):  # "since yesterday": one preposition
            replacement = _LEADING_PREPOSITION.sub("", replacement)
        if phrase and _sentence_start(text, start):  # names keep their own spelling
            replacement = replacement[:1].upper() + replacement[1:]
        out += [text[cursor:start], replacement]
        cursor = end
    out.append(text[cursor:])
    return _fix_agreement("".join(out), scene)


def _sentence_start(text: str, index: int) -> bool:
    head = text[:index].rstrip()
    return not head or head[-1] in ".!?。！？\n"


def _as(text: str) -> Callable[[re.Match[str]], str]:
    return lambda _: text


def _fix_agreement(text: str, scene: Scene) -> str:
    """ "Caroline am" -> "Caroline is": only right after the names we put in."""
    for name in {scene.speaker, scene.addressee}:
        for verb, agreed in (("am", "is"), ("have", "has")):
            # a function, not a template: a name like "\M" or "\1" is text, no escape
            text = re.sub(rf"(?<!\w){re.escape(name)} {verb}\b", _as(f"{name} {agreed}"), text)
    return text
