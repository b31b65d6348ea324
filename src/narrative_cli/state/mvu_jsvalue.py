"""JavaScript literals and simple arithmetic, as MagVarUpdate reads command values.

MVU reads a command's value with ``JSON.parse``, then (for ``{…}``/``[…]``) by evaluating it
as a JavaScript literal, then with mathjs, then as YAML. No JavaScript or mathjs runs here:

- ``parse_js_literal`` reads JSON5-style literals (single or backtick quotes, bare keys,
  trailing commas, comments, hex numbers, ``undefined``), which is what cards write inside
  ``_.set(...)``; anything else (a call, a variable) fails as it would not be a literal.
- ``evaluate_math`` evaluates what mathjs gives a number for in the commands real cards write:
  numbers, ``+ - * / ^ %`` (mod), parentheses, unary signs, ``Math.x``/``math.x``/bare
  functions (sqrt, abs, round, floor, ceil, min, max, pow, exp, log, log10, sign, trunc) and
  the constants pi, e, tau, phi. Anything else raises ``MathError`` and the caller goes on to
  YAML, as MVU does when mathjs throws or gives a non-number.

``UNDEFINED`` stands for JavaScript's ``undefined`` (dropped from objects on save).
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["UNDEFINED", "JsSyntaxError", "MathError", "evaluate_math", "parse_js_literal"]


class _Undefined:
    def __repr__(self) -> str:
        return "undefined"


UNDEFINED: Any = _Undefined()


class JsSyntaxError(ValueError):
    """The text is not a JavaScript literal."""


class MathError(ValueError):
    """mathjs would not give a number for this text."""


_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


class _Literal:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> JsSyntaxError:
        return JsSyntaxError(f"{what} at character {self.pos + 1}")

    def skip(self) -> None:
        text = self.text
        while self.pos < len(text):
            if text[self.pos].isspace():
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.fail("unclosed comment")
                self.pos = end + 2
            else:
                return

    def peek(self) -> str:
        self.skip()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def value(self) -> Any:
        char = self.peek()
        if char == "{":
            return self.obj()
        if char == "[":
            return self.arr()
        if char in "\"'`":
            return self.string()
        if char and (char in "+-." or char.isdigit()):
            return self.number()
        word = _IDENT.match(self.text, self.pos)
        if word is None:
            raise self.fail("unexpected character" if char else "unexpected end")
        self.pos = word.end()
        constants = {"true": True, "false": False, "null": None, "undefined": UNDEFINED,
                     "Infinity": math.inf, "NaN": math.nan}  # fmt: skip
        if word.group(0) not in constants:
            raise self.fail(f"{word.group(0)!r} is not a literal")
        return constants[word.group(0)]

    def number(self) -> float | int:
        sign = 1
        while self.text[self.pos] in "+-":
            sign = -sign if self.text[self.pos] == "-" else sign
            self.pos += 1
            self.skip()
        if self.text.startswith("Infinity", self.pos):
            self.pos += len("Infinity")
            return sign * math.inf
        match = _NUMBER.match(self.text, self.pos)
        if match is None:
            raise self.fail("bad number")
        self.pos = match.end()
        raw = match.group(0)
        if raw[:2] in ("0x", "0X"):
            return sign * int(raw, 16)
        number = float(raw)
        if re.fullmatch(r"\d+", raw) and abs(number) < 2**53:
            return sign * int(raw)
        return sign * number

    def string(self) -> str:
        quote = self.text[self.pos]
        self.pos += 1
        out: list[str] = []
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char == quote:
                self.pos += 1
                return "".join(out)
            if char == "\\":
                out.append(self.escape())
                continue
            if char == "\n" and quote != "`":
                raise self.fail("line break in a string")
            out.append(char)
            self.pos += 1
        raise self.fail("unclosed string")

    def escape(self) -> str:
        nxt = self.text[self.pos + 1 : self.pos + 2]
        self.pos += 2
        if nxt == "u" and self.text[self.pos : self.pos + 1] == "{":
            end = self.text.index("}", self.pos)
            code, self.pos = self.text[self.pos + 1 : end], end + 1
            return chr(int(code, 16))
        if nxt in ("u", "x"):
            size = 4 if nxt == "u" else 2
            code = self.text[self.pos : self.pos + size]
            if not re.fullmatch("[0-9a-fA-F]{" + str(size) + "}", code):
                raise self.fail("bad escape")
            self.pos += size
            return chr(int(code, 16))
        if nxt == "\n":
            return ""
        return _ESCAPES.get(nxt, nxt)

    def key(self) -> str:
        char = self.peek()
        if char in "\"'`":
            return self.string()
        if char.isdigit() or char == ".":
            number = self.number()
            return _js_number_key(number)
        word = re.compile(r"[^\s:,{}\[\]'\"`/]+").match(self.text, self.pos)
        if word is None:
            raise self.fail("bad key")
        self.pos = word.end()
        return word.group(0)

    def obj(self) -> dict[str, Any]:
        self.pos += 1
        result: dict[str, Any] = {}
        while self.peek() != "}":
            key = self.key()
            if self.peek() != ":":
                raise self.fail("expected ':'")
            self.pos += 1
            value = self.value()
            if value is not UNDEFINED:
                result[key] = value
            else:
                result.pop(key, None)
            if self.peek() == ",":
                self.pos += 1
            elif self.peek() != "}":
                raise self.fail("expected ',' or '}'")
        self.pos += 1
        return result

    def arr(self) -> list[Any]:
        self.pos += 1
        result: list[Any] = []
        while self.peek() != "]":
            if not self.peek():
                raise self.fail("unclosed array")
            value = self.value()
            result.append(None if value is UNDEFINED else value)
            if self.peek() == ",":
                self.pos += 1
            elif self.peek() != "]":
                raise self.fail("expected ',' or ']'")
        self.pos += 1
        return result


def _js_number_key(number: float | int) -> str:
    if isinstance(number, float) and number.is_integer():
        return str(int(number))
    return str(number)


def parse_js_literal(text: str) -> Any:
    """The value of a JavaScript (JSON5-style) literal; ``JsSyntaxError`` when it is not one."""
    parser = _Literal(text)
    value = parser.value()
    if parser.peek() not in ("", ";"):
        raise parser.fail("unexpected text after the value")
    return value


# ---------------------------------------------------------------------------------- math

_FUNCTIONS: dict[str, Any] = {
    "sqrt": math.sqrt, "abs": abs, "round": lambda x, n=0: _round(x, n), "floor": math.floor,
    "ceil": math.ceil, "min": min, "max": max, "pow": math.pow, "exp": math.exp,
    "log": math.log, "log10": math.log10, "sign": lambda x: (x > 0) - (x < 0),
    "trunc": math.trunc,
}  # fmt: skip
_CONSTANTS = {"pi": math.pi, "PI": math.pi, "e": math.e, "E": math.e, "tau": math.tau,
              "phi": (1 + 5**0.5) / 2, "Infinity": math.inf, "NaN": math.nan}  # fmt: skip
_TOKEN = re.compile(
    r"\s*(?:(?P<num>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
    r"|(?P<name>[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)?)|(?P<op>[-+*/^%(),]))"
)


def _round(value: float, digits: float = 0) -> float:
    """mathjs round: half away from zero."""
    factor = 10 ** int(digits)
    scaled = abs(value) * factor
    return math.copysign(math.floor(scaled + 0.5) / factor, value)


class _Math:
    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            match = _TOKEN.match(text, pos)
            if match is None or match.end() == pos:
                raise MathError(f"cannot read {text[pos : pos + 10]!r}")
            kind = match.lastgroup or "op"
            self.tokens.append((kind, match.group(kind)))
            pos = match.end()
        self.index = 0

    def peek(self) -> str:
        return self.tokens[self.index][1] if self.index < len(self.tokens) else ""

    def take(self) -> tuple[str, str]:
        if self.index >= len(self.tokens):
            raise MathError("unexpected end")
        token = self.tokens[self.index]
        self.index += 1
        return token

    def expression(self) -> float:
        value = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()[1]
            right = self.term()
            value = value + right if op == "+" else value - right
        return value

    def term(self) -> float:
        value = self.unary()
        while self.peek() in ("*", "/", "%"):
            op = self.take()[1]
            right = self.unary()
            if op == "*":
                value = value * right
            elif right == 0:
                value = math.nan if op == "%" or value == 0 else math.copysign(math.inf, value)
            else:
                value = value / right if op == "/" else value - right * math.floor(value / right)
        return value

    def unary(self) -> float:
        if self.peek() in ("+", "-"):
            op = self.take()[1]
            value = self.unary()
            return -value if op == "-" else value
        return self.power()

    def power(self) -> float:
        base = self.atom()
        if self.peek() == "^":
            self.take()
            exponent = self.unary()
            return float(float(base) ** exponent)
        return base

    def atom(self) -> float:
        kind, text = self.take()
        if kind == "num":
            return int(text, 16) if text[:2] in ("0x", "0X") else float(text)
        if kind == "name":
            return self.name(text)
        if text == "(":
            value = self.expression()
            if self.take()[1] != ")":
                raise MathError("expected ')'")
            return value
        raise MathError(f"unexpected {text!r}")

    def name(self, text: str) -> float:
        short = text.split(".", 1)[1] if text.startswith(("Math.", "math.")) else text
        if "." in short:
            raise MathError(f"unknown name {text}")
        if self.peek() == "(":
            function = _FUNCTIONS.get(short)
            if function is None:
                raise MathError(f"unknown function {text}")
            self.take()
            args = [] if self.peek() == ")" else [self.expression()]
            while self.peek() == ",":
                self.take()
                args.append(self.expression())
            if self.take()[1] != ")":
                raise MathError("expected ')'")
            try:
                return float(function(*args))
            except (TypeError, ValueError, OverflowError) as error:
                raise MathError(str(error)) from None
        if short in _CONSTANTS:
            return _CONSTANTS[short]
        raise MathError(f"undefined symbol {text}")


def evaluate_math(text: str) -> float:
    """The number mathjs gives for ``text`` (see the module doc), or ``MathError``."""
    parser = _Math(text)
    if not parser.tokens:
        raise MathError("empty")
    try:
        value = parser.expression()
    except (OverflowError, ZeroDivisionError) as error:
        raise MathError(str(error)) from None
    if parser.index != len(parser.tokens):
        raise MathError(f"unexpected {parser.peek()!r}")
    if isinstance(value, complex):
        raise MathError("complex result")
    return float(value)
