"""Whom he / she / they stand for in English words among many people.

The person mentioned last that fits: a known name (of either gender: it is not known), or
a relation or a pet someone owns ("my brother" in the speaker's words, "Caroline's mom";
"your pups" in what the one answered said), whose gender says which pronoun it can be
("her" is never a brother); "the pups" are nobody's (a thing said between may be meant).
First the words before the pronoun, then the recent messages, newest first: the people
they name, else who said them.
The speaker and the one spoken to are never he or she (they are I and you). "They" is a
relation that is many ("my kids") or two people or more named together. A pronoun whose
text says before it what it stands for ("these books… find them", "the main character…
he") is bound there and stays. Reflexives
(himself) are bound in their own clause and stay. What cannot be resolved is left as
written, for the quality gate.
"""

from __future__ import annotations

import re
from dataclasses import replace

from nodes.memory.coref import Scene
from nodes.memory.lexicon import bound_in_text
from stores.when import EN_MONTHS, EN_WEEKDAYS

MALE = ("brother", "son", "dad", "father", "husband", "boyfriend", "grandpa", "grandfather",
        "uncle", "nephew", "stepson", "stepfather")  # fmt: skip
FEMALE = ("sister", "daughter", "mom", "mum", "mother", "wife", "girlfriend", "grandma",
          "grandmother", "aunt", "niece", "stepdaughter", "stepmother")  # fmt: skip
EITHER = ("best friend", "friend", "partner", "boss", "coworker", "co-worker", "colleague",
          "roommate", "neighbor", "neighbour", "teacher", "cousin", "kid", "child", "baby",
          "mentor", "therapist", "doctor", "classmate",
          "dog", "puppy", "pup", "cat", "kitten", "pet")  # fmt: skip
MANY = ("kids", "children", "parents", "friends", "family", "siblings", "brothers", "sisters",
        "coworkers", "colleagues", "neighbors", "neighbours", "grandparents", "cousins",
        "classmates", "folks", "in-laws", "dogs", "puppies", "pups", "cats", "kittens",
        "pets")  # fmt: skip
_KIN = "|".join(sorted((*MALE, *FEMALE, *EITHER, *MANY), key=len, reverse=True))
# the pronoun's gender: m, f, or p (they)
PRONOUNS = {"he": "m", "him": "m", "his": "m", "she": "f", "her": "f", "hers": "f",
            "they": "p", "them": "p", "their": "p", "theirs": "p"}  # fmt: skip
THIRD = re.compile(r"\b(he|she|him|her|his|hers|they|them|their|theirs)(['’](?:s|re|ve|d|ll))?\b",
                   re.IGNORECASE)  # fmt: skip
# "her" is the object, not an owner, when what follows does not belong to her
_NOT_OWNED = re.compile(
    r"\s*(?:$|[^\w\s]|(?:a|an|the|to|and|or|but|that|this|these|those|some|up|out|back|off|"
    r"about|for|with|at|in|on|from|so|too|again|as|if|when|because|by|over|into|all|how|"
    r"what|why|is|was|more|once|twice|today|yesterday|tomorrow|now|then|here|there|down|"
    r"around|away|home|after|before|know|feel|last|every)\b)",
    re.IGNORECASE,
)
_TAIL = {"s": "'s", "re": " are", "ve": " have", "d": " would", "ll": " will"}
_TAIL_ONE = {**_TAIL, "re": " is", "ve": " has"}


def gender(relation: str) -> str:
    word = relation.rpartition(" ")[2]
    if word in MALE:
        return "m"
    if word in FEMALE:
        return "f"
    return "p" if word in MANY else ""


