"""Offline token estimates, good enough for budgets and shares (not for billing).

Chinese, Japanese and Korean characters are counted as about one token each (BPE vocabularies
of current models split most CJK characters into one or two tokens); other text as one token
per four characters, the usual rule for English.
"""

from __future__ import annotations

import re

_CJK = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]"
)


def estimate_tokens(text: str) -> int:
    """A deterministic token estimate for ``text``."""
    if not text:
        return 0
    cjk = len(_CJK.findall(text))
    other = len(text) - cjk
    return cjk + (other + 3) // 4
