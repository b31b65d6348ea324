"""The dice grammar: text to a small syntax tree, with errors that point at the character.

Grammar (case-insensitive; spaces allowed between tokens, never inside a number or a die)::

    expr    := term (("+" | "-") term)*
    term    := unary (("*" | "/") unary)*          "/" divides and rounds down
    unary   := ("-" | "+") unary | atom
    atom    := "(" expr ")" | dice | number
    dice    := [count] "d" (sides | "%" | "F") modifier* [target]
    modifier:= ("kh" | "kl" | "dh" | "dl" | "k") [n]   keep / drop the n highest or lowest
             | "!" [compare]                        explode on the maximum (or on compare)
             | "ro" compare | "r" compare            reroll once / reroll while it matches
    target  := (">=" | "<=" | ">" | "<" | "=") n      count the dice that meet it (a pool)
    compare := [">=" | "<=" | ">" | "<" | "="] n    a bare n means "= n"

``d%`` is ``d100`` and ``dF`` a Fudge die (-1, 0, +1). Full-width ``＋－×（）`` are read as
their ASCII forms, because Chinese input methods produce them. Every limit is checked while
parsing, before any die is rolled, so a hostile expression costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from narrative_cli.errors import ToolError

MAX_DICE = 100  # dice an expression asks for (before explosions and rerolls)
MAX_SIDES = 1000
MAX_TERMS = 20  # numbers and dice in one expression
MAX_CONSTANT = 10_000
MAX_EXPR_CHARS = 100
MAX_DEPTH = 8  # nested parentheses
FUDGE = -1  # the sides value of a Fudge die

_FULL_WIDTH = str.maketrans({"＋": "+", "－": "-", "×": "*", "＊": "*", "（": "(", "）": ")"})
_COMPARES = (">=", "<=", ">", "<", "=")

_ERRORS = {
    "empty": ("missing dice expression", "缺少骰子表达式"),
    "too_long": (
        "dice expression is too long ({n} characters, at most {limit})",
        "骰子表达式过长（{n} 个字符，最多 {limit} 个）",
    ),
    "syntax": (
        "invalid dice expression '{expr}': {what} at character {col}",
        "无法识别的骰子表达式「{expr}」：第 {col} 个字符处{what_zh}",
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
    "always": (
        "'{term}': every face matches '{rule}', so the dice would never stop",
        "「{term}」：每一面都满足「{rule}」，骰子会无限重掷",
    ),
    "depth": (
        "dice expression '{expr}' nests parentheses more than {limit} deep",
        "骰子表达式「{expr}」的括号嵌套超过 {limit} 层",
    ),
    "divide": ("'{expr}': division by zero", "「{expr}」：除数为零"),
}

# What the parser expected, in both languages: (en, zh).
_WHAT = {
    "operand": ("expected a number, a die or '('", "应为数字、骰子或左括号"),
    "operator": ("expected + - * / or the end", "应为 + - * / 或表达式结束"),
    "sides": ("expected the sides after 'd' (a number, % or F)", "「d」后应为面数（数字、% 或 F）"),
    "close": ("expected ')'", "缺少右括号"),
    "number": ("expected a number", "应为数字"),
    "fudge": ("Fudge dice take no keep, explode or reroll", "命运骰（dF）不能保留、爆炸或重掷"),
}


class DiceError(ToolError):
    """A dice expression, mode or parameter the engine cannot use.

    ``localized(lang)`` gives the Chinese text; ``column`` (1-based, or None) is where the
    problem is, and ``caret()`` draws the expression with a ``^`` under that character.
    """

    def __init__(self, key: str, *, column: int | None = None, **fields: object) -> None:
        en, zh = _ERRORS[key]
        super().__init__(en.format(**fields))
        self.key = key
        self.zh = zh.format(**fields)
        self.column = column
        self.expr = str(fields.get("expr", ""))

    def localized(self, lang: str) -> str:
        """The message in ``lang`` (``zh`` or ``en``)."""
        return self.zh if lang == "zh" else self.message

    def caret(self) -> str:
        """Two lines: the expression and a caret under the bad character ("" without one)."""
        if self.column is None or not self.expr:
            return ""
        return f"  {self.expr}\n  {' ' * (self.column - 1)}^"


def register_errors(table: dict[str, tuple[str, str]]) -> None:
    """Let the check systems add their own error texts to the one table."""
    _ERRORS.update(table)


@dataclass(frozen=True)
class Compare:
    """``op`` (one of >= <= > < =) and ``value``: which faces a rule applies to."""

    op: str
    value: int

    def matches(self, face: int) -> bool:
        if self.op == ">=":
            return face >= self.value
        if self.op == "<=":
            return face <= self.value
        if self.op == ">":
            return face > self.value
        if self.op == "<":
            return face < self.value
        return face == self.value

    def text(self) -> str:
        return f"{'' if self.op == '=' else self.op}{self.value}"


@dataclass(frozen=True)
class Modifier:
    """One dice modifier: ``kind`` is kh kl dh dl (``n``), ! (``compare`` or None), r or ro."""

    kind: str
    n: int = 1
    compare: Compare | None = None

    def text(self) -> str:
        if self.kind in ("kh", "kl", "dh", "dl"):
            return f"{self.kind}{self.n}"
        return self.kind + (self.compare.text() if self.compare is not None else "")


@dataclass(frozen=True)
class Num:
    value: int


@dataclass(frozen=True)
class Dice:
    """``count`` dice of ``sides`` (FUDGE for dF), modifiers in order, an optional pool target."""

    count: int
    sides: int
    modifiers: tuple[Modifier, ...] = ()
    target: Compare | None = None
    percent: bool = False

    def text(self) -> str:
        sides = "F" if self.sides == FUDGE else str(self.sides)
        mods = "".join(m.text() for m in self.modifiers)
        target = f"{self.target.op}{self.target.value}" if self.target else ""
        return f"{self.count}d{sides}{mods}{target}"


@dataclass(frozen=True)
class BinOp:
    op: str  # + - * /
    left: Node
    right: Node


@dataclass(frozen=True)
class Neg:
    operand: Node


@dataclass(frozen=True)
class Group:
    inner: Node


Node = Num | Dice | BinOp | Neg | Group


def normalize_text(expr: object) -> str:
    """The expression as the parser reads it: stripped, lower case, ASCII operators."""
    return str(expr if expr is not None else "").translate(_FULL_WIDTH).strip().lower()


def parse(expr: object) -> Node:
    """The syntax tree of ``expr``; DiceError names what is wrong and where.

    Trees are immutable, so the last few hundred parsed expressions are kept: a session
    rolls the same handful of checks again and again."""
    return _parse_text(normalize_text(expr))


@lru_cache(maxsize=512)
def _parse_text(text: str) -> Node:
    if not text:
        raise DiceError("empty")
    if len(text) > MAX_EXPR_CHARS:
        raise DiceError("too_long", n=len(text), limit=MAX_EXPR_CHARS)
    parser = _Parser(text)
    tree = parser.expr(0)
    parser.skip()
    if parser.pos < len(text):
        parser.fail("operator")
    _check_tree(tree, text, parser.atoms)
    return tree


def render(node: Node) -> str:
    """The canonical text of a tree (``D20 - 1d4`` → ``1d20-1d4``)."""
    if isinstance(node, Num):
        return str(node.value)
    if isinstance(node, Dice):
        return node.text()
    if isinstance(node, Group):
        return f"({render(node.inner)})"
    if isinstance(node, Neg):
        return f"-{render(node.operand)}"
    return f"{render(node.left)}{node.op}{render(node.right)}"


def dice_nodes(node: Node) -> list[Dice]:
    """The dice of a tree, left to right (the order they are rolled in)."""
    if isinstance(node, Dice):
        return [node]
    if isinstance(node, (Group, Neg)):
        return dice_nodes(node.inner if isinstance(node, Group) else node.operand)
    if isinstance(node, BinOp):
        return dice_nodes(node.left) + dice_nodes(node.right)
    return []


class _Parser:
    """Recursive descent over ``text``; ``atoms`` counts numbers and dice for the term limit."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.atoms = 0

    def fail(self, what: str) -> None:
        en, zh = _WHAT[what]
        column = min(self.pos, len(self.text) - 1) + 1
        if self.pos >= len(self.text):
            en, zh = f"{en} (the expression ended)", f"{zh}（表达式已结束）"
            column = len(self.text) + 1
        raise DiceError("syntax", column=column, expr=self.text, what=en, what_zh=zh, col=column)

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expr(self, depth: int) -> Node:
        node = self.term(depth)
        while True:
            self.skip()
            op = self.peek()
            if op not in ("+", "-"):
                return node
            self.pos += 1
            node = BinOp(op, node, self.term(depth))

    def term(self, depth: int) -> Node:
        node = self.unary(depth)
        while True:
            self.skip()
            op = self.peek()
            if op not in ("*", "/"):
                return node
            self.pos += 1
            node = BinOp(op, node, self.unary(depth))

    def unary(self, depth: int) -> Node:
        self.skip()
        if self.peek() == "-":
            self.pos += 1
            return Neg(self.unary(depth))
        if self.peek() == "+":
            self.pos += 1
            return self.unary(depth)
        return self.atom(depth)

    def atom(self, depth: int) -> Node:
        self.skip()
        char = self.peek()
        if char == "(":
            if depth >= MAX_DEPTH:
                raise DiceError("depth", expr=self.text, limit=MAX_DEPTH)
            self.pos += 1
            inner = self.expr(depth + 1)
            self.skip()
            if self.peek() != ")":
                self.fail("close")
            self.pos += 1
            return Group(inner)
        if not (char.isdigit() or char == "d"):
            self.fail("operand")
        self.atoms += 1
        start = self.pos
        count = self.number() if char.isdigit() else None
        if self.peek() != "d":
            return Num(self.constant(count, start))
        return self.dice(count, start)

    def number(self) -> int:
        start = self.pos
        while self.peek().isdigit():
            self.pos += 1
        if start == self.pos:
            self.fail("number")
        digits = self.text[start : self.pos]
        return int(digits) if len(digits) <= 12 else 10**12

    def constant(self, value: int | None, start: int) -> int:
        assert value is not None
        if value > MAX_CONSTANT:
            raise DiceError("constant", term=self.text[start : self.pos], limit=MAX_CONSTANT)
        return value

    def dice(self, count: int | None, start: int) -> Dice:
        self.pos += 1  # the "d"
        sides, percent = self.sides()
        term = self.text[start : self.pos]
        number = 1 if count is None else count
        if number < 1:
            raise DiceError("zero_count", term=term)
        if number > MAX_DICE:
            raise DiceError("too_many_dice", expr=self.text, n=number, limit=MAX_DICE)
        if sides != FUDGE and not 1 <= sides <= MAX_SIDES:
            raise DiceError("sides", term=term, limit=MAX_SIDES)
        modifiers = self.modifiers(sides)
        target = self.compare(required=True) if self.peek() and self.peek() in "<>=" else None
        dice = Dice(number, sides, tuple(modifiers), target, percent)
        _check_rules(dice, self.text[start : self.pos])
        return dice

    def sides(self) -> tuple[int, bool]:
        char = self.peek()
        if char == "%":
            self.pos += 1
            return 100, True
        if char == "f":
            self.pos += 1
            return FUDGE, False
        if not char.isdigit():
            self.fail("sides")
        return self.number(), False

    def modifiers(self, sides: int) -> list[Modifier]:
        found: list[Modifier] = []
        while True:
            rest = self.text[self.pos :]
            kind = next((k for k in ("kh", "kl", "dh", "dl", "k") if rest.startswith(k)), "")
            if not kind:
                kind = next((k for k in ("ro", "r", "!") if rest.startswith(k)), "")
            if not kind:
                return found
            if sides == FUDGE:
                self.fail("fudge")
            self.pos += len(kind)
            if kind in ("kh", "kl", "dh", "dl", "k"):
                n = self.number() if self.peek().isdigit() else 1
                found.append(Modifier("kh" if kind == "k" else kind, n=n))
            elif kind == "!":
                has_rule = bool(self.peek()) and self.peek() in "<>="
                found.append(Modifier("!", compare=self.compare() if has_rule else None))
            else:
                found.append(Modifier(kind, compare=self.compare()))

    def compare(self, required: bool = False) -> Compare:
        op = next((o for o in _COMPARES if self.text.startswith(o, self.pos)), "")
        if required and not op:
            self.fail("number")
        self.pos += len(op)
        return Compare(op or "=", self.number())


def _check_rules(dice: Dice, term: str) -> None:
    """Refuse rules no roll could finish: a reroll or explosion that every face triggers."""
    faces = range(1, dice.sides + 1)
    for mod in dice.modifiers:
        rule = mod.compare
        if mod.kind == "r" and rule is not None and all(rule.matches(f) for f in faces):
            raise DiceError("always", term=term, rule=mod.text())
        if mod.kind == "!" and rule is not None and dice.sides > 1:
            if all(rule.matches(f) for f in faces):
                raise DiceError("always", term=term, rule=mod.text())


def _check_tree(tree: Node, text: str, atoms: int) -> None:
    if atoms > MAX_TERMS:
        raise DiceError("too_many_terms", expr=text, n=atoms, limit=MAX_TERMS)
    dice = dice_nodes(tree)
    if not dice:
        raise DiceError("no_dice", expr=text)
    total = sum(d.count for d in dice)
    if total > MAX_DICE:
        raise DiceError("too_many_dice", expr=text, n=total, limit=MAX_DICE)
