"""People in a question: who it is about, and what it asks about them.

"小明最近在玩什么游戏" shares one word with "小明最近入坑了原神": the name. Left in the
keyword query, the name ties every memory of 小明 and BM25 breaks the tie by length; so a
name (or the asker's 我 / I / my) is read as a person constraint — their own memories and
memories that name them are lifted (``HybridEventStore``) — and taken out of the keyword
query and from the dense one, which keep the content words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

ZH_FIRST = re.compile(r"我(?!们)")
EN_FIRST = re.compile(r"\b(?:I|me|my|mine|myself)\b")
NAME_PARTS = re.compile(r"[·・•\s]+")
MIN_NAME_CHARS = 2  # a one-character "name" is too often just a character


@dataclass(frozen=True)
class Focus:
    """Who a question is about (user ids, and the names that stand for them in texts),
    and the question as each side should read it."""

    user_ids: frozenset[str] = frozenset()
    names: tuple[str, ...] = ()
    lexical_text: str = ""
    dense_text: str = ""
    # the people it names when it asks what passed between them (no lift then: their ties)
    between: frozenset[str] = frozenset()
    # the question with the members it names kept (the asker's 我 / I out), for one more
    # dense side: e5 places a name well ("" when it names nobody but the asker)
    named_text: str = ""

    def about(self, user_id: str, text: str) -> bool:
        """A memory of one of them, or naming one."""
        return user_id in self.user_ids or any(n in text for n in self.names)


def name_forms(name: str) -> list[str]:
    """A display name and its parts (乔伊·崔比安尼 -> 乔伊, 崔比安尼; Joey Tribbiani -> Joey)."""
    parts = [p for p in NAME_PARTS.split(name.strip()) if len(p) >= MIN_NAME_CHARS]
    whole = name.strip()
    return [whole, *(p for p in parts if p != whole)] if len(whole) >= MIN_NAME_CHARS else parts


def name_index(people: Iterable[tuple[str, str]]) -> dict[str, str]:
    """name form -> user id, for the (user id, display name) pairs of a scope; a form two
    people share (two 小王) names neither."""
    index: dict[str, str] = {}
    shared: set[str] = set()
    for user_id, name in people:
        for form in name_forms(name):
            if index.get(form, user_id) != user_id:
                shared.add(form)
            index[form] = user_id
    return {form: uid for form, uid in index.items() if form not in shared}


@dataclass(frozen=True)
class People:
    """A scope's people: name form -> user id, and each person's share of its memories (a
    name narrows a 20-person group's memories; it says little in a chat of two)."""

    names: dict[str, str] = field(default_factory=dict)
    share: dict[str, float] = field(default_factory=dict)


def people_of(rows: Iterable[tuple[str, str, int]]) -> People:
    """From (user id, display name, memories) rows."""
    rows = list(rows)
    total = sum(n for _, _, n in rows) or 1
    share: dict[str, float] = {}
    for user_id, _, n in rows:
        share[user_id] = share.get(user_id, 0.0) + n / total
    return People(name_index((uid, name) for uid, name, _ in rows), share)


def focus_of(text: str, names: dict[str, str], asker_id: str | None, asker_name: str) -> Focus:
    """The people ``text`` names (longest names first; a name inside a longer one is not a
    second person) plus the asker when they say 我 / I. Both sides read the question without
    them: every memory of theirs is lifted alike, so a name or a 我 left in would only rank
    their memories by how often they mention themselves."""
    ids: set[str] = set()
    content = text
    for form in sorted(names, key=len, reverse=True):
        if form in content:
            ids.add(names[form])
            content = content.replace(form, " ")
    if asker_id is not None and (ZH_FIRST.search(text) or EN_FIRST.search(text)):
        ids.add(asker_id)
        content = EN_FIRST.sub(" ", ZH_FIRST.sub(" ", content))
    forms = {form for form, uid in names.items() if uid in ids}
    if asker_id in ids:
        forms.update(name_forms(asker_name))
    content = " ".join(content.split()) if ids and content.strip() else text
    named = ""
    if ids - {asker_id}:
        named = EN_FIRST.sub(" ", ZH_FIRST.sub(" ", text)) if asker_id in ids else text
    return Focus(
        user_ids=frozenset(ids),
        names=tuple(sorted(forms, key=len, reverse=True)),
        lexical_text=content,
        dense_text=content,
        named_text=" ".join(named.split()),
    )
