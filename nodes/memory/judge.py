"""What the quality gate holds against a rewrite (seed 003 §4.2 step 3, and what a real
model gets wrong): it is not prose (empty, JSON, code, the prompt echoed back), it still
has relative words
(pronouns, relative times and places), it drops a name the exchange was about (the user's
or the persona's), or it loses most of the content.

A ``Verdict`` also ranks attempts: when every rewrite failed, the least bad one is stored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nodes.memory.lexicon import (
    EN_FIRST,
    EN_FIRST_PLURAL,
    EN_SECOND,
    ZH_FIRST,
    ZH_FIRST_PLURAL,
    ZH_SECOND,
    ZH_SECOND_PLURAL,
    _free,
    find_relative,
    protected_spans,
    zh_pronoun_tokens,
)
from nodes.model import looks_structured
from state.memory import MemoryJob
from stores.text import has_cjk, terms

# Lines of the historian's own prompt: a small model often answers by echoing them.
PROMPT_MARKERS = (
    "【数据】",
    "原始摘要",
    "行为（",
    "新信息（",
    "行为：",
    "新信息：",
    "改写后的文本",
)
_JSON_INSIDE = re.compile(r'[{\[]\s*"')
MIN_CONTENT_KEPT = 0.25  # of the exchange's content words (when it has MIN_CONTENT_TERMS)
MIN_CONTENT_TERMS = 5
_WORDS = re.compile(r"[A-Za-z\u3400-\u9fff]")
_CODE_LINE = re.compile(
    r"^\s*(?:def |class |import |from \S+ import |function\b|const |let |var |return\b|#include)"
    r"|[;{}]\s*$",
    re.MULTILINE,
)


@dataclass(frozen=True)
class Verdict:
    reasons: list[str]  # empty: the rewrite passes
    relative: list[str]  # the relative words left, for the historian's next try
    penalty: int  # for choosing the least bad attempt

    @property
    def passed(self) -> bool:
        return not self.reasons


def not_prose(text: str, source: str = "") -> str | None:
    """Why ``text`` is not a written statement, if it is not. What the exchange itself
    contained (a pasted snippet in ``source``) is not held against it."""
    stripped = text.strip()
    if not stripped:
        return "empty"
    if looks_structured(stripped) and not _JSON_INSIDE.search(source):
        return "not prose: JSON"
    if any(m in stripped and m not in source for m in PROMPT_MARKERS):
        return "not prose: repeats the prompt"
    if "```" in stripped and "```" not in source:
        return "not prose: a code block"
    if len(_CODE_LINE.findall(stripped)) >= 2 + len(_CODE_LINE.findall(source)):
        return "not prose: code"
    if not _WORDS.search(stripped):
        return "not prose: no words"
    return None


def persons(text: str) -> set[str]:
    """Which grammatical persons a text uses outside quotes: "first", "second"."""
    spans = protected_spans(text, ())
    found = set()
    if has_cjk(text):
        for start, end, pronoun in zh_pronoun_tokens(text):
            if not _free(start, end, spans):
                continue
            if pronoun in ZH_FIRST | ZH_FIRST_PLURAL:
                found.add("first")
            elif pronoun in ZH_SECOND | ZH_SECOND_PLURAL:
                found.add("second")
    for pattern, person in ((EN_FIRST, "first"), (EN_FIRST_PLURAL, "first"), (EN_SECOND, "second")):
        if any(_free(*m.span(), spans) for m in pattern.finditer(text)):
            found.add(person)
    return found


def required_names(job: MemoryJob, persona: str) -> list[str]:
    """Who the exchange is about, so the rewrite must name them: a name it already uses,
    and whoever its pronouns stand for (in what the bot wrote 我 is the persona and 你 the
    user; in the user's own words 我 is the user)."""
    bot_wrote = [job.action_summary] + ([job.new_info] if job.new_info_by == "bot" else [])
    said = persons(job.new_info) if job.new_info_by == "user" else set()
    by_bot = set().union(*(persons(t) for t in bot_wrote))
    raw = job.raw_text
    needed = []
    if job.user_name in raw or "second" in by_bot or "first" in said:
        needed.append(job.user_name)
    if persona in raw or "first" in by_bot:
        needed.append(persona)
    return needed


def content_terms(text: str, names: list[str]) -> set[str]:
    """The words that carry content: relative words and pronouns left out (a rewrite
    replaces them), and single characters."""
    spans = [(f.start, f.end) for f in find_relative(text, names)]
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + " " + text[end:]
    return {t for t in terms(text, bigrams=False) if len(t) > 1}


def judge(text: str, job: MemoryJob, persona: str, names: list[str]) -> Verdict:
    """The gate's verdict on one rewrite (``names``: names known in the exchange)."""
    reasons: list[str] = []
    penalty = 0
    problem = not_prose(text, job.raw_text)
    if problem:
        return Verdict([problem], [], 100)
    found = find_relative(text, names, "\n".join(m.content for m in job.recent_messages[-2:]))
    relative = list(dict.fromkeys(f.text for f in found))
    if relative:
        reasons.append(f"relative words left: {'、'.join(relative)}")
        penalty += len(relative)
    missing = [n for n in required_names(job, persona) if n and n not in text]
    if missing:
        reasons.append(f"drops the name {'、'.join(missing)}")
        penalty += 10 * len(missing)
    source = content_terms(job.raw_text, names)
    if len(source) >= MIN_CONTENT_TERMS:
        kept = len(source & content_terms(text, names))
        if kept / len(source) < MIN_CONTENT_KEPT:
            reasons.append(f"loses most of the content (keeps {kept} of {len(source)} words)")
            penalty += 5
    return Verdict(reasons, relative, penalty)
