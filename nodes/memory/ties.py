"""The ties a memory shows between its speaker and other members (``stores.ties``), by
rule, offline: whom they answered (the reply or @ they sent: ``replied``), else whom they
spoke after (the last other speaker before them: ``followed``, a guess), whom they named,
whether they agreed or argued, and the relations they stated ("小红是我同事", "我和小红是室友",
"my wife Melanie", "Jon and I are neighbours").

Pattern matching, honestly labelled: a tie says what the words show, never more; a name
that is not a member of the chat makes no tie.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from state.memory import MemoryJob
from stores.people import name_index
from stores.ties import Tie, TieKind

ZH_RELATIONS = (
    "好朋友|朋友|闺蜜|好友|死党|同事|同学|室友|舍友|邻居|老板|上司|领导|下属|男朋友|女朋友|"
    "前男友|前女友|前任|男友|女友|对象|老公|老婆|丈夫|妻子|爱人|未婚夫|未婚妻|哥哥|姐姐|弟弟|"
    "妹妹|爸爸|妈妈|父亲|母亲|儿子|女儿|表哥|表姐|表弟|表妹|堂哥|堂姐|师傅|徒弟|队友|搭档|哥|姐|弟|妹"
)
EN_RELATIONS = (
    "best friend|friend|colleague|co-?worker|classmate|roommate|neighbou?r|boss|husband|"
    "wife|boyfriend|girlfriend|partner|fianc[ée]e?|brother|sister|mom|mother|dad|father|son|"
    "daughter|cousin|teammate|mentor"
)
EN_PLURAL = (
    "friends|colleagues|co-?workers|classmates|roommates|neighbou?rs|married|dating|siblings|"
    "cousins|teammates|partners"
)
# Said to the one answered, at the start of what they say.
AGREE = re.compile(
    r"^\s*(?:同意|赞同|赞成|说得对|说的对|有道理|没错|确实|对啊|对呀|是啊|是的|\+1|我也觉得|"
    r"(?:i )?agree|exactly|so true|you'?re right|good point|same here)",
    re.I,
)
ARGUE = re.compile(
    r"^\s*(?:不同意|不对|不是吧|胡说|瞎说|别瞎说|扯|才不是|你错了|反对|"
    r"(?:i )?disagree|no way|that'?s not true|you'?re wrong|nope)",
    re.I,
)


def ties_of(job: MemoryJob, people: Mapping[str, str], bot_id: str = "") -> tuple[Tie, ...]:
    """The ties ``job``'s words show; ``people``: the chat's members (user id -> name),
    and whoever spoke since the last hand-off, the bot (``bot_id``) left out."""
    members = dict(people)
    for message in job.recent_messages:
        if message.user_id:
            members.setdefault(message.user_id, message.user_name)
    members.pop(job.user_id, None)
    members.pop(bot_id, None)
    said = job.new_info if job.new_info_by == "user" else ""  # the speaker's own words
    if not members or not said:
        return ()
    found: list[Tie] = []
    # a reply or an @ says whom; speaking after someone is only a guess (``followed``)
    replied = [uid for uid in job.to if uid in members]
    how: TieKind = "replied" if replied else "followed"
    for uid in replied or _last_other(job, members):
        found.append(Tie(uid, members[uid], how))
        if kind := _stance(said):
            found.append(Tie(uid, members[uid], kind))
    forms = name_index(members.items())
    for form in sorted(forms, key=len, reverse=True):
        if form in said:
            uid = forms[form]
            found.append(Tie(uid, members[uid], "mentioned"))
            found += [Tie(uid, members[uid], "stated", label) for label in _stated(said, form)]
    return tuple(dict.fromkeys(found))


def _last_other(job: MemoryJob, members: Mapping[str, str]) -> list[str]:
    addressed = job.addressed()
    if addressed is None:
        return []
    if addressed.user_id and addressed.user_id in members:
        return [addressed.user_id]
    return [uid for uid, name in members.items() if name == addressed.user_name][:1]


def _stance(said: str) -> TieKind | None:
    if ARGUE.search(said):
        return "argued"
    return "agreed" if AGREE.search(said) else None


def _stated(said: str, name: str) -> list[str]:
    """The relations the speaker states between themself and ``name``."""
    n = re.escape(name)
    zh = ZH_RELATIONS
    patterns = (
        rf"{n}(?:是|就是|可是)我(?:的)?({zh})",
        rf"我(?:的)?({zh})(?:是)?{n}",
        rf"我(?:和|跟|与){n}(?:是|成了)(?:好)?({zh})",
        rf"{n}(?:和|跟)我(?:是|成了)(?:好)?({zh})",
        rf"\b[Mm]y ((?:{EN_RELATIONS})),? {n}\b",
        rf"\b{n},? (?:is|was|has been) my ((?:{EN_RELATIONS}))\b",
        rf"\b(?:{n} and I|I and {n}|me and {n}) (?:are|were|have been|got) ((?:{EN_PLURAL}))\b",
        rf"\bI(?:'m| am) {n}'s ((?:{EN_RELATIONS}))\b",
    )
    return [m.group(1).lower() for p in patterns for m in re.finditer(p, said)]
