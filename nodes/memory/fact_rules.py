"""Key facts stated in a message, and whom they are about (offline; Chinese and English).

A message is cut into clauses; each clause's subject is read from its start: 我 / I (the
speaker), 你 / you (the person addressed), a chat member's name (小明是医生 -> 小明), or, with
no subject of its own, the previous clause's in the same sentence. The rest of the clause is
matched against one pattern table per fact type; values are checked (``acceptable``): a
pronoun, a place word or a question is never a fact. Questions and negated clauses state
nothing. jieba's tags check what must be a place (ns) for residence and hometown.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from stores.script import has_cjk
from stores.text import PLACE_POS, tagged, terms

SELF, ADDRESSEE = "\0self", "\0addressee"
# a full stop ends an English sentence when a space or the end follows (3.5 does not)
_CLAUSE = re.compile(
    r"(?:[^，,；;。！？!?\n…~～.]|\.(?!\s|$))+(?:[，,；;。！？!?\n…~～]|\.(?=\s|$))*"
)
_ZH_SUBJECT = re.compile(
    r"^(?:其实|现在|我说|对了|嗯|哦|啊|哈哈|不过|而且|所以|但是|因为)?\s*(我|你|您)(?!们)"
)
_QUESTION = re.compile(r"[?？]|吗|呢[，。！]?$|什么|哪|谁|多少|几岁|怎么|是不是|有没有")
# a question that presumes what it asks (你终于到北京了？ You finally got to Boston?)
_PRESUMED = re.compile(r"(?:终于|总算|\bfinally\b)[^，,。！？!?]*[了啦]?[?？]$", re.I)
_NEGATED = re.compile(r"^(?:不|没|别|并不|从不|从没)")
_CORRECTED = re.compile(r"^(?:并?不是)([^，,。！？!?\s]{1,12}?)[，,]?(?:而|但)?是(.+)$")
_PRONOUN_VALUE = re.compile(
    r"^(?:我|你|您|他|她|它|咱|俺|这|那|哪|谁|自己|大家|别人|人家|一起|同一|做|干|搞|的)"
)
_PLACE_WORD = re.compile(r"这里|那里|这儿|那儿|这边|那边|地方|本群|群里")
_INDEFINITE = re.compile(r"^(?:一家|一个|一所|一间|某个?|这家|那家)")
_JUNK_END = re.compile(r"[了吗呢吧啊呀哦嘛的]$")

SIGNS = "白羊|金牛|双子|巨蟹|狮子|处女|天秤|天蝎|射手|人马|摩羯|山羊|水瓶|双鱼"
JOB_WORDS = (
    "工程师|程序员|老师|教师|教授|医生|大夫|护士|设计师|律师|学生|研究生|博士生|大学生|高中生|"
    "警察|厨师|主厨|作家|画家|记者|会计|销售|经理|司机|研究员|博士|运营|产品经理|演员|模特|歌手|"
    "服务员|导游|店员|老板|秘书|助理|编辑|摄影师|程序猿|公务员|军人|消防员|飞行员|空姐|农民|工人|"
    "木匠|电工|厨子|律师|法官|牙医|兽医|心理医生|古生物学家|科学家|音乐家|艺术家|主播|翻译|教练|"
    "保安|快递员|外卖员|自由职业者|创业者|实习生|店长|主管|总监|咖啡师|调酒师|美容师|理发师|"
    "专家|明星"
)
_N = r"[0-9一二两三四五六七八九十]"
_V = r"([^，,。！？!?\s]{2,16}?)"
_EN_END = (
    r"(?=[,.!?;]|$| and | with | now| where | but\b| so | for | since | because | too| \d"
    r"| around | about | last | ago| sometimes| as an? | by )"
)
# where someone lives is a place, not their dwelling (a condo, a new apartment)
_EN_DWELLING = re.compile(
    r"\b(?:apartment|condo|house|home|flat|dorm|trailer|building|room|basement)s?$", re.I
)
_EN_VAGUE = re.compile(
    r"^(?:my ?self|your ?self|him|her|them|it|here|there|this|that|mine|yours)$"
    r"|^(?:those|these|it|that|this|(?:doing|having) (?:that|this|it)|just about|everything|anything)\b"
    r"|\b(?:there|here)$",
    re.I,
)
_END = r"(?:吧|啊|呀|哦|嘛|了)?(?:[，,。！!～~?？]|$)"  # the value ends the clause
_PETS = "猫|狗|猫咪|狗狗|小狗|小猫|兔子|仓鼠|鹦鹉|鱼|龟|蛇|马|泰迪|金毛|柯基|哈士奇|牧羊犬|柴犬|布偶猫|英短|橘猫"
_KIN = (
    "父母|爸妈|妈妈|爸爸|母亲|父亲|哥哥|姐姐|妹妹|弟弟|女儿|儿子|孩子|老婆|老公|丈夫|妻子|爷爷|奶奶|"
    "外公|外婆|舅舅|舅妈|姑姑|叔叔|阿姨|姨妈|侄子|侄女|外甥|孙子|孙女"
)
_PARTNERS = "男朋友|女朋友|男友|女友|对象|未婚夫|未婚妻"
_GRADE = "大[一二三四]|研[一二三]|高[一二三]|初[一二三]|[一二三四五六]年级"
ZH_FACTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("age", re.compile(rf"^(?:今年|已经|才|都)?({_N}{{1,3}}多?)(?:周)?岁")),
    ("age", re.compile(rf"^的?年龄是({_N}{{1,3}})")),
    ("age", re.compile(r"^(?:已经|都|快)?([1-9][0-9])了(?=$|[，,。！!…])")),  # 你31了
    ("birthday", re.compile(rf"^的?生日(?:是|在)?({_N}{{1,2}}月{_N}{{1,3}}[日号])")),
    ("star_sign", re.compile(rf"^(?:是|属于)?({SIGNS})座")),
    ("star_sign", re.compile(rf"^的?星座是({SIGNS})座?")),
    # 我是巨蟹！: a sign without 座 where the word means nothing else (处女, 狮子, 射手 do)
    ("star_sign", re.compile(r"^(?:是|属于)(白羊|金牛|双子|巨蟹|天秤|天蝎|摩羯|双鱼)" + _END)),
    ("job", re.compile(rf"^(?:是|当|做)(?:一名|一个|个|一位|名|位)?([^，,。！？!?\s]{{0,8}}?(?:{JOB_WORDS})|[^，,。！？!?\s]{{2,6}}[员师])" + _END)),
    ("job", re.compile(r"^的?(?:工作|职业)是" + _V + _END)),
    ("job", re.compile(r"^(?:从事|干)" + _V + r"(?:工作|行业|这行)?" + _END)),
    ("job", re.compile(r"^在?(?:做|干|搞)([^，,。！？!?\s]{2,12}?)的?工作" + _END)),
    ("job", re.compile(r"^在[^，,。！？!?\s]{2,12}?(?:当|做|担任)(?:一名|一个|个)?([^，,。！？!?\s]{2,8}?)" + _END)),
    ("workplace", re.compile(r"^(?:现在)?在" + _V + r"(?:工作|上班|任职|实习|打工|当|做|担任)")),
    ("workplace", re.compile(r"^(?:入职|加入)了?" + _V + _END)),
    ("school", re.compile(r"^(?:现在)?在" + _V + r"(?:上学|读书|念书|读大学|上大学|读研|读博|上课)")),
    ("school", re.compile(r"^(?:毕业于|考上了?|是)([^，,。！？!?\s]{2,12}?(?:大学|学院|中学|高中|小学))(?:的学生|毕业|的)?" + _END)),
    ("school", re.compile(rf"^(?:今年|现在)?(?:都)?(?:读|上|在读)?({_GRADE})了?" + _END)),
    ("location", re.compile(r"^(?:现在)?(?:住在|生活在|定居在?|搬到了?|搬去了?|家在)" + _V + r"(?:了|住|生活|工作|[，,。！!～~]|$)")),
    ("location", re.compile(r"^(?:现在)?在" + _V + r"(?:生活|居住|定居)" + _END)),
    # where they now are: 我到北京了, 终于来到上海啦 (a place jieba knows; 到家了 is none)
    ("location", re.compile(r"^(?:已经|终于|总算|刚|刚刚)?(?:到|来到|回到|抵达)了?" + _V + r"(?:了|啦)" + _END)),
    ("location", re.compile(r"^(?:已经|终于|总算|刚|刚刚)(?:到|来到|抵达)了?" + _V + _END)),
    ("hometown", re.compile(r"^(?:来自|老家(?:是|在)|出生在|出生于|生在)" + _V + r"(?:的|[，,。！!～~]|$)")),
    ("hometown", re.compile(r"^是([^，,。！？!?\s]{2,6}?)人" + _END)),
    ("hometown", re.compile(r"^(?:是)?在" + _V + r"长大的?" + _END)),
    ("partner", re.compile(rf"^的?(?:{_PARTNERS}|老公|老婆|丈夫|妻子)(?:是|叫)" + _V + _END)),
    ("partner", re.compile(r"^(?:在)?(?:和|跟)([^，,。！？!?\s]{2,8}?)(?:在一起了|结婚了|订婚了|在谈恋爱|谈恋爱|交往)")),
    ("partner", re.compile(rf"^有(?:一个|个|最好的|世界上最好的)?({_PARTNERS})")),
    ("family", re.compile(r"^有(?:一个|个|两个|三个|一位)?(妹妹|弟弟|哥哥|姐姐|女儿|儿子|孩子)")),
    ("family", re.compile(rf"^的?({_KIN})(?:是|叫)" + _V + _END)),
    ("family", re.compile(rf"^的?({_KIN})")),
    ("pet", re.compile(rf"^(?:还)?(?:养了|养着|养|有|家有)(?:一只|一条|只|条|两只|一匹)?(?:叫([^，,。！？!?\s]{{1,6}})的)?([^，,。！？!?\s]{{0,6}}?(?:{_PETS}))")),
    ("dream", re.compile(r"^的(?:梦想|理想|目标)是" + _V + _END)),
    ("dream", re.compile(r"^(?:以后|将来|一直|从小)?想(?:成为|当)(?:一名|一个)?" + _V + _END)),
    ("dream", re.compile(r"^(?:以后|将来|一直|从小)想" + _V + _END)),
    ("dislike", re.compile(r"^(?:很|最|特别|有点)?(?:不喜欢|讨厌|受不了|害怕|怕)" + _V + _END)),
)  # fmt: skip
# Someone owned (我老婆, 我的男朋友, 你姐, 我表姐, 你家狗狗, 你养的猫咪): the owner has one, in a
# question too (你男朋友身体好些了吗 presumes him). Kin, partners and pets only: 我的老板 is
# no fact; 我的妈呀, 你妈的, 我姐妹们, 我哥们 are no kin; 不是我的女朋友, 做你的妻子 are none.
# a lone 鱼, 龟, 蛇, 马 after 我的 is as often a thing (我的鱼竿) as an animal
_OWNED_PETS = "|".join(
    sorted(set(_PETS.split("|")) - {"鱼", "龟", "蛇", "马"}, key=lambda p: (-len(p), p))
)
# what an owner has, and what must not come just before the owner (a denial, a wish)
_RELATION = (
    rf"(?:大|小|二|亲)?(?:(表|堂)(哥|姐|弟|妹)|({_PARTNERS})|({_KIN}|爸|妈|哥|姐|弟|妹)"
    rf"|({_OWNED_PETS}))(?![们妹弟子])"
)
_NOT_AFTER = r"(?<!不是)(?<!没有)(?<!做)(?<!当)"
_OWNED = re.compile(
    rf"(?<![他她它]){_NOT_AFTER}(我|你|您)(?:们)?(?:的|家的?|家里的|养的)?{_RELATION}"
)
# my wife, your kids, my dog: the English owned, a denial just before excepted (not my wife)
_EN_PARTNERS = {"wife", "husband", "boyfriend", "girlfriend", "fiance", "fiancé", "fiancee"}
_EN_PETS = {"dog", "dogs", "cat", "cats", "puppy", "kitten"}
_EN_KIN = "son|daughter|kids|children|sister|brother|grandkids|grandchildren"  # not a parent: everyone had one
_EN_OWNED = re.compile(
    r"\b(my|your) (?:little |older |younger |big |baby |two |three |oldest |youngest )?"
    rf"({'|'.join(sorted(_EN_PARTNERS | _EN_PETS, key=len, reverse=True))}|{_EN_KIN})\b",
    re.I,
)
_EN_NOT_OWNED = re.compile(r"(?:\bnot|n't|\bno|\bbe|divorced|divorce from) $", re.I)
_NOT_OWNED = re.compile(r"我的(?:妈|天|娘|乖乖)|你(?:妈|大爷|娘)(?:的|逼|个|呀)|姐妹|哥们|兄弟")

ZH_LIKE = (
    re.compile(r"^(?:很|特别|超级|超|最|也|还|非常|真的|一直|比较|挺|那么|这么)?(?:喜欢|爱|热爱|迷上了|爱好是)(?!你|我|他|她|的)([^，,。！？!?\s]{1,12}?)" + _END),
    re.compile(r"^最?喜欢的[^，,。！？!?\s]{0,10}?(?:就是|是)([^，,。！？!?\s]{1,12}?)" + _END),
)  # fmt: skip
PLACE_SLOTS = {"location", "hometown"}

_EN_JOBS = (
    "bartender|inventor|worker|assistant|homemaker|housewife|freelancer|entrepreneur|mechanic"
    "|paralegal|librarian|veterinarian|vet|plumber|farmer|baker|cashier|pharmacist|dentist"
    "|therapist|photographer|producer|carpenter|electrician|firefighter|pilot|soldier|officer"
    "|realtor|consultant|analyst|coach|instructor|professor|secretary|janitor|driver|barista"
    "|hairdresser|stylist|blogger|singer|dancer|painter|journalist|editor|tutor|surgeon"
    "|paramedic|accountant|banker|clerk|guard|ranger|lifeguard|trainer|scientist"
)
# I'm a great singer, an awful cook: a skill, not a job
_EN_SKILL = "(?:awful|great|good|bad|terrible|decent|big|huge|amateur|love|wannabe|aspiring)"
_EN_SUBJECT = re.compile(
    r"^\s*(?:(?:so|and|but|well|oh|actually|yeah|yes|no|um|hi|hello|hey|lol|haha|ok|okay|sure"
    r"|cool|nice|wow|honestly|also|now|currently),?\s+)?(I(?:'m|’m| m)?|Im|you(?:'re|’re)?|my|your)\b",
    re.I,
)
EN_FACTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("age", re.compile(r"^(?:'m|’m| am)\s+(\d{1,3})(?: years old|\b)")),
    ("age", re.compile(r"^(?:'re|’re| are)\s+(\d{1,3})(?: years old|\b)")),
    ("star_sign", re.compile(r"^(?:'m|’m| am|'re| are) an? (Aries|Taurus|Gemini|Cancer|Leo|Virgo|Libra|Scorpio|Sagittarius|Capricorn|Aquarius|Pisces)\b")),
    ("job", re.compile(rf"^(?: work as|'m|’m| am|'re| are) (?:just |actually |now )?an? (?!{_EN_SKILL} )((?:[a-z]+ ){{0,2}}(?:engineer|teacher|developer|programmer|nurse|doctor|designer|student|artist|writer|lawyer|manager|counselor|chef|musician|scientist|accountant|actor|actress|waitress|waiter|paleontologist|chef|masseuse|model|nanny|{_EN_JOBS}))\b")),
    ("workplace", re.compile(r"^ (?:work|am working) (?:at|for) ((?:an? |the )?\w[\w'& ]{1,40}?)(?=[,.!?]|$| as | and | so | but )", re.I)),
    ("location", re.compile(r"^ (?:currently |still |now )?(?:live|lives|am living) in ((?:the )?\w[\w' ]{1,30}?)" + _EN_END, re.I)),
    ("location", re.compile(r"^ (?:just |recently )?moved to ((?:the )?\w[\w' ]{1,30}?)" + _EN_END, re.I)),
    # I finally got to Boston: a place by its capital (I got to go is none)
    ("location", re.compile(r"^ (?:just |finally |safely )?(?:got to|arrived in|arrived at|made it to) ((?:the )?[A-Z][\w']+(?: [A-Z][\w']+)*)" + _EN_END)),
    ("hometown", re.compile(r"^(?:'m|’m| am|'re| are) (?:originally |actually )?from ((?:the )?\w[\w' ]{1,30}?)" + _EN_END, re.I)),
    ("hometown", re.compile(r"^ grew up in ((?:the )?\w[\w' ]{1,30}?)" + _EN_END, re.I)),
    ("partner", re.compile(r"^(?:'m|’m| am) (married|engaged)\b")),
    ("birthday", re.compile(r"^ birthday is (?:on )?((?:[A-Z][a-z]+ \d{1,2}(?:st|nd|rd|th)?)|(?:\d{1,2}(?:st|nd|rd|th)? (?:of )?[A-Z][a-z]+))")),
    ("partner", re.compile(r"^ (?:boyfriend|girlfriend|husband|wife|fianc[eé]e?|partner)(?:'s name)? is ([A-Z][a-z]+)")),
    ("pet", re.compile(r"^ (?:have|own) (?:an?|one|two|three|four|\d) ((?:[a-z]+ )?(?:dog|cat|pupp(?:y|ies)|kitten|rabbit|hamster|parrot|turtle|bird|horse|lizard|snake)s?)(?: named ([A-Z][a-z]+))?")),
    ("dislike", re.compile(r"^ (?:hate|can't stand|dislike|don't like) ([a-z][a-z ]{2,30}?)(?=[,.!?]|$| and | so )")),
    ("job", re.compile(r"^ work as (?:an? )?([^,.!?]{2,40}?)(?= at |[,.!?]|$)")),
    ("job", re.compile(r"^ job is ([^,.!?]{2,40})")),
    ("birthday", re.compile(r"^ was born on ([^,.!?]{3,30})")),
    ("dream", re.compile(r"^ dream is (?:to )?([^,.!?]{3,60})")),
    ("dream", re.compile(r"^(?:'ve|’ve| have) always wanted to ([^,.!?]{3,60})")),
    ("dream", re.compile(r"^ (?:want|hope|plan) to become (?:an? )?([^,.!?]{2,40})")),
    ("family", re.compile(r"^ have (?:a|an|one|two|three|four|five|\d )?\s?(?:little |older |younger |grown |young |twin )?(sister|brother|son|daughter|kid|child|children|grandchild|grandchildren|twin|husband|wife)s?\b")),
    ("family", re.compile(r"^ (son|daughter|sister|brother|mom|mother|dad|father)(?:'s name)? is ([A-Z][a-z]+)")),
)  # fmt: skip
EN_LIKE = re.compile(
    r"^ (?:really |also |just |do |still )?(?:love|like|enjoy|adore) ([a-z][a-z ]{2,30}?)"
    r"(?=[,.!?]|$| and | with | so | too\b| though| anyway| like you| but\b| because | when )"
)


@dataclass(frozen=True)
class Stated:
    """A fact a message states: ``subject`` is SELF, ADDRESSEE or a name."""

    subject: str
    type: str
    value: str


def acceptable(kind: str, value: str) -> bool:
    """A value a profile may hold: no pronoun, no place word, nothing a question left, no
    dwelling for a place."""
    v = value.strip()
    if not v or len(v) > 40 or _PRONOUN_VALUE.match(v) or _PLACE_WORD.search(v):
        return False
    if kind not in ("age", "birthday") and _JUNK_END.search(v) and len(v) <= 2:
        return False
    if kind == "partner" and re.search(f"(?:{JOB_WORDS})$", v):
        return False  # 跟厨师在一起: a job, not who
    if _EN_VAGUE.search(v) or (kind in PLACE_SLOTS and _EN_DWELLING.search(v)):
        return False
    if kind in PLACE_SLOTS and any("\u4e00" <= c <= "\u9fff" for c in v):
        return any(flag in PLACE_POS or flag == "nt" for _, flag, _ in tagged(v))
    return True


def grounded(value: str, source: str) -> bool:
    """Whether a value was said in ``source``: its content words (English, stemmed), or at
    least half its characters (Chinese, 有 / 的 / 是 aside: 我哥 grounds 有哥哥). A model's
    fact that was not said is its guess (北京大学 out of "你在我心里一直是最棒的")."""
    if has_cjk(value):
        chars = {c for c in value if has_cjk(c)} - set("有的是个了")
        return bool(chars) and 2 * len(chars & set(source)) >= len(chars)
    return bool(set(terms(value, bigrams=False)) & set(terms(source, bigrams=False)))


def _clauses(text: str) -> Iterator[tuple[str, bool]]:
    """Each clause, and whether it begins a sentence."""
    fresh = True
    for m in _CLAUSE.finditer(text):
        clause = m.group(0)
        yield clause, fresh
        fresh = clause.rstrip(" ")[-1:] in "。！？!?\n…~～."


def stated(text: str, names: tuple[str, ...] = ()) -> list[Stated]:
    """The facts ``text`` states (``names``: the chat's people, for 小明是医生)."""
    out: list[Stated] = []
    subject: str | None = None
    seen: set[tuple[str, str]] = set()  # (subject, kind): a message's first value stands
    for clause, fresh in _clauses(text):
        if fresh:
            subject = None
        body, who = _subject(clause.strip(), names)
        subject = who or subject
        if subject is None or (_QUESTION.search(clause) and not _PRESUMED.search(clause.strip())):
            continue
        if m := _CORRECTED.match(body):  # 不是老师是医生: what follows the denial stands
            body = corrected(m.group(1), m.group(2))
        elif _NEGATED.match(body):
            continue
        for kind, value in _facts(body):
            if (subject, kind) not in seen:
                seen.add((subject, kind))
                out.append(Stated(subject, kind, value))
    for subject, kind, value in owned(text, names):
        if (subject, kind) not in seen:
            seen.add((subject, kind))
            out.append(Stated(subject, kind, value))
    return out


def corrected(denied: str, instead: str) -> str:
    """The body a correction states (不是X是Y: 是Y); a sign for a sign needs no 座 (不是天秤是
    处女呀: a Virgo)."""
    sign = re.match(rf"({SIGNS})座?", instead)
    if sign and re.fullmatch(rf"(?:{SIGNS})座?", denied):
        return f"是{sign.group(1)}座{instead[sign.end() :]}"
    return f"是{instead}"


def owned(text: str, names: tuple[str, ...] = ()) -> Iterator[tuple[str, str, str]]:
    """(owner, kind, value) of the kin, partners and pets a text says someone has: the
    speaker's or the addressee's (我老婆, 你家狗狗), or a member's with 的 (罗斯的妹妹; with
    no 的, 乔伊叔叔 is what Joey is called, not whom he has); a member the speaker is with
    (莫妮卡和我订婚了) is the speaker's partner."""
    for m in _EN_OWNED.finditer(text):
        if not _EN_NOT_OWNED.search(text[max(0, m.start() - 16) : m.start()]):
            owner = SELF if m.group(1).lower() == "my" else ADDRESSEE
            word = m.group(2).lower()
            kind = "partner" if word in _EN_PARTNERS else "pet" if word in _EN_PETS else "family"
            yield owner, kind, word
    if _NOT_OWNED.search(text):
        return
    members = [re.escape(n) for n in sorted(names, key=len, reverse=True) if len(n) > 1]
    for pattern in (_OWNED, *([_named_owner("|".join(members))] if members else [])):
        yield from _owned_by(pattern, text)
    if members:
        for m in _with_me("|".join(members)).finditer(text):
            yield SELF, "partner", m.group(1)


@lru_cache(maxsize=256)
def _named_owner(members: str) -> re.Pattern[str]:
    return re.compile(rf"{_NOT_AFTER}({members})的{_RELATION}")


@lru_cache(maxsize=256)
def _with_me(members: str) -> re.Pattern[str]:
    return re.compile(
        rf"{_NOT_AFTER}({members})(?:和|跟)我(?:已经|刚刚?)?"
        r"(?:在一起了|结婚了|订婚了|在谈恋爱|谈恋爱了|交往了)"
    )


def _owned_by(pattern: re.Pattern[str], text: str) -> Iterator[tuple[str, str, str]]:
    for m in pattern.finditer(text):
        owner = {"我": SELF, "你": ADDRESSEE, "您": ADDRESSEE}.get(m.group(1), m.group(1))
        if m.group(2):
            yield owner, "family", f"有{m.group(2)}{m.group(3)}"
        elif m.group(4):
            yield owner, "partner", m.group(4)
        elif kin := m.group(5):
            whole = kin * 2 if len(kin) == 1 else kin  # 我爸: a profile reads 有爸爸
            yield owner, "family", f"有{whole}"
        elif m.group(6):
            yield owner, "pet", m.group(6)


def _subject(clause: str, names: tuple[str, ...]) -> tuple[str, str | None]:
    if m := _ZH_SUBJECT.match(clause):
        return clause[m.end() :], SELF if m.group(1) == "我" else ADDRESSEE
    for name in sorted(names, key=len, reverse=True):
        if name and clause.startswith(name):
            return clause[len(name) :], name
    if m := _EN_SUBJECT.match(clause):
        word = m.group(1).lower().replace("’", "'")
        rest = clause[m.end(1) :]
        word = "i'm" if word in ("im", "i m") else word
        if word in ("i'm", "you're"):
            rest = (" am" if word == "i'm" else " are") + rest
        if word in ("my", "your"):
            rest = " " + rest.lstrip()
        return rest, SELF if word in ("i", "i'm", "my") else ADDRESSEE
    return clause, None


def _facts(body: str) -> Iterator[tuple[str, str]]:
    seen: set[str] = set()
    for kind, pattern in (*ZH_FACTS, *EN_FACTS):
        if kind in seen or not (m := pattern.search(body)):
            continue
        value = _value(kind, m)
        if acceptable(kind, value):
            seen.add(kind)
            yield kind, value


def _value(kind: str, m: re.Match[str]) -> str:
    groups = [g for g in m.groups()]
    if kind == "pet" and has_zh(m):  # (name, animal): 叫巴爷的德国牧羊犬
        groups.reverse()
    first = _INDEFINITE.sub("", (groups[0] or "").strip()).strip('《》“”"「」')
    named = groups[1] if len(groups) > 1 else None
    if kind == "age":
        return first if first.endswith("岁") or first.isdigit() and not has_zh(m) else f"{first}岁"
    if kind == "star_sign" and has_zh(m):
        return f"{first}座"
    if kind == "family":
        if has_zh(m):
            return f"{first}：{named}" if named else f"有{first}"
        return f"{first} {named}" if named else first
    if kind == "pet" and named:
        return f"{first}（{named}）" if has_zh(m) else f"{first} named {named}"
    return first


def has_zh(m: re.Match[str]) -> bool:
    return any("\u4e00" <= c <= "\u9fff" for c in m.string)


# 钓鱼是我和爸爸都喜欢的活动: what the speaker likes, said of it
_LIKED_BY_ME = re.compile(
    r"^([^，,。！？!?\s]{1,8}?)(?:是|就是|也是)我(?:和[^，,。！？!?\s]{1,4})?(?:都|也|最|很|一直)?(?:喜欢|爱)的"
)


def likes(text: str) -> list[str]:
    """Hobbies and likes the speaker states about themselves (Chinese; English by pattern)."""
    out = []
    for clause, _ in _clauses(text):
        if (m := _LIKED_BY_ME.match(clause.strip())) and not _QUESTION.search(clause):
            if acceptable("like", m.group(1)):
                out.append(m.group(1))
                continue
        body, who = _subject(clause.strip(), ())
        if who == SELF and not _QUESTION.search(clause):
            for pattern in (*ZH_LIKE, EN_LIKE):
                if (m := pattern.match(body)) and acceptable("like", m.group(1)):
                    out.append(m.group(1).strip().strip('《》“”"「」'))
                    break
    return out
