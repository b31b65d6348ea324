"""The dice engine behind ``roll_dice`` and ``narrative roll``.

Expressions are sums of terms: ``NdM`` (``dM`` means ``1dM``) and whole numbers, joined by
``+`` or ``-`` (``2d6+1d4+3``, ``d20 - 1``); spaces and an upper-case ``D`` are accepted. Counts
and sides are bounded, so a roll can never hang. Modes: ``normal``; ``advantage`` and
``disadvantage`` roll every die twice as two sets and keep the set with the higher or lower
dice sum (a tie keeps the first); ``exploding`` rolls a die again while it shows its maximum,
at most ten times per die. Criticals happen only when the expression has exactly one ``d20``
die (a ``1d20`` term that is added): a natural 20 is a critical success, a natural 1 a critical
failure. Every random number comes from the ``random.Random`` passed in (the session RNG).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from narrative_cli.errors import ToolError

MAX_DICE = 100  # dice per set
MAX_SIDES = 1000
MAX_EXPLOSIONS = 10  # extra rolls per die in exploding mode
MAX_TERMS = 20
MAX_CONSTANT = 10_000
MAX_EXPR_CHARS = 100
MAX_DC = 1_000_000
MODES = ("normal", "advantage", "disadvantage", "exploding")

_MODE_ALIASES = {
    "": "normal",
    "adv": "advantage",
    "dis": "disadvantage",
    "disadv": "disadvantage",
    "explode": "exploding",
    "普通": "normal",
    "优势": "advantage",
    "劣势": "disadvantage",
    "爆炸": "exploding",
}
_TERM = re.compile(r"([+-]?)(?:(\d*)d(\d+)|(\d+))")

_ERRORS = {
    "empty": ("missing dice expression", "缺少骰子表达式"),
    "too_long": (
        "dice expression is too long ({n} characters, at most {limit})",
        "骰子表达式过长（{n} 个字符，最多 {limit} 个）",
    ),
    "syntax": (
        "invalid dice expression '{expr}': use terms like 2d6, d20 or 3 joined by + or -",
        "无法识别的骰子表达式「{expr}」：应为 2d6、d20、3 这样的项，用 + 或 - 连接",
    ),
    "no_dice": (
        "dice expression '{expr}' has no dice; add a term like 1d20",
        "骰子表达式「{expr}」里没有骰子，请加上 1d20 这样的项",
    ),
    "too_many_terms": (
        "dice expression '{expr}' has {n} terms, at most {limit}",
        "骰子表达式「{expr}」有 {n} 项，最多 {limit} 项",
    ),
    "zero_count": (
        "'{term}' rolls no dice; roll at least one",
        "「{term}」没有掷任何骰子，至少掷 1 个",
    ),
    "too_many_dice": (
        "'{expr}' rolls {n} dice, at most {limit} per roll",
        "「{expr}」要掷 {n} 个骰子，每次最多 {limit} 个",
    ),
    "sides": (
        "'{term}': a die has 1 to {limit} sides",
        "「{term}」：骰子面数应在 1 到 {limit} 之间",
    ),
    "constant": (
        "'{term}': numbers in a dice expression are at most {limit}",
        "「{term}」：骰子表达式中的数字最大为 {limit}",
    ),
    "mode": (
        "unknown dice mode '{mode}' (use normal, advantage, disadvantage or exploding)",
        "未知的掷骰模式「{mode}」（可用：normal、advantage、disadvantage、exploding）",
    ),
    "dc": ("dc must be a whole number, got '{dc}'", "dc 必须是整数，收到的是「{dc}」"),
}

# critical success, critical failure, success, failure, no DC
_VERDICTS = {
    "zh": ("大成功", "大失败", "成功", "失败", "无DC"),
    "en": ("critical success", "critical failure", "success", "failure", "no DC"),
}
_WORDS = {
    "zh": {
        "prefix": "检定结果：",
        "and": " 和 ",
        "higher": "，取高值",
        "lower": "，取低值",
        "exploded": "，爆炸: ",
    },
    "en": {
        "prefix": "Check: ",
        "and": " and ",
        "higher": ", keep higher",
        "lower": ", keep lower",
        "exploded": ", exploded: ",
    },
}


class DiceError(ToolError):
    """A dice expression, mode or DC the engine cannot use; ``localized(lang)`` gives zh text."""

    def __init__(self, key: str, **fields: object) -> None:
        en, zh = _ERRORS[key]
        super().__init__(en.format(**fields))
        self.key = key
        self.zh = zh.format(**fields)

    def localized(self, lang: str) -> str:
        """The message in ``lang`` (``zh`` or ``en``)."""
        return self.zh if lang == "zh" else self.message


@dataclass(frozen=True)
class DiceTerm:
    """One parsed term: ``count`` dice of ``sides`` sides, or a constant (count 0)."""

    sign: int
    count: int = 0
    sides: int = 0
    value: int = 0

    @property
    def is_dice(self) -> bool:
        return self.count > 0

    def text(self) -> str:
        return f"{self.count}d{self.sides}" if self.is_dice else str(self.value)


@dataclass(frozen=True)
class TermRoll:
    """The faces one dice term showed; ``explosions`` are the extra rolls of exploding dice."""

    sign: int
    count: int
    sides: int
    rolls: tuple[int, ...]
    explosions: tuple[int, ...] = ()

    @property
    def subtotal(self) -> int:
        return self.sign * (sum(self.rolls) + sum(self.explosions))

    def to_dict(self) -> dict[str, Any]:
        return {
            "sign": self.sign,
            "count": self.count,
            "sides": self.sides,
            "rolls": list(self.rolls),
            "explosions": list(self.explosions),
        }


@dataclass(frozen=True)
class DiceRoll:
    """A finished roll: the kept set of dice, the total, and the verdict against the DC."""

    expr: str
    mode: str
    dc: int | None
    sets: tuple[tuple[TermRoll, ...], ...]
    chosen: int
    modifier: int
    has_modifier: bool
    total: int
    success: bool | None
    critical: str | None  # "success" | "failure" | None

    @property
    def terms(self) -> tuple[TermRoll, ...]:
        return self.sets[self.chosen]

    @property
    def rolls(self) -> list[int]:
        """The kept natural faces, in order (explosions not included)."""
        return [face for term in self.terms for face in term.rolls]

    @property
    def explosions(self) -> list[int]:
        return [face for term in self.terms for face in term.explosions]

    def verdict(self, lang: str = "zh") -> str:
        """大成功 / 大失败 / 成功 / 失败 / 无DC (or the English words)."""
        words = _VERDICTS["zh" if lang == "zh" else "en"]
        if self.critical is not None:
            return words[0 if self.critical == "success" else 1]
        return words[4 if self.success is None else (2 if self.success else 3)]

    def line(self, lang: str = "zh") -> str:
        """The ``<tool_results>`` line, e.g. ``检定结果：1d20+5 = [15]+5 = 20 (DC 15) → 成功``."""
        words = _WORDS["zh" if lang == "zh" else "en"]
        detail = self._detail(words)
        modifier = f"{self.modifier:+d}" if self.has_modifier else ""
        dc = f" (DC {self.dc})" if self.dc is not None else ""
        verdict = self.verdict(lang)
        return f"{words['prefix']}{self.expr} = {detail}{modifier} = {self.total}{dc} → {verdict}"

    def _detail(self, words: dict[str, str]) -> str:
        if len(self.sets) == 2:
            keep = words["higher"] if self.mode == "advantage" else words["lower"]
            first, second = (_set_text(terms) for terms in self.sets)
            return f"[{first}{words['and']}{second}{keep}]"
        parts = []
        for index, term in enumerate(self.terms):
            sign = "-" if term.sign < 0 else ("+" if index else "")
            faces = ", ".join(map(str, term.rolls))
            if term.explosions:
                faces += words["exploded"] + ", ".join(map(str, term.explosions))
            parts.append(f"{sign}[{faces}]")
        return "".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form for ``--json``, traces, turn records and tool data."""
        data: dict[str, Any] = {
            "expr": self.expr,
            "mode": self.mode,
            "dc": self.dc,
            "rolls": self.rolls,
            "explosions": self.explosions,
            "modifier": self.modifier,
            "total": self.total,
            "success": self.success,
            "critical": self.critical,
            "terms": [term.to_dict() for term in self.terms],
        }
        if len(self.sets) == 2:
            data["all_rolls"] = [[f for t in terms for f in t.rolls] for terms in self.sets]
            data["chosen_index"] = self.chosen
        return data


