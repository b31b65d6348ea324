"""Offline token estimates, good enough for budgets and shares (not for billing).

Chinese, Japanese and Korean characters are counted as about one token each (BPE vocabularies
of current models split most CJK characters into one or two tokens); other text as one token
per four characters, the usual rule for English.
"""

from __future__ import annotations

import re
from functools import cache


@cache
def _cjk_run() -> re.Pattern[str]:
    """Runs, not single characters: counting the lengths of a few runs is about 25 times
    faster on Chinese text than building one string per character (the lore scan counts
    every activated entry's content; benchmarks/lore.py). Compiled on first use: the class
    takes milliseconds to compile, and ASCII text never needs it."""
    return re.compile(
        r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]+"
    )


def _cjk_count(text: str) -> int:
    return 0 if text.isascii() else sum(map(len, _cjk_run().findall(text)))


def token_parts(text: str) -> tuple[int, int]:
    """``(cjk, other)`` character counts: they add up over concatenation, so the estimate of
    a growing text can be kept without re-reading it (``tokens_of_parts``)."""
    cjk = _cjk_count(text)
    return cjk, len(text) - cjk


def tokens_of_parts(cjk: int, other: int) -> int:
    """``estimate_tokens`` of a text with these ``token_parts``."""
    return cjk + (other + 3) // 4 if cjk or other else 0


def estimate_tokens(text: str) -> int:
    """A deterministic token estimate for ``text``."""
    if not text:
        return 0
    cjk = _cjk_count(text)
    other = len(text) - cjk
    return cjk + (other + 3) // 4
