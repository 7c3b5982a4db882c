"""A question that asks for several things said at different times: "What activities does
Melanie partake in?", "What has John cooked?", "他们都去过哪些地方". Its answer is spread
over sessions, so the top k should be too (``Weights.many``); a question after one fact
("What did Melanie paint?") keeps the best memories of one session together.

Read from the question's grammar only: a plural object of what / which, a present perfect
(things done up to now), both / in common, how many / how often; in Chinese 哪些, 都…过,
几次, 一直, 平时.
"""

from __future__ import annotations

import re

from stores.script import has_cjk

EN_MANY = re.compile(
    r"\b(?:both|in common|how (?:many|often)|ever|so far|usually|all the)\b"
    # what / which + a plural noun (not a possessive: "What is Caroline's")
    r"|\b(?:what|which)\s+(?:(?:kinds?|types?|sorts?)\s+of\s+)?(?!(?:is|was|does|has)\b)"
    r"(?:\w+\s+)?(?!(?:is|was|does|has)\b)\w+[a-rt-z]e?s\b(?!')"
    # a present perfect: what someone has done up to now
    r"|\b(?:has|have)\s+(?:\w+\s+){0,2}?(?!been\b)\w+(?:ed|en|ne|wn|de|ght|ken|ung)\b",
    re.IGNORECASE,
)
ZH_MANY = re.compile(r"哪些|都.{0,8}过|几次|多少次|一直|平时|每次|经常|共同|都喜欢|都有")


def asks_for_many(text: str) -> bool:
    """Whether a question asks for things said over time rather than one fact."""
    return (ZH_MANY if has_cjk(text) else EN_MANY).search(text) is not None
