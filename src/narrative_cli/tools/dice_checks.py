"""Check systems: the planner names one and its parameters, the engine decides the outcome.

- ``none``: an expression against an optional DC; a natural 20/1 on a lone d20 is a critical.
- ``dnd5e`` (D&D 5th edition): ``kind`` check / save / attack roll 1d20 + ``modifier`` against
  ``dc`` (``ac`` for attacks) with advantage or disadvantage (2d20, keep the higher or lower).
  As the rules say, only an attack's natural 20 always hits (a critical) and its natural 1
  always misses; a check or save is decided by the total (the natural face is shown). ``kind``
  damage rolls ``expr``; ``critical`` doubles every die of it (2d6+3 → 4d6+3).
- ``coc7`` (Call of Cthulhu 7th edition): 1d100 rolled as a tens die and a units die (00 with
  0 is 100) under ``skill``: critical 01, extreme ≤ skill/5, hard ≤ skill/2, regular ≤ skill,
  fumble 96–100 when the skill is under 50 and 100 otherwise. ``difficulty`` (regular / hard /
  extreme) is the level needed to succeed. ``bonus`` and ``penalty`` dice (at most 2 each, and
  they cancel) roll extra tens dice and keep the best or worst result. ``pushed`` marks a
  pushed roll: its failure is a failed push, which the writer must make costly.
- ``pool``: count the dice that meet a target (``6d10>=8``, or ``expr`` 6d10 with ``target``
  8 meaning ≥ 8); success when the count reaches ``need`` (default 1).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from narrative_cli.tools.dice import (
    DiceRoll,
    natural_d20,
    normalize_mode,
    parse_dc,
    roll_tree,
)
from narrative_cli.tools.dice_eval import doubled_dice
from narrative_cli.tools.dice_notation import (
    BinOp,
    Compare,
    Dice,
    DiceError,
    Group,
    Modifier,
    Node,
    Num,
    dice_nodes,
    parse,
    register_errors,
)

SYSTEMS = ("none", "dnd5e", "coc7", "pool")
KINDS = ("check", "save", "attack", "damage")
DIFFICULTIES = ("regular", "hard", "extreme")
MAX_SKILL = 200
MAX_EXTRA_DICE = 2

_SYSTEM_ALIASES = {
    "": "none", "plain": "none", "5e": "dnd5e", "dnd": "dnd5e", "d&d": "dnd5e", "dnd5": "dnd5e",
    "coc": "coc7", "coc7e": "coc7", "克苏鲁": "coc7", "dicepool": "pool", "骰池": "pool",
}  # fmt: skip
_DIFFICULTY_ALIASES = {"": "regular", "常规": "regular", "普通": "regular", "困难": "hard",
                       "极难": "extreme", "normal": "regular"}  # fmt: skip
_KIND_ALIASES = {"": "check", "检定": "check", "豁免": "save", "攻击": "attack", "伤害": "damage",
                 "saving_throw": "save", "ability": "check"}  # fmt: skip
# The parameters each system reads; a known parameter given to a system that does not read it
# is reported (``ignored_params``), never dropped silently.
SYSTEM_PARAMS = {
    "none": {"expr", "mode", "dc"},
    "dnd5e": {"expr", "mode", "dc", "ac", "modifier", "kind", "critical"},
    "coc7": {"expr", "skill", "difficulty", "bonus", "penalty", "pushed"},
    "pool": {"expr", "target", "need"},
}
_RANK = {"failure": 0, "regular_success": 1, "hard_success": 2, "extreme_success": 3,
         "critical_success": 4, "fumble": -1}  # fmt: skip

register_errors(
    {
        "system": (
            "unknown check system '{value}' (use none, dnd5e, coc7 or pool)",
            "未知的检定规则「{value}」（可用：none、dnd5e、coc7、pool）",
        ),
        "choice": (
            "{name} must be one of {choices}, got '{value}'",
            "{name} 应为 {choices} 之一，收到「{value}」",
        ),
        "whole": (
            "{name} must be a whole number from {low} to {high}, got '{value}'",
            "{name} 必须是 {low} 到 {high} 之间的整数，收到「{value}」",
        ),
        "skill_missing": (
            "a coc7 check needs skill: the skill value to roll under (for example 60)",
            "coc7 检定需要 skill：要掷出的技能值（例如 60）",
        ),
        "no_d20": (
            "a dnd5e {kind} rolls one d20, but '{expr}' has none",
            "dnd5e 的{kind}应掷一个 d20，但「{expr}」里没有",
        ),
        "coc_expr": (
            "a coc7 check always rolls 1d100, not '{expr}'",
            "coc7 检定总是掷 1d100，而不是「{expr}」",
        ),
        "pool_target": (
            "a pool needs a target: write it like 6d10>=8 or give target",
            "骰池需要目标值：写成 6d10>=8，或给出 target",
        ),
    }
)


def check(params: Mapping[str, Any], rng: random.Random) -> DiceRoll:
    """One roll from the roll_dice parameters (see the module docstring); DiceError if bad."""
    system = _choice(params.get("system"), SYSTEMS, _SYSTEM_ALIASES, "system")
    label = str(params.get("label") or "").strip()[:40]
    hidden = _flag(params.get("hidden"))
    if system == "coc7":
        rolled = coc7(params, rng)
    elif system == "dnd5e":
        rolled = dnd5e(params, rng)
    elif system == "pool":
        rolled = pool(params, rng)
    else:
        tree = parse(params.get("expr"))
        mode, dc = normalize_mode(params.get("mode")), parse_dc(params.get("dc"))
        rolled = roll_tree(tree, mode, dc, rng)
    return replace(rolled, label=label, hidden=hidden)


def ignored_params(params: Mapping[str, Any]) -> list[str]:
    """Check parameters given a value that the named system does not read (e.g. ``skill``
    for dnd5e, or ``mode`` for coc7). Unknown system names are left to ``check``."""
    system = str(params.get("system") or "").strip().lower()
    system = _SYSTEM_ALIASES.get(system, system)
    if system not in SYSTEM_PARAMS:
        return []
    known = set().union(*SYSTEM_PARAMS.values())
    given = [k for k in params if k in known and params[k] not in (None, "", False, 0, "normal")]
    return [k for k in given if k not in SYSTEM_PARAMS[system]]


def dnd5e(params: Mapping[str, Any], rng: random.Random) -> DiceRoll:
    kind = _choice(params.get("kind"), KINDS, _KIND_ALIASES, "kind")
    mode = normalize_mode(params.get("mode"))
    if kind == "damage":
        tree = parse(params.get("expr"))
        doubled = _flag(params.get("critical"))
        if doubled:
            tree = doubled_dice(tree)
        rolled = roll_tree(tree, mode, None, rng, criticals=False)
        return replace(rolled, system="dnd5e", kind="damage", info={"critical": doubled})
    tree = parse(params.get("expr") or "1d20")
    modifier = _whole(params.get("modifier"), "modifier", -100, 100, default=0)
    if modifier:
        tree = BinOp("+" if modifier > 0 else "-", tree, Num(abs(modifier)))
    if not any(node.sides == 20 for node in dice_nodes(tree)):
        raise DiceError("no_d20", kind=kind, expr=params.get("expr") or "1d20")
    target = params.get("ac") if kind == "attack" and params.get("ac") is not None else None
    dc = parse_dc(target if target is not None else params.get("dc"))
    if mode in ("advantage", "disadvantage"):  # only the d20 is rolled twice (a bless d4 is not)
        tree = _twice(tree, "kh" if mode == "advantage" else "kl")
    rolled = roll_tree(tree, "exploding" if mode == "exploding" else "normal", dc, rng,
                       criticals=False)  # fmt: skip
    natural = natural_d20(rolled.sets[rolled.chosen])
    outcome = rolled.outcome
    if kind == "attack" and natural in (1, 20):
        outcome = "critical_success" if natural == 20 else "critical_failure"
    success = None if outcome == "none" else outcome in ("success", "critical_success")
    critical = outcome[len("critical_") :] if outcome.startswith("critical_") else None
    return replace(
        rolled,
        mode=mode,
        system="dnd5e",
        kind=kind,
        outcome=outcome,
        success=success,
        critical=critical,
        target_name="AC" if kind == "attack" else "DC",
        info={"natural": natural, "modifier": modifier},
    )


def _twice(tree: Node, keep: str) -> Node:
    """The tree with its first plain 1d20 rolled as 2d20kh1 (advantage) or 2d20kl1."""
    if isinstance(tree, Dice):
        if tree.sides == 20 and tree.count == 1 and not tree.modifiers and tree.target is None:
            return replace(tree, count=2, modifiers=(Modifier(keep, n=1),))
        return tree
    if isinstance(tree, BinOp):
        left = _twice(tree.left, keep)
        if left != tree.left:
            return BinOp(tree.op, left, tree.right)
        return BinOp(tree.op, tree.left, _twice(tree.right, keep))
    if isinstance(tree, Group):
        return Group(_twice(tree.inner, keep))
    return tree


def coc7(params: Mapping[str, Any], rng: random.Random) -> DiceRoll:
    if params.get("skill") in (None, ""):
        raise DiceError("skill_missing")
    skill = _whole(params.get("skill"), "skill", 0, MAX_SKILL)
    expr = str(params.get("expr") or "").replace(" ", "").lower()
    if expr not in ("", "1d100", "d100", "d%", "1d%"):
        raise DiceError("coc_expr", expr=params.get("expr"))
    difficulty = _choice(params.get("difficulty"), DIFFICULTIES, _DIFFICULTY_ALIASES, "difficulty")
    bonus = _whole(params.get("bonus"), "bonus", 0, MAX_EXTRA_DICE, default=0)
    penalty = _whole(params.get("penalty"), "penalty", 0, MAX_EXTRA_DICE, default=0)
    pushed = _flag(params.get("pushed"))
    value, units, tens = coc_d100(bonus - penalty, rng)
    level = coc_level(value, skill)
    success = _RANK[level] >= _RANK[f"{difficulty}_success"]
    outcome = level if success or level == "fumble" else "failure"
    info = {
        "skill": skill,
        "difficulty": difficulty,
        "level": level,
        "bonus": bonus,
        "penalty": penalty,
        "tens": tens,
        "units": units,
        "pushed": pushed,
    }
    return DiceRoll(
        expr="1d100",
        mode="normal",
        dc=skill,
        sets=(),
        chosen=0,
        total=value,
        success=success,
        critical="success"
        if level == "critical_success"
        else ("failure" if level == "fumble" else None),
        outcome=outcome,
        system="coc7",
        target_name="skill",
        detail=_coc_detail(tens, units, value),
        info=info,
    )


def coc_d100(net: int, rng: random.Random) -> tuple[int, int, list[int]]:
    """(result, units die, tens dice): one units die and 1 + |net| tens dice (0–9 each);
    a bonus (net > 0) keeps the lowest result, a penalty the highest; 00 with 0 is 100."""
    units = rng.randint(0, 9)
    tens = [rng.randint(0, 9) for _ in range(1 + abs(net))]
    values = [ten * 10 + units or 100 for ten in tens]
    if net > 0:
        return min(values), units, tens
    if net < 0:
        return max(values), units, tens
    return values[0], units, tens


def coc_level(value: int, skill: int) -> str:
    """The success level of a d100 result against a skill (Call of Cthulhu 7e)."""
    if value == 1:
        return "critical_success"
    if value == 100 or (skill < 50 and value >= 96):
        return "fumble"
    if value <= skill // 5:
        return "extreme_success"
    if value <= skill // 2:
        return "hard_success"
    if value <= skill:
        return "regular_success"
    return "failure"


def pool(params: Mapping[str, Any], rng: random.Random) -> DiceRoll:
    tree = parse(params.get("expr"))
    given = params.get("target")
    if given not in (None, ""):
        wanted = _whole(given, "target", 1, 1000)
        if isinstance(tree, Dice) and tree.target is None:
            tree = replace(tree, target=Compare(">=", wanted))
    if not any(node.target is not None for node in dice_nodes(tree)):
        raise DiceError("pool_target")
    need = _whole(params.get("need"), "need", 0, 1000, default=1)
    rolled = roll_tree(tree, "normal", need, rng, criticals=False)
    return replace(rolled, system="pool", target_name="need", info={"need": need})


def _coc_detail(tens: list[int], units: int, value: int) -> tuple[str, str]:
    if len(tens) == 1:
        return f"[{value}]", f"[{value}]"
    shown = ", ".join(f"{t}0" if t else "00" for t in tens)
    return f"[十位 {shown}；个位 {units}]", f"[tens {shown}; units {units}]"


def _choice(value: object, choices: tuple[str, ...], aliases: dict[str, str], name: str) -> str:
    text = str(value if value is not None else "").strip().lower()
    text = aliases.get(text, text)
    if text not in choices:
        if name == "system":
            raise DiceError("system", value=value)
        raise DiceError("choice", name=name, choices=", ".join(choices), value=value)
    return text


def _whole(value: object, name: str, low: int, high: int, *, default: int | None = None) -> int:
    if value in (None, "") and default is not None:
        return default
    number: object = value
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if isinstance(number, float) and number.is_integer():
        number = int(number)
    if isinstance(number, bool) or not isinstance(number, int) or not low <= number <= high:
        raise DiceError("whole", name=name, low=low, high=high, value=value)
    return number


def _flag(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "1", "是", "on")
    return bool(value)
