"""The offline profile merge: key facts and preferences by pattern (Chinese and English),
affection from a few sentiment words, group topics from keywords several people used.
Honest about what it is: pattern matching, not understanding. It writes no impression of
its own (an impression describes a person, and copying what they said would be
conversation content); the reply model's ``update_user_impression`` lines are kept.
"""

from __future__ import annotations

import re

from nodes.memory.profile_change import (
    Current,
    base_learned,
    base_relationship,
    finish_relationship,
    merge_key_facts,
    trim_impression,
    unique,
)
from nodes.memory.rewrite import rules_parts
from state.memory import MemoryJob
from stores import topics as topic_counts
from stores.base import GroupProfile, ProfileChange
from stores.text import has_cjk, keywords

_STOP = r"[，。,.!！?？;；\n]"
_V = r"([^，。,.!！?？;；\n]{1,24}?)"  # a short value, up to the next punctuation

FACT_PATTERNS: dict[str, list[re.Pattern[str]]] = {
    "birthday": [
        re.compile(r"生日(?:是|在)?\s*((?:\d{1,2}|[一二三四五六七八九十]{1,3})\s*月\s*(?:\d{1,2}|[一二三四五六七八九十]{1,3})\s*[日号])"),
        re.compile(r"\b(?i:my) birthday is (?:on )?((?:[A-Z][a-z]+ \d{1,2}(?:st|nd|rd|th)?)|(?:\d{1,2}(?:st|nd|rd|th)? (?:of )?[A-Z][a-z]+))"),
        re.compile(r"\bI was born on ([^,.!?]{3,30})"),
    ],
    "job": [
        re.compile(r"我(?:的工作|的职业)是" + _V + f"(?={_STOP}|$)"),
        re.compile(r"我是(?:一名|一个|个)?([^，。,.!！?？\s]{0,8}(?:工程师|程序员|老师|教师|医生|护士|设计师|律师|学生|警察|厨师|作家|画家|记者|会计|销售|经理|司机|研究员|博士|运营|产品经理))"),
        re.compile(r"我(在[^，。,.!！?？\s]{2,16}?(?:工作|上班))"),
        re.compile(r"\bI work as (?:an? )?([^,.!?]{2,40}?)(?= at |[,.!?]|$)"),
        re.compile(r"\bI work (?:at|for) ([A-Z][^,.!?]{1,40}?)(?=[,.!?]|$| as )"),
        re.compile(r"\bI(?:'m| am) an? ((?:[a-z]+ ){0,2}(?:engineer|teacher|developer|programmer|nurse|doctor|designer|student|artist|writer|lawyer|manager|counselor|chef|musician|scientist|accountant))\b"),
        re.compile(r"\b(?i:my) job is ([^,.!?]{2,40})"),
    ],
    "location": [
        re.compile(r"我(?:住在|生活在|家在|来自|搬到了?|老家(?:是|在))([^，。,.!！?？\s]{2,12}?)(?=" + _STOP + r"|$|了|住|生活|工作)"),
        re.compile(r"\bI live in ([A-Z][\w ]{1,30}?)(?=[,.!?]|$| and | with | now)"),
        re.compile(r"\bI(?:'m| am) from ([A-Z][\w ]{1,30}?)(?=[,.!?]|$| and | but )"),
        re.compile(r"\bI (?:just )?moved to ([A-Z][\w ]{1,30}?)(?=[,.!?]|$| and | last | in | with )"),
    ],
    "dream": [
        re.compile(r"我的(?:梦想|理想|目标)是" + _V + f"(?={_STOP}|$)"),
        re.compile(r"我(?:以后|将来|一直|很)想(?:成为|当)(?:一名|一个)?" + _V + f"(?={_STOP}|$)"),
        re.compile(r"\b(?i:my) dream is (?:to )?([^,.!?]{3,60})"),
        re.compile(r"\bI (?:want|hope|plan) to become (?:an? )?([^,.!?]{2,40})"),
        re.compile(r"\bI(?:'ve| have) always wanted to ([^,.!?]{3,60})"),
    ],
    "family": [
        re.compile(r"我有(?:一个|个|两个|三个)?(妹妹|弟弟|哥哥|姐姐|女儿|儿子|孩子|老婆|老公|男朋友|女朋友)"),
        re.compile(r"\bI have (?:a|an|one|two|three|\d) (?:little |older |younger )?(sister|brother|son|daughter|kids?|children|husband|wife|boyfriend|girlfriend)s?\b"),
        re.compile(r"\b(?i:my) (husband|wife|son|daughter|sister|brother|mom|mother|dad|father|partner)(?:'s name)? is ([A-Z][a-z]+)"),
    ],
    "pet": [
        re.compile(r"我(?:养了|有)(?:一只|一条|只|条|两只)?([^，。,.!！?？\s]{0,6}?(?:猫|狗|兔子|仓鼠|鹦鹉|鱼|龟))(?:，?(?:叫|名叫|名字叫)([^，。,.!！?？\s]{1,8}))?"),
        re.compile(r"\bI have an? ((?:[a-z]+ )?(?:dog|cat|puppy|kitten|rabbit|hamster|parrot|turtle))(?: named ([A-Z][a-z]+))?"),
        re.compile(r"\b(?i:my) (dog|cat|puppy|kitten|rabbit|hamster|parrot|turtle)(?:'s name)? is (?:called |named )?([A-Z][a-z]+)"),
    ],
}  # fmt: skip
PREFERENCE = [
    re.compile(r"我(?:很|特别|超|最|也)?(?:喜欢|爱|热爱)(?!你)([^，。,.!！?？\s的]{1,10})"),
    re.compile(r"\bI (?:really |also )?(?:love|like|enjoy|adore) ([a-z][a-z ]{2,30}?)(?=[,.!?]|$| and | with | so )"),
]  # fmt: skip
ALIAS = [re.compile(r"叫我([^，。,.!！?？\s]{1,8})"), re.compile(r"\bcall me ([A-Z][a-z]+)")]
POSITIVE = re.compile(
    r"谢谢|感谢|喜欢你|爱你|哈哈|开心|太好了|厉害|\b(?:thanks?|thank you|love you|awesome|great|glad)\b",
    re.I,
)
NEGATIVE = re.compile(
    r"讨厌|滚|烦死|闭嘴|笨蛋|垃圾|\b(?:hate you|stupid|shut up|annoying|idiot)\b", re.I
)
FACT_LABELS = {
    "zh": {"birthday": "生日", "job": "工作", "location": "所在地", "dream": "理想", "family": "家庭", "pet": "宠物", "other": "其他"},
    "en": {"birthday": "birthday", "job": "job", "location": "lives in", "dream": "dream", "family": "family", "pet": "pet", "other": "other"},
}  # fmt: skip


