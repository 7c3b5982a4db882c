"""How much a memory matters, from its words (0-1), for decay and pruning (stores/decay.py):
a stated fact about a person outlives a taste, a taste outlives a plan or a thing named,
and chit-chat ("哈哈好的", "lol ok") fades first. Rules, the same for both historians: the
`llm` one's text is judged by them too."""

from __future__ import annotations

import re

from nodes.memory.fact_rules import stated
from stores.text import keywords

FACT = 1.0  # age, job, home, partner, pet...: what a profile is made of
TASTE = 0.8  # likes and dislikes
SPECIFIC = 0.6  # a number, a time, or several things named
PLAIN = 0.4  # one thing named
CHATTER = 0.2  # nothing named

_TASTE = re.compile(
    r"喜欢|热爱|爱上|爱吃|爱喝|爱玩|讨厌|受不了|最爱|迷上|入坑|粉丝"
    r"|\b(?:like[sd]?|love[sd]?|hate[sd]?|enjoy(?:s|ed)?|favou?rite|fan of)\b",
    re.IGNORECASE,
)
# a memory's framing, not its content ("Melanie said ...")
_FRAMING = {"said", "says", "told", "tells", "asked", "asks", "replied", "mentioned", "thinks"}
_SPECIFIC = re.compile(
    r"\d|[一二三四五六七八九十两]+[点号日月岁年天]|明天|下周|下个月|周[一二三四五六日末]"
)


def importance(text: str, said: str = "", names: tuple[str, ...] = ()) -> float:
    """``text``: the memory; ``said``: the speaker's own words (a first-person fact is read
    there); ``names``: the chat's people (neither a fact's subject nor a thing named)."""
    if stated(text, names) or (said and stated(said, names)):
        return FACT
    if _TASTE.search(text) or (said and _TASTE.search(said)):
        return TASTE
    if _SPECIFIC.search(text):  # before the keywords: jieba's tagging is most of this cost
        return SPECIFIC
    skip = _FRAMING | {n.lower() for n in names}
    named = [w for w in keywords(text) if w.lower() not in skip]
    if len(named) >= 2:
        return SPECIFIC
    return PLAIN if named else CHATTER