# A name said in passing ("It was Matt Patterson, he is so talented", "Max was awesome,
# the lessons he taught"): capitalised words inside a sentence, not after a place's
# preposition, not a word capitalised for other reasons
_CAPITALISED = re.compile(r"(?<![\w'’-])[A-Z][a-z]+(?:[A-Z][a-z]+)?(?:\s+[A-Z][a-z]+)?(?![\w])")
# a capitalised word owning something or doing something ('s), at a sentence's start too:
# "Pixie's fitting in great", "Oliver's hilarious" (not "It's", "Let's", "Mother's Day")
_OPENS_NAMED = re.compile(
    r"(?<![\w'’-])([A-Z][a-z]+(?:[A-Z][a-z]+)?)['’]s\b"
    r"(?!\s+(?:bar|pub|cafe|café|restaurant|store|shop|place|diner|day|eve)\b)"
)
_NOT_OWNERS = frozenset(
    ("It", "Let", "That", "What", "Here", "There", "He", "She", "Who", "How", "Where", "When",
     "Why", "Today", "Tonight", "Tomorrow", "Yesterday", "Everyone", "Everybody", "Someone",
     "Somebody", "Nobody", "Everything", "Something", "Nothing", "Mother", "Father", "Valentine",
     "Year", "World", "Life", "Mom", "Dad", "One", "This", "Which", "Family", "Love",
     "Nature", "Music", "Art", "Work", "Anything", "Man", "Mine")
)  # fmt: skip
_NOT_NAMES = frozenset(
    ("I", "Im", "Hey", "Hi", "Hello", "Wow", "Oh", "Yeah", "Yes", "No", "Thanks", "Thank",
     "God", "OK", "Okay", "Aww", "Aw", "Haha", "Lol", "Omg", "Dear", "Mr", "Mrs", "Ms", "Dr",
     "Sir", "Madam", "English", "Christmas", "Easter", "Halloween", "Thanksgiving",
     "American", "Canadian", "Mexican", "Chinese", "Japanese", "Korean", "Indian", "Italian",
     "French", "German", "Spanish", "British", "Irish", "Russian", "Greek", "African",
     "Asian", "European", "Australian", *EN_MONTHS, *EN_WEEKDAYS)
)  # fmt: skip
_PLACE_BEFORE = re.compile(
    r"\b(?:in|at|to|from|near|on|of|into|around|visit|visited|the|a|an|mount|lake)\s+$",
    re.IGNORECASE,
)
# a capitalised word naming a kind, not someone: "Jack Russell mixes", "Harry Potter books"
_KIND_AFTER = re.compile(
    r"\s+(?:mix|mixes|breed|breeds|dogs?|cats?|food|style|music|movies?|films?|fans?|teams?|"
    r"series|books?|games?|shows?|songs?|bands?|class|classes)\b"
)


def names_said(text: str) -> list[tuple[int, str]]:
    """(offset, name) of each name said in passing in ``text``."""
    found = []
    for m in _CAPITALISED.finditer(text):
        head = text[: m.start()].rstrip()
        if (
            not head
            or head[-1] in '.!?"“(:['
            or _PLACE_BEFORE.search(text[: m.start()])
            or _KIND_AFTER.match(text, m.end())
        ):
            continue
        words = [w for w in m.group(0).split() if w not in _NOT_NAMES]
        if words and words[0] == m.group(0).split()[0]:
            found.append((m.start(), " ".join(words)))
    taken = {at for at, _ in found}
    for m in _OPENS_NAMED.finditer(text):
        word = m.group(1)
        if m.start() not in taken and word not in _NOT_OWNERS and word not in _NOT_NAMES:
            found.append((m.start(), word))
    return sorted(found)


