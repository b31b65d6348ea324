"""Where a card's text meets the dice engine: does its lore describe checks, and did the
writer print a roll the engine never made?

``describes_checks`` reads the card and its lore for check rules (dice notation such as
``1D100`` or ``d20``, or words such as 检定 / 暗骰 / skill check / saving throw). A card that
has them gets the planner's dice rule and the writer's no-invented-rolls rule, and the
built-in ``roll_dice`` tool when it declares none.

``invented_rolls`` finds roll claims in the story text (``1D100=45``, ``掷出了17``, ``rolled
a 12``, ``检定：45/60``) whose number is neither a total nor a face of a roll the engine
made this turn. A match is a visible warning, not a rewrite: the text the writer wrote stays.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

_NOTATION = re.compile(r"(?<![A-Za-z0-9])\d{0,3}[dD](?:\d{1,4}|%)(?![A-Za-z0-9])")
_WORDS = re.compile(
    r"检定|掷骰|骰子|暗骰|投骰|技能值|成功率|大成功|大失败|理智检定|san\s*check|skill check|"
    r"saving throw|ability check|attack roll|roll (?:a|the) d\d|difficulty class|\bDC\s*\d+",
    re.IGNORECASE,
)

# A roll written as a result: notation = number, 掷出/骰出 number, rolled a number, N/M checks.
_CLAIMS = (
    re.compile(r"\d{0,3}[dD](?:\d{1,4}|%)\s*(?:[+-]\s*\d+\s*)?[=＝:：]\s*(\d{1,4})"),
    re.compile(r"(?:掷出|骰出|投出|掷得|骰得|掷骰结果)(?:了|为|是)?\s*[:：]?\s*(\d{1,4})"),
    re.compile(r"\brolls?(?:ed)?\s+(?:a|an)\s+(?:natural\s+)?(\d{1,4})\b", re.IGNORECASE),
    re.compile(r"(?:检定|判定|check)\s*[:：]?\s*(\d{1,3})\s*/\s*\d{1,3}", re.IGNORECASE),
)
_TEXT = {
    "zh": "写作：正文里出现了引擎没有掷过的骰点「{claim}」（本轮的掷骰见 /dice）",
    "en": 'writing: the story shows a roll the engine did not make: "{claim}" '
    "(this turn's rolls: /dice)",
}


def describes_checks(texts: Iterable[str]) -> bool:
    """True when the texts hold check rules: dice notation or check vocabulary."""
    for text in texts:
        if text and (_NOTATION.search(text) or _WORDS.search(text)):
            return True
    return False


def invented_rolls(narrative: str, rolls: Iterable[Mapping[str, Any]]) -> list[str]:
    """The roll claims in ``narrative`` whose number no engine roll of the turn shows."""
    known = _known_numbers(rolls)
    found: list[str] = []
    for pattern in _CLAIMS:
        for match in pattern.finditer(narrative):
            if int(match.group(1)) not in known:
                claim = match.group(0).strip()
                if claim not in found:
                    found.append(claim)
    return found


def invented_roll_warnings(
    narrative: str, rolls: Iterable[Mapping[str, Any]], lang: str
) -> list[str]:
    """One visible warning per invented roll claim, in the turn's language."""
    text = _TEXT["zh" if lang == "zh" else "en"]
    return [text.format(claim=claim) for claim in invented_rolls(narrative, rolls)]


def _known_numbers(rolls: Iterable[Mapping[str, Any]]) -> set[int]:
    numbers: set[int] = set()
    for data in rolls:
        for key in ("total", "dc"):
            if isinstance(data.get(key), int):
                numbers.add(int(data[key]))
        for node in data.get("dice") or []:
            numbers.update(int(face.get("value", 0)) for face in node.get("faces") or [])
            if isinstance(node.get("value"), int):
                numbers.add(int(node["value"]))
        info = data.get("info") or {}
        if isinstance(info, Mapping):
            numbers.update(int(t) * 10 + int(info.get("units", 0)) for t in info.get("tens") or [])
    return numbers
