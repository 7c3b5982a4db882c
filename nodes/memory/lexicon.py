"""Relative words the historian must resolve (seed 003 §4.2 step 3, extended): pronouns,
relative times and relative places, Chinese and English.

One table serves both the rules rewrite (which replaces what it can) and the quality gate
(which flags what is left), so the two cannot drift apart. Quoted text and known names are
protected: nothing inside them is flagged or replaced.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from stores.text import tokenize_with_offsets
from stores.when import EN_WEEKDAYS

Kind = Literal["pronoun", "time", "place"]

# Longest first: a token is checked for these prefixes (jieba keeps 其他/自我介绍 whole,
# so a pronoun inside a word is never seen as one).
ZH_PRONOUNS = (
    "我们",
    "咱们",
    "你们",
    "您们",
    "他们",
    "她们",
    "它们",
    "我",
    "咱",
    "俺",
    "你",
    "您",
    "他",
    "她",
    "它",
)
ZH_FIRST = {"我", "咱", "俺"}
ZH_FIRST_PLURAL = {"我们", "咱们"}
ZH_SECOND = {"你", "您"}
ZH_SECOND_PLURAL = {"你们", "您们"}
# jieba keeps 我爱你 whole: a pronoun that ends a word a pronoun begins is one too
_ZH_ONE_CHAR = {"我", "你", "您", "他", "她"}
ZH_NOT_PRONOUN = {"你好", "您好", "你们好", "我行我素", "它山之石"}
# 它 / 它们 are things or animals, as English "it" is: never held against a memory
ZH_THING = {"它", "它们"}
# A person a 他 / 她 can stand for, said before it in the same words ("你的糕点厨师，她…",
# "我那个双胞胎姐姐…她"): the pronoun is bound there and stays, as English "the main
# character… he" does.
_ZH_PERSON_NOUNS = {
    "他": "男人|男孩|男生|先生|爸爸|父亲|哥哥|弟弟|儿子|男友|男朋友|丈夫|老公|爷爷|外公|叔叔|舅舅|"
    "前夫|未婚夫|国王|王子|小伙子|老头|新郎|伴郎|帅哥",
    "她": "女人|女孩|女生|女士|姑娘|小姐|妈妈|母亲|姐姐|妹妹|女儿|女友|女朋友|妻子|老婆|奶奶|外婆|"
    "阿姨|姑姑|太太|夫人|前妻|未婚妻|女王|公主|女演员|老太太|新娘|伴娘|美女",
    "": "朋友|同事|老板|老师|医生|护士|厨师|师傅|病人|客人|家伙|室友|邻居|演员|作家|同学|顾客|"
    "律师|经理|学生|孩子|宝宝|婴儿|对象|前任|网友|房东|教授|主角|陌生人|制作人|模特|歌手|导演|"
    "司机|服务员|秘书|助理|警察|船长|小孩|记者|画家|作者",
}
# People a 他们 / 她们 can stand for, as English "these books… them": a counted or pointed
# group of persons (那些编剧, 5个朋友, 一楼那对夫妇), a noun with 们 (顾客们), a group word.
_ZH_ANY_PERSON = "|".join((*_ZH_PERSON_NOUNS.values(), "人|编剧|夫妇|夫妻"))
_ZH_PEOPLE = re.compile(
    rf"(?:那些|这些|一些|有些|好些|很多|许多|好多|一群|一帮|那对|这对|一对|几个|"
    rf"[0-9一二两三四五六七八九十几]+个)[^，。！？,.!?\s]{{0,6}}?(?:{_ZH_ANY_PERSON})"
    rf"|(?:{_ZH_ANY_PERSON}|(?![我你您他她它咱])[\u4e00-\u9fff])们"
    r"|夫妇|夫妻|父母|爸妈|家人|大家|人们|家长|双方|俩|两人|二人|团队|乐队|剧组"
)
_ZH_PERSON = {
    **{
        pronoun: re.compile(f"(?:{words}|{_ZH_PERSON_NOUNS['']})")
        for pronoun, words in _ZH_PERSON_NOUNS.items()
        if pronoun
    },
    "他们": _ZH_PEOPLE,
    "她们": _ZH_PEOPLE,
}

ZH_TIME = re.compile(
    r"大前天|前天|昨天|昨日|今天|今日|明天|明日|后天|大后天"
    r"|昨晚|今晚|明晚|昨夜|今夜|今早|明早|今晨"
    r"|(?:上|下|这|本)个?(?:周|星期|礼拜)[一二三四五六日天末]?"
    r"|上个?月|下个?月|这个月|本月"
    r"|去年|今年|明年|前年|后年"
    r"|刚才|刚刚|方才"
    # "3天前", but not the "16日前后" of an absolute date the rewrite wrote
    r"|(?<![\d月年])[一二两三四五六七八九十\d]+(?:天|日|周|个星期|个礼拜|个月|年)"
    r"(?:以前|之前|前|以后|之后|后)(?!后)"
    r"|前几天|几天前|这几天|最近|近来|近日|现在|目前|此刻|如今"
)
ZH_PLACE = re.compile(r"这里|这儿|这边|此处|那里|那儿|那边|本群")

WEEKDAYS = tuple(d.lower() for d in EN_WEEKDAYS)
_NUM = (
    r"(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\d+"
    r"|a few|a couple of|couple of|several)"
)
EN_TIME = re.compile(
    r"\b(?:the day before yesterday|the day after tomorrow|yesterday|today|tomorrow|tonight"
    r"|last night|this (?:morning|afternoon|evening)"
    rf"|(?:last|next|this|coming) (?:{'|'.join(WEEKDAYS)}|weekend|week|month|year)"
    rf"|{_NUM} (?:days?|weeks?|months?|years?) ago"
    r"|just now|right now|recently|lately|the other day|these days|nowadays)\b",
    re.IGNORECASE,
)
# "here" / "there" as a place; not "there is ..." opening a clause, nor "hi there". After a
# noun it is a place even before "is": "the food here is great".
EN_HERE_THERE = re.compile(r"\b(?:here|there)\b", re.IGNORECASE)
_EN_GREETED = re.compile(r"\b(?:hi|hey|hello)\s+$", re.IGNORECASE)
_EN_EXISTENTIAL = re.compile(
    r"(?:['’]s\b|\s+(?:is|are|was|were|will|would|has|have|had|might|may|must|should|could"
    r"|can|seems?|seemed|used|isn['’]t|aren['’]t|wasn['’]t|weren['’]t|be|been)\b)",
    re.IGNORECASE,
)
_EN_CLAUSE_OPEN = re.compile(
    r"(?:^|[.!?,;:\"“(]|\b(?:and|but|so|because|cause|if|when|that|where|think|guess|know"
    r"|say|said|oh|well|yes|yeah|no|ok|okay|then|now|look|see|hey|hi|maybe|sure)\b)\s*$",
    re.IGNORECASE,
)


def en_places(text: str) -> Iterator[re.Match[str]]:
    """Each "here" / "there" that is a place."""
    for m in EN_HERE_THERE.finditer(text):
        before = text[: m.start()]
        if _EN_GREETED.search(before):
            continue
        if _EN_EXISTENTIAL.match(text, m.end()) and _EN_CLAUSE_OPEN.search(before):
            continue
        yield m


EN_FIRST = re.compile(r"\b(?:I(?:['’](?:m|ve|d|ll))?|i|[Mm]e|[Mm]y|[Mm]ine|[Mm]yself)\b")
EN_FIRST_PLURAL = re.compile(
    r"\b(?:we(?:['’](?:re|ve|d|ll))?|us|our|ours|ourselves)\b", re.IGNORECASE
)
EN_SECOND = re.compile(
    r"\b(?:you(?:['’](?:re|ve|d|ll))?|your|yours|yourself|yourselves)\b", re.IGNORECASE
)
EN_THIRD = re.compile(
    r"\b(?:he|she|him|her|his|hers|they|them|their|theirs)"
    r"(?:['’](?:s|re|ve|d|ll))?\b",
    re.IGNORECASE,
)
# A pronoun after what it stands for in the same text is bound there: the memory itself
# says what it is ("these books… find them", "Jacky Cheung and G.E.M… their songs", "the
# main character… at first he was sad").
_EN_PLURAL_THING = re.compile(
    r"\b(?:the|these|those|some|many|all|both|several|few|other|such|any|more|most|"
    r"two|three|four|five|six|seven|eight|nine|ten|\d+|my|our|your|his|her|\w+['’]s)\s+"
    r"(?:[a-z][\w-]*\s+){0,2}?[a-z][\w-]*[^s\W]s\b"
    # a plural with no determiner where a verb cannot stand: "have kids", "with friends"
    r"|\b(?:have|has|had|having|with|for|about|of|love|loved|like|liked|got|adopted|bought|"
    r"met|among|between)\s+(?:[a-z][\w-]*\s+)??(?!(?:was|has|does|is|this|his|its|us|yes|"
    r"always|perhaps|sometimes|ours|yours|hers|theirs)\b)[a-z][\w-]*[^sui\W]s\b"
    # two things: "a pup and a kitty"; many with no s, and those "they" stands for alone
    r"|\b(?:a|an|the|my|our|your|his|her)\s+[a-z][\w-]*\s+and\s+(?:a|an|the|my|our|your|his"
    r"|her)\s+[a-z]"
    r"|\b(?:people|children|men|women|others|everyone|everybody|anyone|anybody|someone|"
    r"somebody)\b",
    re.IGNORECASE,
)
# two named: "Jo and Ann" (I is no name)
_EN_NAMES_AND = re.compile(r"\b(?!I\b)[A-Z][\w.'-]*,?\s+and\s+(?!I\b)[A-Z]")
_EN_PERSON_NOUNS = {
    "m": "man|boy|guy|gentleman|father|dad|son|brother|husband|boyfriend|grandpa|grandfather|"
    "uncle|nephew|actor|king|prince|hero",
    "f": "woman|girl|lady|mother|mom|mum|daughter|sister|wife|girlfriend|grandma|grandmother|"
    "aunt|niece|actress|queen|princess|heroine",
    "": "person|character|protagonist|stranger|friend|teacher|doctor|kid|child|baby|singer|"
    "player|coach|boss|student|neighbor|neighbour|colleague|coworker|partner|writer|author|"
    "artist|customer|driver|owner|classmate|roommate",
}
_EN_PERSON = {
    g: re.compile(
        rf"\b(?:a|an|the|this|that|my|your|his|her|our|their|\w+['’]s)\s+"
        rf"(?:[a-z][\w-]*\s+){{0,2}}?(?:{words})\b",
        re.IGNORECASE,
    )
    for g, words in _EN_PERSON_NOUNS.items()
}
_EN_THEY = re.compile(r"(?:they|them|their|theirs)(?:['’](?:re|ve|d|ll))?", re.IGNORECASE)
_EN_BOUND = re.compile(r"(they|them|their|theirs|he|him|his|she|her|hers)\b", re.IGNORECASE)


def bound_in_text(text: str, start: int) -> bool:
    """Whether the he / she / they at ``start`` follows, in ``text``, what it stands for:
    a plural thing or two names for they, a person (a man, the main character) for he or
    she."""
    m = _EN_BOUND.match(text, start)
    if m is None:
        return False
    before, word = text[:start], m.group(1).lower()
    if word in ("they", "them", "their", "theirs"):
        return bool(_EN_PLURAL_THING.search(before) or _EN_NAMES_AND.search(before))
    own = "m" if word in ("he", "him", "his") else "f"
    return any(_EN_PERSON[g].search(before) for g in (own, ""))


# "They" right after talk of things ("Those flowers look great! What kind are they?",
# "[shares a photo of three dogs]") stands for things, as "it" does; people named or
# spoken of there (friends, singers, two names) keep it a person's.
_EN_PEOPLE = re.compile(
    r"\b(?:people|persons|children|kids|friends|parents|guys|folks|family|families|siblings|"
    r"brothers|sisters|colleagues|coworkers|co-workers|teammates|men|women|girls|boys|"
    r"relatives|others|everyone|everybody|someone|somebody|anyone|anybody|team|crowd|couple|"
    r"kiddos|babies|sons|daughters|moms|dads|generations?|veterans|mentees|users|guests|"
    r"cousins|grandparents|audiences?|judges|fans|peers|pals|buddies|little ones)\b",
    re.IGNORECASE,
)
# most other nouns for people end so (singers, actors, artists, participants, residents);
# these things end so too
_EN_PERSON_SUFFIX = re.compile(r"\b[a-z]+(?:er|or|ist|ant|ent|ian|ee|eer)s\b", re.IGNORECASE)
_EN_THINGS_SO = frozenset(
    "flowers posters stickers burgers sneakers computers papers letters numbers covers layers "
    "towers chapters containers matters answers powers centers centres rivers controllers "
    "banners flyers sweaters peppers colors colours doors floors mirrors flavors flavours "
    "tractors motors monitors markers waters trailers folders borders orders wonders dinners "
    "summers winters corners headquarters plants restaurants ingredients events".split()
)


@lru_cache(maxsize=256)  # read for each "they", and again at each of the gate's attempts
def only_things(talk: str) -> bool:
    """Whether ``talk`` speaks of many things and of no people, so that a "they" after it
    stands for things."""
    people = [m.group(0).lower() for m in _EN_PERSON_SUFFIX.finditer(talk)]
    people = [w for w in people if w not in _EN_THINGS_SO and not w.endswith("ments")]
    return bool(_EN_PLURAL_THING.search(talk)) and not (
        people or _EN_PEOPLE.search(talk) or _EN_NAMES_AND.search(talk)
    )


_QUOTED = re.compile(r"“[^”]*”|\"[^\"]*\"|「[^」]*」|『[^』]*』|《[^》]*》|‘[^’]*’")


@dataclass(frozen=True)
class Found:
    start: int
    end: int
    text: str
    kind: Kind


def protected_spans(text: str, names: Iterable[str]) -> list[tuple[int, int]]:
    """Quotes and every occurrence of a known name: left exactly as written."""
    spans = [m.span() for m in _QUOTED.finditer(text)]
    for name in {n for n in names if n}:
        start = text.find(name)
        while start != -1:
            spans.append((start, start + len(name)))
            start = text.find(name, start + len(name))
    return spans


def _free(start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    return all(end <= s or start >= e for s, e in spans)


def zh_pronoun_tokens(text: str) -> list[tuple[int, int, str]]:
    """(start, end, pronoun) for tokens that begin with a pronoun (我家 -> 我, 他们 -> 他们)."""
    found = []
    for word, start, _ in tokenize_with_offsets(text):
        if word in ZH_NOT_PRONOUN:
            continue
        for pronoun in ZH_PRONOUNS:
            if word.startswith(pronoun):
                found.append((start, start + len(pronoun), pronoun))
                end = start + len(word)
                if len(word) > len(pronoun) + 1 and word[-1] in _ZH_ONE_CHAR:  # 我爱你
                    found.append((end - 1, end, word[-1]))
                break
    return found


def zh_person_before(text: str, start: int, pronoun: str) -> int:
    """Where the last person a 他 / 她 at ``start`` can stand for (a man, 你的前任女友,
    那个厨师) begins in ``text`` before it; -1: none."""
    pattern = _ZH_PERSON.get(pronoun)
    found = list(pattern.finditer(text, 0, start)) if pattern else []
    return found[-1].start() if found else -1


def zh_bound_in_text(text: str, start: int, pronoun: str) -> bool:
    return zh_person_before(text, start, pronoun) >= 0


def find_relative(text: str, names: Iterable[str] = (), before: str = "") -> list[Found]:
    """Every pronoun, relative time and relative place outside quotes and names;
    ``before``: the talk just before the text (its things can be "they")."""
    spans = protected_spans(text, names)
    found: list[Found] = []

    def add(start: int, end: int, kind: Kind) -> None:
        if _free(start, end, spans) and all(end <= f.start or start >= f.end for f in found):
            found.append(Found(start, end, text[start:end], kind))

    for pattern, kind in ((ZH_TIME, "time"), (EN_TIME, "time"), (ZH_PLACE, "place")):
        for m in pattern.finditer(text):
            add(m.start(), m.end(), kind)  # type: ignore[arg-type]
    for m in en_places(text):
        add(m.start(), m.end(), "place")
    for pattern in (EN_FIRST, EN_FIRST_PLURAL, EN_SECOND, EN_THIRD):
        for m in pattern.finditer(text):
            if bound_in_text(text, m.start()):
                continue
            if before and _EN_THEY.fullmatch(m.group(0)) and only_things(before):
                continue  # read only for a "they" (most texts have none)
            add(m.start(), m.end(), "pronoun")
    if any("\u4e00" <= ch <= "\u9fff" for ch in text):
        for start, end, pronoun in zh_pronoun_tokens(text):
            if pronoun not in ZH_THING and not zh_bound_in_text(text, start, pronoun):
                add(start, end, "pronoun")
    return sorted(found, key=lambda f: f.start)
