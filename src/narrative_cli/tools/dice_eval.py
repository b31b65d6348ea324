"""Rolling a parsed dice tree with the session RNG, and the tree's result as text and JSON.

Order of draws (it is part of replay, so it is fixed): the dice nodes left to right; in each,
every base die first, then for each die in turn its rerolls and then its explosions. Keep and
drop run last, over every die still standing, exploded ones included (as Roll20 does).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any

from narrative_cli.tools.dice_notation import (
    FUDGE,
    BinOp,
    Dice,
    DiceError,
    Group,
    Modifier,
    Neg,
    Node,
    Num,
)

MAX_EXPLOSIONS = 10  # extra dice per die
MAX_REROLLS = 10  # rerolls per die for "r"

_WORDS = {
    "zh": {"exploded": "，爆炸: ", "dropped": "，舍弃: ", "rerolled": "，重掷掉: ",
           "hits": "成功数"},
    "en": {"exploded": ", exploded: ", "dropped": ", dropped: ", "rerolled": ", rerolled: ",
           "hits": "successes"},
}  # fmt: skip


@dataclass(frozen=True)
class Face:
    """One die as it landed: ``dropped`` by keep/drop, ``rerolled`` (replaced, not counted),
    ``exploded`` (an extra die from an explosion), ``hit`` (met a pool's target)."""

    value: int
    dropped: bool = False
    rerolled: bool = False
    exploded: bool = False
    hit: bool | None = None

    @property
    def counts(self) -> bool:
        return not (self.dropped or self.rerolled)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"value": self.value}
        for name in ("dropped", "rerolled", "exploded"):
            if getattr(self, name):
                data[name] = True
        if self.hit is not None:
            data["hit"] = self.hit
        return data


@dataclass(frozen=True)
class DiceResult:
    """A rolled dice node: every face, and its value (sum of counted faces, or successes)."""

    dice: Dice
    faces: tuple[Face, ...]
    value: int

    @property
    def sides(self) -> int:
        return self.dice.sides

    @property
    def rolls(self) -> tuple[int, ...]:
        """The natural faces still standing after rerolls (explosions not included)."""
        return tuple(f.value for f in self.faces if not f.exploded and not f.rerolled)

    @property
    def explosions(self) -> tuple[int, ...]:
        return tuple(f.value for f in self.faces if f.exploded)

    @property
    def successes(self) -> int | None:
        return self.value if self.dice.target is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "expr": self.dice.text(),
            "sides": "F" if self.dice.sides == FUDGE else self.dice.sides,
            "faces": [face.to_dict() for face in self.faces],
            "value": self.value,
            "successes": self.successes,
        }


@dataclass(frozen=True)
class Evaluated:
    """A node of the tree with its value; ``result`` is set on dice nodes."""

    node: Node
    value: int
    children: tuple[Evaluated, ...] = ()
    result: DiceResult | None = None

    def dice(self) -> list[DiceResult]:
        """The rolled dice nodes, left to right."""
        if self.result is not None:
            return [self.result]
        return [r for child in self.children for r in child.dice()]

    def text(self, lang: str) -> str:
        """The tree with each die's faces: ``([3, 4]+6)*5``."""
        node = self.node
        if self.result is not None:
            return faces_text(self.result, lang)
        if isinstance(node, Num):
            return str(node.value)
        if isinstance(node, Group):
            return f"({self.children[0].text(lang)})"
        if isinstance(node, Neg):
            return f"-{self.children[0].text(lang)}"
        assert isinstance(node, BinOp)
        return f"{self.children[0].text(lang)}{node.op}{self.children[1].text(lang)}"


def with_modifier(tree: Node, modifier: Modifier) -> Node:
    """Add ``modifier`` to every die that has no modifier of its kind (exploding mode)."""
    if isinstance(tree, Dice):
        kinds = {m.kind for m in tree.modifiers}
        if modifier.kind in kinds or tree.sides == FUDGE:
            return tree
        return replace(tree, modifiers=(*tree.modifiers, modifier))
    if isinstance(tree, Group):
        return Group(with_modifier(tree.inner, modifier))
    if isinstance(tree, Neg):
        return Neg(with_modifier(tree.operand, modifier))
    if isinstance(tree, BinOp):
        return BinOp(
            tree.op, with_modifier(tree.left, modifier), with_modifier(tree.right, modifier)
        )
    return tree


def doubled_dice(tree: Node) -> Node:
    """The same tree with twice the dice in every node (a critical hit's damage, 5e)."""
    if isinstance(tree, Dice):
        return replace(tree, count=tree.count * 2)
    if isinstance(tree, Group):
        return Group(doubled_dice(tree.inner))
    if isinstance(tree, Neg):
        return Neg(doubled_dice(tree.operand))
    if isinstance(tree, BinOp):
        return BinOp(tree.op, doubled_dice(tree.left), doubled_dice(tree.right))
    return tree