def roll(expr: object, mode: object, dc: object, rng: random.Random) -> DiceRoll:
    """Roll ``expr`` in ``mode`` against an optional ``dc`` with the session RNG."""
    terms = parse_dice(expr)
    mode_name = normalize_mode(mode)
    target = parse_dc(dc)
    dice = [term for term in terms if term.is_dice]
    set_count = 2 if mode_name in ("advantage", "disadvantage") else 1
    sets = tuple(_roll_set(dice, mode_name, rng) for _ in range(set_count))
    chosen = _choose(sets, mode_name)
    modifier = sum(term.sign * term.value for term in terms if not term.is_dice)
    total = sum(term.subtotal for term in sets[chosen]) + modifier
    critical = _critical(sets[chosen])
    success = (critical == "success") if critical else (None if target is None else total >= target)
    return DiceRoll(
        expr=_canonical(terms),
        mode=mode_name,
        dc=target,
        sets=sets,
        chosen=chosen,
        modifier=modifier,
        has_modifier=any(not term.is_dice for term in terms),
        total=total,
        success=success,
        critical=critical,
    )


def parse_dice(expr: object) -> list[DiceTerm]:
    """The terms of a dice expression; DiceError names what is wrong."""
    text = re.sub(r"\s*([+-])\s*", r"\1", str(expr if expr is not None else "").strip()).lower()
    if not text:
        raise DiceError("empty")
    if re.search(r"\s", text):  # spaces only around + and -: "1d20 5" is not "1d205"
        raise DiceError("syntax", expr=re.sub(r"\s+", " ", text))
    if len(text) > MAX_EXPR_CHARS:
        raise DiceError("too_long", n=len(text), limit=MAX_EXPR_CHARS)
    terms: list[DiceTerm] = []
    position = 0
    while position < len(text):
        match = _TERM.match(text, position)
        if match is None or (terms and not match.group(1)):
            raise DiceError("syntax", expr=text)
        terms.append(_term(match))
        position = match.end()
    _check_terms(terms, text)
    return terms


