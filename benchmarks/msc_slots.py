"""Profile slots in English talk nobody here wrote: Multi-Session Chat's session-1 test
dialogues, whose annotators wrote for each utterance the persona line it draws on
(``persona_text``, "I live in Chicago. I like football."). Read in place from
``GROUPMIND_SHARED_DATA`` and never copied.

The gold is read off the annotators' line, not the utterance: a slot it states in the plain
first person ("I live in X", "I have a dog", "I work at X", "I am 26 years old") is what the
utterance should teach. The offline rules (``nodes.memory.fact_rules``) read the utterance
("I don't own my own car! I actually really enjoying walking…"). A value counts when it
shares a content word with the gold's. Whatever the rules learn from an utterance that the
line does not state counts against precision (loose: a line may leave out what was said).
Dialogues 0-249 are the development part; 250 on the test part, never read to change a rule.

    make bench-slots  # DuLeMon's turns, then these
    .venv/bin/python -m benchmarks.msc_slots --split dev --show
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from benchmarks.common import SHARED_DATA, machine
from benchmarks.turn_slots import run
from nodes.memory.fact_rules import SELF, likes, stated

DATA = SHARED_DATA / "msc" / "msc_personasummary" / "session_1" / "test.txt"
TEST_FROM = 250
_TO_END = r"([^.,;!?]+?)(?=[.,;!?]| and | but | because | so |$)"
# The gold's patterns: the annotators' canonical first person, one per slot.
GOLD: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (slot, re.compile(pattern, re.IGNORECASE))
    for slot, pattern in (
        ("age", r"\bI(?: am|'m) (\d{1,3})(?: years old|\b)"),
        ("location", r"\bI (?:currently |now )?live in " + _TO_END),
        ("location", r"\bI (?:just |recently )?moved to " + _TO_END),
        ("hometown", r"\bI(?: am|'m) (?:originally )?from " + _TO_END),
        ("hometown", r"\bI grew up in " + _TO_END),
        ("workplace", r"\bI work (?:at|for) " + _TO_END),
        ("job", r"\bI work as (?:an? )?" + _TO_END),
        (
            "job",
            r"\bI(?: am|'m) an? ((?:\w+ )?\w+(?:er|or|ist|ian|ant|ent|nurse|chef|cook|doctor))\b",
        ),
        (
            "pet",
            r"\bI (?:have|own) (?:an?|one|two|three|\d+) ((?:\w+ )?(?:dogs?|cats?|pupp(?:y|ies)|kittens?|rabbits?|hamsters?|birds?|parrots?|fish|horses?|snakes?|turtles?|lizards?))\b",
        ),
        (
            "family",
            r"\bI have (?:an?|one|two|three|four|\d+)? ?(?:\w+ )?(kids?|children|sons?|daughters?|sisters?|brothers?|grandchildren|twins)\b",
        ),
        (
            "partner",
            r"\bI (?:have an?|am married to an?) (husband|wife|boyfriend|girlfriend|fianc[eé]e?|partner)\b",
        ),
        ("partner", r"\bI(?: am|'m) (married|engaged)\b"),
        ("like", r"\bI (?:really |also |just )?(?:like|love|enjoy|adore)(?: to)? " + _TO_END),
        ("like", r"\bMy favou?rite \w+(?: \w+)? is " + _TO_END),
        ("dislike", r"\bI (?:hate|dislike|don't like|do not like|can't stand) " + _TO_END),
    )
)
STOP = frozenset(
    "a an the my to of in on at for with and or is am are i me it this that very really "
    "also just do does go going be".split()
)


@dataclass(frozen=True)
class Utterance:
    key: str  # "dialogue:utterance"
    text: str
    gold: dict[str, list[str]]  # slot -> the values the annotators' line states
    test: bool


def gold_of(persona_text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for slot, pattern in GOLD:
        for m in pattern.finditer(persona_text):
            out.setdefault(slot, []).append(m.group(1).strip())
    return out


def utterances(path: Path = DATA) -> Iterator[Utterance]:
    for d, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        for u, said in enumerate(json.loads(line)["dialog"]):
            gold = gold_of(said.get("persona_text") or "")
            yield Utterance(f"{d}:{u}", said["text"], gold, d >= TEST_FROM)


def words(value: str) -> set[str]:
    found = {w.rstrip("s") for w in re.findall(r"[a-z0-9]+", value.lower())}
    return found - STOP


def matches(value: str, gold: str) -> bool:
    return bool(words(value) & words(gold))


def learned(text: str) -> list[tuple[str, str]]:
    """(slot, value) the rules learn about the speaker from one utterance."""
    found = [(f.type, f.value) for f in stated(text) if f.subject == SELF]
    return found + [("like", v) for v in likes(text)]


def score(split: str, show: bool = False) -> dict[str, Any]:
    """Recall and precision per slot, and over all slots."""
    per: dict[str, dict[str, int]] = {}
    for u in utterances():
        if split != "both" and u.test != (split == "test"):
            continue
        got = learned(u.text)
        for slot, values in u.gold.items():
            row = per.setdefault(slot, {"gold": 0, "found": 0, "learned": 0, "right": 0})
            row["gold"] += 1
            hit = any(s == slot and any(matches(v, g) for g in values) for s, v in got)
            row["found"] += hit
            if show and not hit:
                print(f"  missed {u.key} {slot}:{'|'.join(values)}  {u.text[:120]}")
        for slot, value in got:
            row = per.setdefault(slot, {"gold": 0, "found": 0, "learned": 0, "right": 0})
            row["learned"] += 1
            ok = any(matches(value, g) for g in u.gold.get(slot, []))
            row["right"] += ok
            if show and not ok:
                print(f"  wrong  {u.key} {slot}:{value}  {u.text[:120]}")
    total = {k: sum(r[k] for r in per.values()) for k in ("gold", "found", "learned", "right")}
    return {"slots": per, "all": total}


def _show(split: str, r: dict[str, Any]) -> None:
    table = Table(title=f"{split} part (annotators' persona lines as gold; loose precision)")
    for column in ("slot", "gold", "recall", "learned", "precision"):
        table.add_column(column, justify="left" if column == "slot" else "right")
    rows = {**r["slots"], "all": r["all"]}
    for slot, row in sorted(rows.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        recall = row["found"] / row["gold"] if row["gold"] else float("nan")
        precision = row["right"] / row["learned"] if row["learned"] else float("nan")
        table.add_row(slot, str(row["gold"]), f"{recall:.3f}", str(row["learned"]),
                      f"{precision:.3f}")  # fmt: skip
    Console().print(table)


def main() -> None:
    run(
        __doc__.split("\n\n")[0],
        f"profile slots in MSC's English utterances on {machine()} · offline rules",
        score,
        _show,
    )


if __name__ == "__main__":
    main()
