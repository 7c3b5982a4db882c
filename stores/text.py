"""Text helpers shared by the lexical index and the rule nodes: jieba for Chinese,
Snowball stemming for English, small stop-word lists for both."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from functools import lru_cache

import jieba
import snowballstemmer

from stores.script import has_cjk as has_cjk  # re-exported: the text helpers' home

jieba.setLogLevel(logging.WARNING)

_ASCII_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_WORDLIKE = re.compile(r"\w", re.UNICODE)

EN_STOPWORDS = frozenset(
    """a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each few for from further had hadn't has hasn't have haven't
    having he he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll
    i'm i've if in into is isn't it it's its itself let's me more most mustn't my myself no nor
    not of off on once only or other ought our ours ourselves out over own same shan't she she'd
    she'll she's should shouldn't so some such than that that's the their theirs them themselves
    then there there's these they they'd they'll they're they've this those through to too under
    until up very was wasn't we we'd we'll we're we've were weren't what what's when when's where
    where's which while who who's whom why why's with won't would wouldn't you you'd you'll
    you're you've your yours yourself yourselves also just really yeah yes oh hey hi wow lol
    will gonna got get s t""".split()
)

ZH_STOPWORDS = frozenset(
    """的 了 是 在 我 你 他 她 它 我们 你们 他们 她们 这 那 这个 那个 就 都 也 和 与 及 还 又
    吗 呢 吧 啊 呀 哦 嗯 哈 哈哈 哈哈哈 么 什么 怎么 为什么 哪 哪里 哪儿 谁 几 多少 有 没 没有
    不 很 太 更 最 被 把 让 给 对 从 向 到 于 之 而 或 但 但是 因为 所以 如果 就是 一个 一下
    一些 一点 自己 咱 咱们 您 啦 嘛 哇 呗 着 过 得 地 上 下 里 中 个 些 等 吧 呀 嘿""".split()
)

_STEMMER = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_STEMMER.stemWord(word))


def _ascii_terms(text: str) -> Iterator[str]:
    for word in _ASCII_WORD.findall(text):
        if word in EN_STOPWORDS:
            continue
        yield _stem(word.split("'")[0]) if word.isalpha() or "'" in word else word


_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{2,}")


def terms(text: str, *, bigrams: bool = True) -> list[str]:
    """Lexical terms for BM25: lower-cased, stop words dropped, English stemmed; Chinese
    cut by jieba in search mode (北京大学 also yields 北京, 大学) plus character bigrams,
    so a query still matches where jieba cut the text differently (橘猫 in 一只橘猫叫橘子,
    which jieba cuts as 橘, 猫叫)."""
    lowered = text.lower()
    if not has_cjk(lowered):
        return list(_ascii_terms(lowered))
    out: list[str] = []
    for token in jieba.cut_for_search(lowered):
        token = token.strip()
        if not token or not _WORDLIKE.search(token) or token in ZH_STOPWORDS:
            continue
        if token.isascii():
            out.extend(_ascii_terms(token))
        else:
            out.append(token)
    if bigrams:
        for run in _CJK_RUN.findall(lowered):
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
    return out


def tokenize_with_offsets(text: str) -> list[tuple[str, int, int]]:
    """jieba's tokens with their character offsets (default mode, no overlaps)."""
    return [(word, start, end) for word, start, end in jieba.tokenize(text)]


NAME_POS = ("nr", "nrt", "nrfg")  # jieba's person-name tags
PLACE_POS = ("ns",)


@lru_cache(maxsize=8192)
def tagged(text: str) -> tuple[tuple[str, str, int], ...]:
    """jieba's (word, part-of-speech tag, start offset): nr person names, ns places, nt
    organisations, ... Cached: a chat's recent messages are read again for every pronoun and
    by every job that follows."""
    import jieba.posseg  # its HMM tables load on first use: only when needed

    out, at = [], 0
    for pair in jieba.posseg.cut(text):
        out.append((pair.word, pair.flag, at))
        at += len(pair.word)
    return tuple(out)


COMMON_WORD = 1000  # jieba's dictionary count above which a word is a word, not a name


