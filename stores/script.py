"""Which script a text is in, without loading the segmenter (settings import this)."""

from __future__ import annotations

import re

CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def has_cjk(text: str) -> bool:
    return CJK.search(text) is not None