def evaluate(tree: Node, rng: random.Random) -> Evaluated:
    """Roll every die of ``tree`` and compute its value."""
    if isinstance(tree, Num):
        return Evaluated(tree, tree.value)
    if isinstance(tree, Dice):
        result = roll_node(tree, rng)
        return Evaluated(tree, result.value, result=result)
    if isinstance(tree, Group):
        inner = evaluate(tree.inner, rng)
        return Evaluated(tree, inner.value, (inner,))
    if isinstance(tree, Neg):
        inner = evaluate(tree.operand, rng)
        return Evaluated(tree, -inner.value, (inner,))
    left, right = evaluate(tree.left, rng), evaluate(tree.right, rng)
    return Evaluated(tree, _apply(tree.op, left.value, right.value), (left, right))


def _apply(op: str, left: int, right: int) -> int:
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if right == 0:
        raise DiceError("divide", expr=f"{left}/{right}")
    return left // right


def roll_node(dice: Dice, rng: random.Random) -> DiceResult:
    """Roll one dice node: base dice, rerolls, explosions, keep/drop, then the pool target."""
    base = [_one(dice.sides, rng) for _ in range(dice.count)]
    faces: list[Face] = []
    if not dice.modifiers:
        faces = [Face(value) for value in base]
    for value in base if dice.modifiers else ():
        faces.extend(_settle(value, dice, rng))
    faces = _keep_and_drop(faces, dice.modifiers)
    if dice.target is not None:
        target = dice.target
        faces = [replace(f, hit=target.matches(f.value)) if f.counts else f for f in faces]
        value = sum(1 for f in faces if f.counts and f.hit)
    else:
        value = sum(f.value for f in faces if f.counts)
    return DiceResult(dice, tuple(faces), value)


def _one(sides: int, rng: random.Random) -> int:
    return rng.randint(-1, 1) if sides == FUDGE else rng.randint(1, sides)  # one draw, fixed


def _settle(value: int, dice: Dice, rng: random.Random) -> list[Face]:
    """One base die with its rerolls (replaced faces kept, marked) and explosions."""
    faces: list[Face] = []
    for mod in dice.modifiers:
        if mod.kind not in ("r", "ro") or mod.compare is None:
            continue
        limit = 1 if mod.kind == "ro" else MAX_REROLLS
        tries = 0
        while mod.compare.matches(value) and tries < limit:
            faces.append(Face(value, rerolled=True))
            value = _one(dice.sides, rng)
            tries += 1
    faces.append(Face(value))
    explode = next((m for m in dice.modifiers if m.kind == "!"), None)
    if explode is None:
        return faces
    last, extra = value, 0
    while _explodes(last, dice.sides, explode) and extra < MAX_EXPLOSIONS:
        last = _one(dice.sides, rng)
        faces.append(Face(last, exploded=True))
        extra += 1
    return faces


def _explodes(face: int, sides: int, rule: Modifier) -> bool:
    return rule.compare.matches(face) if rule.compare is not None else face == sides


def _keep_and_drop(faces: list[Face], modifiers: tuple[Modifier, ...]) -> list[Face]:
    for mod in modifiers:
        if mod.kind not in ("kh", "kl", "dh", "dl"):
            continue
        live = [i for i, f in enumerate(faces) if f.counts]
        ordered = sorted(live, key=lambda i: faces[i].value)  # stable: earlier die first
        n = min(mod.n, len(live))
        if mod.kind == "kh":
            drop = ordered[: len(live) - n]
        elif mod.kind == "kl":
            drop = ordered[n:]
        elif mod.kind == "dh":
            drop = ordered[len(live) - n :]
        else:
            drop = ordered[:n]
        for index in drop:
            face = faces[index]
            faces[index] = Face(face.value, True, face.rerolled, face.exploded, face.hit)
    return faces


def faces_text(result: DiceResult, lang: str) -> str:
    """``[6, 4, 3，舍弃: 1]``: kept natural dice, then explosions, dropped and rerolled ones."""
    words = _WORDS["zh" if lang == "zh" else "en"]
    show = _face_symbol if result.dice.sides == FUDGE else str
    kept = [f for f in result.faces if f.counts and not f.exploded]
    text = ", ".join(show(f.value) + ("✓" if f.hit else "") for f in kept)
    groups = (
        ("exploded", [f for f in result.faces if f.exploded and f.counts]),
        ("dropped", [f for f in result.faces if f.dropped]),
        ("rerolled", [f for f in result.faces if f.rerolled]),
    )
    for key, faces in groups:
        if faces:
            text += words[key] + ", ".join(show(f.value) + ("✓" if f.hit else "") for f in faces)
    if result.dice.target is not None:
        text += f" → {words['hits']} {result.value}"
    return f"[{text}]"


def _face_symbol(value: int) -> str:
    return "+" if value > 0 else ("-" if value < 0 else "0")
