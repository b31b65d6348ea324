"""The dice engine behind ``roll_dice``, ``/roll`` and ``narrative roll``: one roll and its line.

The notation (``dice_notation``): ``NdM``, ``d%``, ``dF``, keep/drop ``kh kl dh dl``, exploding
``!``, rerolls ``r``/``ro``, pools ``6d10>=8``, ``+ - * /`` and parentheses. The check
systems (D&D 5e, Call of Cthulhu 7e, success pools) live in ``dice_checks`` and build the same
``DiceRoll``. Every random number comes from the ``random.Random`` passed in (the session RNG).

Our own grammar, not the ``d20`` package, chosen by measurement (``benchmarks/dice.py``,
figures in docs/benchmarks.md): on twelve expressions in the notation Chinese TRPG cards and
Roll20 use, checked against their exact distributions, ours is right on 12 and ``d20`` 1.1.2 on
6: it refuses ``4dF``, ``2d6!`` (its ``e6``), ``1d6r1`` (its ``rr1``) and ``4d6dl1`` (its
``pl1``), reads ``d%`` as a tens die (0-90) and ``6d10>=8`` as a yes/no comparison instead of
a pool. Speed does not decide it: on the expressions both accept the two are within noise of
each other (median 1.29× in our favour, rounds from 0.62× to 1.89× on a busy 2-core machine).
Our errors also say where the expression goes wrong, in Chinese and English, and we need no
``lark`` or ``cachetools``.

Modes apply to the whole expression: ``advantage`` and ``disadvantage`` roll every die twice
as two sets and keep the set with the higher or lower total (a tie keeps the first);
``exploding`` adds ``!`` to every die. Without a check system a natural 20 or 1 on the one
d20 of an expression is a critical success or failure that overrides the DC.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from narrative_cli.tools.dice_eval import (
    MAX_EXPLOSIONS,
    DiceResult,
    Evaluated,
    evaluate,
    with_modifier,
)
from narrative_cli.tools.dice_notation import (
    MAX_DICE,
    BinOp,
    DiceError,
    Group,
    Modifier,
    Neg,
    Node,
    Num,
    parse,
    register_errors,
    render,
)

__all__ = ["MAX_DICE", "MAX_EXPLOSIONS", "DiceError", "DiceRoll", "parse", "roll"]

MAX_DC = 1_000_000
MODES = ("normal", "advantage", "disadvantage", "exploding")

_MODE_ALIASES = {
    "": "normal", "adv": "advantage", "dis": "disadvantage", "disadv": "disadvantage",
    "explode": "exploding", "普通": "normal", "优势": "advantage", "劣势": "disadvantage",
    "爆炸": "exploding",
}  # fmt: skip
register_errors(
    {
        "mode": (
            "unknown dice mode '{mode}' (use normal, advantage, disadvantage or exploding)",
            "未知的掷骰模式「{mode}」（可用：normal、advantage、disadvantage、exploding）",
        ),
        "dc": ("dc must be a whole number, got '{dc}'", "dc 必须是整数，收到的是「{dc}」"),
    }
)

# Outcome levels: the engine's verdict names, shown in the turn's language.
OUTCOMES = {
    "critical_success": ("大成功", "critical success"),
    "extreme_success": ("极难成功", "extreme success"),
    "hard_success": ("困难成功", "hard success"),
    "regular_success": ("常规成功", "regular success"),
    "success": ("成功", "success"),
    "failure": ("失败", "failure"),
    "critical_failure": ("大失败", "critical failure"),
    "fumble": ("大失败", "fumble"),
    "none": ("无DC", "no DC"),
}
_WORDS = {
    "zh": {"prefix": "检定结果：", "hidden": "暗骰结果（玩家看不到）：", "and": " 和 ",
           "higher": "，取高值", "lower": "，取低值", "damage": "伤害掷骰：",
           "skill": "技能", "need": "需要成功数", "hard": "，困难", "extreme": "，极难",
           "pushed": "（孤注一掷）", "push_failed": "：孤注一掷失败，后果严重",
           "critical": "（重击，骰子加倍）", "sep": "，"},
    "en": {"prefix": "Check: ", "hidden": "Hidden roll (the player does not see it): ",
           "and": " and ", "higher": ", keep higher", "lower": ", keep lower",
           "damage": "Damage: ", "skill": "skill", "need": "need", "hard": ", hard",
           "extreme": ", extreme", "pushed": " (pushed)",
           "push_failed": ": the pushed roll failed, with a heavy cost",
           "critical": " (critical: dice doubled)", "sep": ", "},
}  # fmt: skip


@dataclass(frozen=True)
class DiceRoll:
    """A finished roll: the rolled set(s), the total, and the engine's outcome.

    ``outcome`` is a key of ``OUTCOMES``; ``success`` and ``critical`` say the same for code
    that only needs yes/no. ``detail`` is the system's own text between ``=`` signs when the
    expression tree does not say it all (Call of Cthulhu's tens and units dice).
    """

    expr: str
    mode: str
    dc: int | None
    sets: tuple[Evaluated, ...]
    chosen: int
    total: int
    success: bool | None
    critical: str | None  # "success" | "failure" | None
    outcome: str = "none"
    system: str = "none"
    label: str = ""
    hidden: bool = False
    target_name: str = "DC"  # DC, AC, skill or need
    kind: str = "check"  # check, save, attack or damage
    detail: tuple[str, str] = ("", "")  # (zh, en)
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def dice(self) -> list[DiceResult]:
        """The dice nodes of the kept set."""
        return self.sets[self.chosen].dice() if self.sets else []

    def set_dice(self, index: int) -> list[DiceResult]:
        return self.sets[index].dice()

    @property
    def rolls(self) -> list[int]:
        """The kept set's natural faces, in order (explosions and rerolled faces not included)."""
        return [face for result in self.dice for face in result.rolls]

    @property
    def explosions(self) -> list[int]:
        return [face for result in self.dice for face in result.explosions]

    def verdict(self, lang: str = "zh") -> str:
        """大成功 / 困难成功 / 成功 / 失败 / 无DC … (or the English words)."""
        zh, en = OUTCOMES.get(self.outcome, OUTCOMES["none"])
        text = zh if lang == "zh" else en
        if self.info.get("pushed") and self.success is False:
            text += _WORDS["zh" if lang == "zh" else "en"]["push_failed"]
        return text

    def line(self, lang: str = "zh") -> str:
        """The ``<tool_results>`` line, e.g. ``检定结果：1d20+5 = [15]+5 = 20 (DC 15) → 成功``."""
        words = _WORDS["zh" if lang == "zh" else "en"]
        prefix = words["damage"] if self.kind == "damage" else words["prefix"]
        if self.hidden:
            prefix = words["hidden"]
        label = f"{self.label} " if self.label else ""
        expr = self.expr + (words["pushed"] if self.info.get("pushed") else "")
        if self.kind == "damage" and self.info.get("critical"):
            expr += words["critical"]
        detail = self.detail[0 if lang == "zh" else 1] or self._detail(lang)
        body = f"{label}{expr} = {detail} = {self.total}{self.target_text(lang)}"
        if self.kind == "damage":
            return f"{prefix}{body}"
        return f"{prefix}{body} → {self.verdict(lang)}"

    def target_text(self, lang: str = "zh") -> str:
        """`` (DC 15)``, `` (AC 13)``, `` (技能 60，困难)``, `` (需要成功数 2)`` or ""."""
        if self.dc is None:
            return ""
        words = _WORDS["zh" if lang == "zh" else "en"]
        name = words.get(self.target_name, self.target_name)
        difficulty = str(self.info.get("difficulty") or "")
        extra = words[difficulty] if difficulty in ("hard", "extreme") else ""
        return f" ({name} {self.dc}{extra})"

    def _detail(self, lang: str) -> str:
        words = _WORDS["zh" if lang == "zh" else "en"]
        if len(self.sets) == 2:
            keep = words["higher"] if self.mode == "advantage" else words["lower"]
            simple = all(_plain_sum(s.node) for s in self.sets)
            first, second = (_set_text(s, lang, simple) for s in self.sets)
            constants = _constants(self.sets[0].node) if simple else None
            tail = f"{constants:+d}" if constants is not None else ""
            return f"[{first}{words['and']}{second}{keep}]{tail}"
        return self.sets[self.chosen].text(lang)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form for ``--json``, traces, turn records and the ledger."""
        constants = _constants(self.sets[0].node) if self.sets else None
        data: dict[str, Any] = {
            "expr": self.expr,
            "mode": self.mode,
            "dc": self.dc,
            "rolls": self.rolls,
            "explosions": self.explosions,
            "modifier": constants or 0,
            "total": self.total,
            "success": self.success,
            "critical": self.critical,
            "outcome": self.outcome,
            "system": self.system,
            "label": self.label,
            "hidden": self.hidden,
            "target_name": self.target_name,
            "kind": self.kind,
            "dice": [result.to_dict() for result in self.dice],
            "lines": {"zh": self.line("zh"), "en": self.line("en")},
        }
        if self.info:
            data["info"] = dict(self.info)
        if len(self.sets) == 2:
            data["all_rolls"] = [[f for r in s.dice() for f in r.rolls] for s in self.sets]
            data["chosen_index"] = self.chosen
        return data


def roll(expr: object, mode: object, dc: object, rng: random.Random) -> DiceRoll:
    """Roll ``expr`` in ``mode`` against an optional ``dc`` with the session RNG."""
    tree = parse(expr)
    mode_name = normalize_mode(mode)
    target = parse_dc(dc)
    return roll_tree(tree, mode_name, target, rng)


def roll_tree(
    tree: Node, mode: str, dc: int | None, rng: random.Random, *, criticals: bool = True
) -> DiceRoll:
    """Roll a parsed tree; with ``criticals`` a natural 20/1 on a lone d20 decides first."""
    written = render(tree)
    if mode == "exploding":
        tree = with_modifier(tree, Modifier("!"))
    set_count = 2 if mode in ("advantage", "disadvantage") else 1
    sets = tuple(evaluate(tree, rng) for _ in range(set_count))
    chosen = _choose(sets, mode)
    total = sets[chosen].value
    critical = natural_critical(sets[chosen]) if criticals else None
    if critical is not None:
        success: bool | None = critical == "success"
        outcome = f"critical_{critical}"
    elif dc is None:
        success, outcome = None, "none"
    else:
        success = total >= dc
        outcome = "success" if success else "failure"
    return DiceRoll(
        expr=written,
        mode=mode,
        dc=dc,
        sets=sets,
        chosen=chosen,
        total=total,
        success=success,
        critical=critical,
        outcome=outcome,
    )


def natural_d20(evaluated: Evaluated) -> int | None:
    """The natural face of the expression's one d20 when it is added, else None."""
    plain = list(_signed_dice(evaluated, 1))
    d20s = [(r, sign) for r, sign in plain if r.sides == 20]
    all_d20 = [r for r in evaluated.dice() if r.sides == 20]
    if len(d20s) != 1 or len(all_d20) != 1 or d20s[0][1] < 0:
        return None
    result = d20s[0][0]
    if result.dice.target is not None:
        return None
    kept = [f.value for f in result.faces if f.counts and not f.exploded]
    return kept[0] if len(kept) == 1 else None


def natural_critical(evaluated: Evaluated) -> str | None:
    natural = natural_d20(evaluated)
    return "success" if natural == 20 else ("failure" if natural == 1 else None)


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


def _signed_dice(evaluated: Evaluated, sign: int) -> list[tuple[DiceResult, int]]:
    """Dice reachable through + - and parentheses only, with their sign."""
    node = evaluated.node
    if evaluated.result is not None:
        return [(evaluated.result, sign)]
    if isinstance(node, Group):
        return _signed_dice(evaluated.children[0], sign)
    if isinstance(node, Neg):
        return _signed_dice(evaluated.children[0], -sign)
    if isinstance(node, BinOp) and node.op in "+-":
        right_sign = sign if node.op == "+" else -sign
        left = _signed_dice(evaluated.children[0], sign)
        return left + _signed_dice(evaluated.children[1], right_sign)
    return []


def _choose(sets: tuple[Evaluated, ...], mode: str) -> int:
    if len(sets) < 2:
        return 0
    first, second = sets[0].value, sets[1].value
    if mode == "advantage":
        return 1 if second > first else 0
    return 1 if second < first else 0


def _plain_sum(node: Node) -> bool:
    """Dice and numbers joined by + and - (the old grammar): drawn the old, shorter way."""
    if isinstance(node, BinOp):
        return node.op in "+-" and _plain_sum(node.left) and _plain_sum(node.right)
    return isinstance(node, Num) or (
        not isinstance(node, (Group, Neg)) and not node.modifiers and node.target is None
    )


def _constants(node: Node, sign: int = 1) -> int | None:
    """The sum of the numbers of a plain sum, or None when it has none."""
    if isinstance(node, Num):
        return sign * node.value
    if isinstance(node, BinOp) and node.op in "+-":
        left = _constants(node.left, sign)
        right = _constants(node.right, sign if node.op == "+" else -sign)
        if left is None:
            return right
        return left if right is None else left + right
    return None


def _set_text(evaluated: Evaluated, lang: str, simple: bool) -> str:
    if not simple:
        return f"{evaluated.text(lang)} = {evaluated.value}"
    signed = _signed_dice(evaluated, 1)
    out = []
    for index, (result, sign) in enumerate(signed):
        glue = (" - " if sign < 0 else " + ") if index else ("-" if sign < 0 else "")
        out.append(glue + ", ".join(map(str, result.rolls)))
    text = "".join(out)
    return f"({text})" if len(signed) > 1 else text