def normalize_mode(mode: object) -> str:
    """normal / advantage / disadvantage / exploding (a few aliases, such as 优势, accepted)."""
    name = str(mode if mode is not None else "").strip().lower()
    name = _MODE_ALIASES.get(name, name)
    if name not in MODES:
        raise DiceError("mode", mode=mode)
    return name


def parse_dc(value: object) -> int | None:
    """A DC as a whole number; None or empty text means no DC."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    number: float
    if isinstance(value, bool):
        raise DiceError("dc", dc=value)
    if isinstance(value, (int, float)):
        number = value
    else:
        try:
            number = float(str(value).strip())
        except ValueError:
            raise DiceError("dc", dc=value) from None
    if number != number or abs(number) > MAX_DC or number != int(number):
        raise DiceError("dc", dc=value)
    return int(number)


def _term(match: re.Match[str]) -> DiceTerm:
    sign = -1 if match.group(1) == "-" else 1
    if match.group(4) is not None:
        value = int(match.group(4))
        if value > MAX_CONSTANT:
            raise DiceError("constant", term=match.group(0), limit=MAX_CONSTANT)
        return DiceTerm(sign=sign, value=value)
    count = int(match.group(2)) if match.group(2) else 1
    sides = int(match.group(3))
    if count < 1:
        raise DiceError("zero_count", term=match.group(0))
    if not 1 <= sides <= MAX_SIDES:
        raise DiceError("sides", term=match.group(0), limit=MAX_SIDES)
    return DiceTerm(sign=sign, count=count, sides=sides)


def _check_terms(terms: list[DiceTerm], text: str) -> None:
    if len(terms) > MAX_TERMS:
        raise DiceError("too_many_terms", expr=text, n=len(terms), limit=MAX_TERMS)
    dice = sum(term.count for term in terms)
    if dice == 0:
        raise DiceError("no_dice", expr=text)
    if dice > MAX_DICE:
        raise DiceError("too_many_dice", expr=text, n=dice, limit=MAX_DICE)


def _roll_set(dice: list[DiceTerm], mode: str, rng: random.Random) -> tuple[TermRoll, ...]:
    rolled = []
    for term in dice:
        faces = [rng.randint(1, term.sides) for _ in range(term.count)]
        extra: list[int] = []
        if mode == "exploding":
            for face in faces:
                extra.extend(_explode(face, term.sides, rng))
        rolled.append(TermRoll(term.sign, term.count, term.sides, tuple(faces), tuple(extra)))
    return tuple(rolled)


def _explode(face: int, sides: int, rng: random.Random) -> list[int]:
    extra: list[int] = []
    last = face
    while last == sides and len(extra) < MAX_EXPLOSIONS:
        last = rng.randint(1, sides)
        extra.append(last)
    return extra


def _choose(sets: tuple[tuple[TermRoll, ...], ...], mode: str) -> int:
    if len(sets) < 2:
        return 0
    first, second = (sum(term.subtotal for term in terms) for terms in sets)
    if mode == "advantage":
        return 1 if second > first else 0
    return 1 if second < first else 0


def _critical(terms: tuple[TermRoll, ...]) -> str | None:
    d20s = [term for term in terms if term.sides == 20]
    if len(d20s) != 1 or d20s[0].count != 1 or d20s[0].sign < 0:
        return None
    natural = d20s[0].rolls[0]
    return "success" if natural == 20 else ("failure" if natural == 1 else None)


def _canonical(terms: list[DiceTerm]) -> str:
    out = []
    for index, term in enumerate(terms):
        sign = "-" if term.sign < 0 else ("+" if index else "")
        out.append(sign + term.text())
    return "".join(out)


def _set_text(terms: tuple[TermRoll, ...]) -> str:
    out = []
    for index, term in enumerate(terms):
        if index:
            sign = " - " if term.sign < 0 else " + "
        else:
            sign = "-" if term.sign < 0 else ""
        out.append(sign + ", ".join(map(str, term.rolls)))
    text = "".join(out)
    return f"({text})" if len(terms) > 1 else text