def name_like(word: str) -> bool:
    """jieba tags some common words as names (明白, 刚刚开始): a name is rare in its
    dictionary and is not made of common words."""
    jieba.dt.check_initialized()
    freq = jieba.dt.FREQ
    if len(word) < 2 or freq.get(word, 0) >= COMMON_WORD:
        return False
    return not any(
        freq.get(word[:i], 0) >= COMMON_WORD and freq.get(word[i:], 0) >= COMMON_WORD
        for i in range(2, len(word) - 1)
    )


_TOPIC_POS = ("n", "nz", "ns", "nt", "nw", "vn", "eng")  # nouns, names of places/orgs, terms


def keywords(text: str, k: int = 5) -> list[str]:
    """A few topic words: jieba's TF-IDF for Chinese, frequent content words for English."""
    if has_cjk(text):
        import jieba.analyse  # loads its IDF table: only when needed

        tags = jieba.analyse.extract_tags(text, topK=k, allowPOS=_TOPIC_POS)
        return [w for w in tags if _WORDLIKE.search(w)]
    words = [
        w for w in re.findall(r"[A-Za-z][A-Za-z'-]{3,}", text) if w.lower() not in EN_STOPWORDS
    ]
    counts: dict[str, int] = {}
    for w in words:
        counts[w.lower()] = counts.get(w.lower(), 0) + 1
    return sorted(counts, key=lambda w: -counts[w])[:k]


def keywords_of(text: str, limit: int = 12) -> list[str]:
    """The distinct lexical terms of a message, for keyword overlap between messages."""
    return list(dict.fromkeys(terms(text)))[:limit]


_CAPTION = re.compile(r"\s*\[[^\[\]]*\]\s*$")  # "[shares a photo of ...]" after the words
_ASKS = re.compile(r"[?？]$|[吗呢么][。～~!！]*$")


# the question a message ends with, and the words that make it ask for something
_LAST_ASKED = re.compile(r"[^.!?。！？]*[?？]*\s*$")
_OPEN = re.compile(
    r"\b(?:what|who|whom|whose|where|when|which|why|how)\b"
    r"|什么|谁|哪|几[个次点天岁年]|怎么|怎样|为什么|为啥|多少|咋",
    re.IGNORECASE,
)


def asks(text: str) -> bool:
    """A message that ends asking ("What did you paint?", "你去了吗"): what answers it comes
    after it."""
    return bool(_ASKS.search(_CAPTION.sub("", text).rstrip()))


# a sentence and its end ("3.5" is no end: a full stop ends one before a space or the end);
# every character is in one, so the sentences found make up the text
_SENTENCE = re.compile(r"(?:[^。！？!?…\n.]|\.(?=\S))*(?:[。！？!?…\n]|\.(?!\S))*[”\"」』）)]*\s*")


_CLOSE = '”"」』）) \n'
_OPEN_QUOTE = re.compile(r'[“「『"]')


def without_questions(text: str) -> str:
    """A text without the sentences that ask ("你最喜欢哪些菜系？"): what it tells, not
    what it asks for (a question holds no answer)."""
    return "".join(s for s in _SENTENCE.findall(text) if not asks(s.rstrip(_CLOSE)))


def questions_in(text: str) -> list[str]:
    """The sentences of a text that ask, bare (no quote marks or what comes before one):
    'I replied: “Great! What do you like?”' -> ["What do you like?"]."""
    bare = (s.rstrip(_CLOSE) for s in _SENTENCE.findall(text))
    found = (_OPEN_QUOTE.split(s)[-1].strip() for s in bare if asks(s))
    return [s for s in found if s]  # never "": a caller may replace what it returns


def asks_what(text: str) -> bool:
    """Whether the question a message ends with asks for something ("What did you paint?",
    "你去哪了？") rather than whether ("Is she marrying Chandler?", "你去了吗"): a yes-or-no
    question says what it asks about, an open one does not."""
    bare = _CAPTION.sub("", text).rstrip()
    last = _LAST_ASKED.search(bare)
    return bool(last and _OPEN.search(last.group(0)))
