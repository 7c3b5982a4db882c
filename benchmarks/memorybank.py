"""MemoryBank as a ``bench-memory`` set: each user's ten days with the AI companion are a
private chat, each exchange one memory job as the bot's hand-off writes it (the user's
words, and the bot's reply as its action), and each probing question is asked by the user
a day after the last exchange, against the evidence labelled in
``benchmarks.memorybank_gold``.

Categories, read from the question: ``dated`` (it names a day: 在5月2号, On May 2nd),
``what the bot said`` (你给我推荐过…, What did you recommend…), ``about the user`` (the
rest: 我喜欢哪些菜系, What type of music do I like).
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta

from benchmarks.common import SHARED_DATA
from benchmarks.memory_sets import TZ, MemorySet, Question, job
from benchmarks.memorybank_gold import CN, EN
from nodes.reply.hand_off import reply_summary

DATED = re.compile(
    r"\d+月\d+[日号]|\b(?:January|February|March|April|May|June|July|August|September|"
    r"October|November|December)\s+\d+", re.I
)  # fmt: skip
BOT_SAID = re.compile(
    r"(?<![和跟给对])你(?:曾经)?(?:和|给)?我?(?:推荐|建议|告诉|分享|教)|你给了我|"
    r"\byou\b[^?]*\b(?:recommend|suggest|told|tell|share|shared|taught|gave|give)", re.I
)  # fmt: skip


def category(question: str) -> str:
    if DATED.search(question):
        return "dated"
    return "what the bot said" if BOT_SAID.search(question) else "about the user"


def memorybank_set(lang: str, limit: int | None = None) -> MemorySet:
    root = SHARED_DATA / "memorybank" / lang
    users = json.loads((root / f"memory_bank_{lang}.json").read_text())
    asked = [
        next(iter(json.loads(line).values()))
        for line in (root / f"probing_questions_{lang}.jsonl").read_text().splitlines()
        if line.strip()
    ]
    gold = CN if lang == "cn" else EN
    bot = "AI伴侣" if lang == "cn" else "AI companion"
    out = MemorySet(f"memorybank-{lang}")
    for u, person in enumerate(list(users.values())[:limit]):
        name = person["name"].strip()
        uid = chat = f"mb-{lang}-{u}"
        for day, turns in sorted(person["history"].items()):
            start = datetime.fromisoformat(day).replace(hour=20, tzinfo=TZ)
            for i, turn in enumerate(turns):
                rid = f"{chat}:{day[5:]}:{i}"
                said, reply = turn["query"].strip(), turn["response"].strip()
                recent = [{"user_id": "bot", "user_name": bot, "content": reply}]
                action = reply_summary(name, reply)  # as the bot's hand-off writes it
                when = start + timedelta(minutes=3 * i)
                out.jobs.append(job(rid, chat, uid, name, said, when, recent, "private", action))
                out.raw[rid] = f"{name}: {said}\n{bot}: {reply}"
        for text, turns in zip(asked[u], gold[u], strict=True):
            if turns:  # an English question whose answer is not in the English history
                ids = frozenset(f"{chat}:{t}" for t in turns)
                if missing := sorted(ids - out.raw.keys()):
                    raise ValueError(f"memorybank gold, user {u}: no turns {missing}")
                out.questions.append(
                    Question(text, chat, uid, name, ids, category(text), "private")
                )
    return out