def extract_facts(text: str) -> list[dict[str, str]]:
    facts = []
    for kind, patterns in FACT_PATTERNS.items():
        for pattern in patterns:
            if m := pattern.search(text):
                value = " ".join(g.strip() for g in m.groups() if g).strip()
                if kind == "family" and pattern.pattern.startswith("我有"):
                    value = f"有{value}"
                if kind == "pet" and m.lastindex and m.lastindex > 1 and m.group(2):
                    value = (
                        f"{m.group(1)}（{m.group(2)}）"
                        if has_cjk(value)
                        else f"{m.group(1)} named {m.group(2)}"
                    )
                facts.append({"type": kind, "value": value})
                break
    return facts


def affection_change(text: str) -> float:
    """+0.01 for an ordinary exchange, +0.02 when warm, -0.03 when hostile."""
    if NEGATIVE.search(text):
        return -0.03
    return 0.02 if POSITIVE.search(text) else 0.01


def summarize_user(name: str, facts: list[dict[str, str]], prefs: list[str], zh: bool) -> str:
    labels = FACT_LABELS["zh" if zh else "en"]
    parts = [
        f"{labels[f['type']]}：{f['value']}" if zh else f"{labels[f['type']]}: {f['value']}"
        for f in facts
    ]
    if prefs:
        parts.append(("喜欢：" if zh else "likes: ") + ("、" if zh else ", ").join(prefs[-8:]))
    if not parts:
        return ""
    return f"{name}：" + "；".join(parts) if zh else f"{name} — " + "; ".join(parts)


def group_profile(job: MemoryJob, current: GroupProfile | None, text: str) -> GroupProfile:
    """Topics are keywords at least two people used, counted per speaker so a person's
    words can be taken out again (``stores.topics``)."""
    traits = topic_counts.added(current.traits if current else {}, job.user_id, keywords(text, 5))
    name = job.chat_name or (current.name if current else job.scope_chat_id)
    zh = has_cjk(text) or has_cjk(name)
    summary = topic_counts.summary_of(name, traits["topics"], zh)
    return GroupProfile(
        platform=job.platform,
        group_id=job.scope_chat_id,
        name=name,
        summary=summary or (current.summary if current else ""),
        traits=traits,
        version=current.version if current else 0,
    )


def in_their_words(job: MemoryJob, persona: str) -> str:
    """new_info as the person would say it, which is what the patterns read: the bot's
    notes (``new_info_by="bot"``: 你 is them, 我 the bot) are made absolute, then their
    name becomes 我 / my / I."""
    if job.new_info_by == "user":
        return job.new_info
    text = rules_parts(job, persona)[1]
    if not job.user_name.isascii():
        return text.replace(job.user_name, "我")
    name = re.escape(job.user_name)
    return re.sub(rf"\b{name}\b", "I", re.sub(rf"\b{name}'s\b", "my", text))


def rules_change(job: MemoryJob, current: Current, persona: str = "") -> ProfileChange:
    info, ts = in_their_words(job, persona or job.persona_id), job.when.timestamp()
    rel = base_relationship(job, current.relationship)
    learned = base_learned(job, current.learned)
    told = [f.model_dump() for f in job.key_facts]  # from the reply model's tools: as given
    learned.key_facts = merge_key_facts(learned.key_facts, [*extract_facts(info), *told])
    prefs = [m.group(1).strip() for p in PREFERENCE for m in p.finditer(info)]
    learned.preference_keywords = unique([*learned.preference_keywords, *prefs], 20)
    aliases = [m.group(1) for p in ALIAS for m in p.finditer(info)]
    rel.aliases = [a for a in unique([*rel.aliases, *aliases], 20) if a != job.user_name]
    if job.impression_update:
        day = job.when.date().isoformat()
        learned.impression_text = trim_impression(
            f"{learned.impression_text}\n[{day}] {job.impression_update}".strip()
        )
    rel = finish_relationship(rel, affection_change(info), ts)
    zh = has_cjk(info) or has_cjk(job.user_name)
    learned.summary = summarize_user(
        job.user_name, learned.key_facts, learned.preference_keywords, zh
    )
    learned.traits = {
        "key_facts": {f["type"]: f["value"] for f in learned.key_facts},
        "preferences": learned.preference_keywords,
    }
    from_tool = bool(job.key_facts or job.impression_update)  # the model's words, not theirs
    group = (
        group_profile(job, current.group, info)
        if job.chat_type == "group" and not from_tool
        else None
    )
    return ProfileChange(request_id=job.request_id, relationship=rel, learned=learned, group=group)