def _mentions(
    text: str, scene: Scene, speaker: str, addressee: str = ""
) -> list[tuple[int, str, str]]:
    """(offset, person, gender) of each person named or owned (by a name, or by whoever
    "my" and "your" are in ``text``: its speaker and the one it speaks to) in ``text``."""
    known = sorted({n for n in scene.names if len(n) > 1}, key=len, reverse=True)
    found: list[tuple[int, str, str]] = []
    taken: list[tuple[int, int]] = []
    for name in known:
        for m in re.finditer(rf"(?<![\w']){re.escape(name)}(?![\w])(?!['’]s\s+(?:{_KIN})\b)", text):
            if all(m.end() <= s or m.start() >= e for s, e in taken):
                taken.append(m.span())
                found.append((m.start(), name, ""))
    owners = [re.escape(n) + "['’]s" for n in known] + ["my", "our", "your"]
    if owners:
        pattern = rf"(?<![\w])({'|'.join(owners)})\s+({_KIN})\b"
        for m in re.finditer(pattern, text, re.IGNORECASE):
            owner = m.group(1)
            lower = owner.lower()
            relation = m.group(2).lower()
            who = {"my": speaker, "our": speaker, "your": addressee}.get(lower, owner[:-2])
            if who:
                found.append((m.start(), f"{who}'s {relation}", gender(relation)))
    return sorted(found)


def _fits(pronoun: str, mentioned: list[tuple[int, str, str]]) -> str | None:
    """The last person of ``mentioned`` the pronoun can mean."""
    want = PRONOUNS[pronoun]
    if want == "p":
        if many := [p for _, p, g in mentioned if g == "p"]:
            return many[-1]
        names = list(dict.fromkeys(p for _, p, g in mentioned if g != "p"))
        return " and ".join([", ".join(names[:-1]), names[-1]]) if len(names) > 1 else None
    fitting = [p for _, p, g in mentioned if g in ("", want)]
    return fitting[-1] if fitting else None


def who(pronoun: str, before: str, scene: Scene, bound: bool = False) -> str | None:
    """Whom ``pronoun`` (he, her, they…) means after the words ``before`` it; ``bound``:
    its text says before it what it stands for (a man, these books), so it is not looked
    for in earlier messages."""
    not_them = {scene.speaker, scene.addressee}
    if people := [m for m in _mentions(before, scene, scene.speaker, scene.addressee)
                  if m[1] not in not_them]:  # fmt: skip
        if (found := _fits(pronoun.lower(), people)) is not None or bound:
            return found
    if bound:
        return None
    by = scene.earlier_by or ("",) * len(scene.earlier)
    for text, speaker in zip(scene.earlier, by, strict=False):
        # what the one answered said was said to the speaker: their "your" is the speaker's
        to = scene.speaker if speaker == scene.addressee else ""
        mentioned = _mentions(text, scene, speaker, to)
        if people := [m for m in mentioned if m[1] not in not_them]:
            return _fits(pronoun.lower(), people)
        if not mentioned and speaker and speaker not in not_them:
            return _fits(pronoun.lower(), [(0, speaker, "")])
    return None


def en_third_edits(text: str, scene: Scene) -> list[tuple[int, int, str]]:
    """(start, end, replacement) for each he / she / they the rules resolve. A name said
    in passing anywhere in the exchange is known in all of it ("Max was awesome" opens a
    sentence; "we miss Max" said it)."""
    if not THIRD.search(text):
        return []
    said = [name for t in (text, *scene.earlier) for _, name in names_said(t)]
    scene = replace(scene, names=tuple(dict.fromkeys((*scene.names, *said))))
    edits = []
    for m in THIRD.finditer(text):
        word, tail = m.group(1).lower(), (m.group(2) or "")[1:].lower()
        person = who(word, text[: m.start()], scene, bound_in_text(text, m.start()))
        if person is None:
            continue
        plural = PRONOUNS[word] == "p"
        owned = word in ("his", "their", "hers", "theirs") or (
            word == "her" and not tail and not _NOT_OWNED.match(text, m.end())
        )
        if owned:
            replacement = f"{person}'s"
        else:
            replacement = person + (_TAIL if plural else _TAIL_ONE).get(tail, "")
        if m.group(1)[0].isupper() and replacement[0].islower():
            replacement = replacement[0].upper() + replacement[1:]
        edits.append((m.start(), m.end(), replacement))
    return edits
