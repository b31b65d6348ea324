"""SillyTavern macros (compat §6) for card, lore and preset text.

Follows the new engine's rules where the two engines differ: macros are evaluated left to
right, macros inside arguments first, names are case-insensitive, ``{{name::a::b}}`` arguments
are trimmed, and an unknown macro is left exactly as written (with its inner macros resolved).
Everything that could vary comes from the :class:`MacroEnv`: the clock for ``{{time}}``, the
session rng for ``{{random}}`` and ``{{roll}}``, a seed for the stable ``{{pick}}``, and a
variables dict for ``{{getvar}}``/``{{setvar}}``, so the same inputs give the same prompt.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from narrative_cli.context import variables
from narrative_cli.domain import Card
from narrative_cli.domain_chat import Persona

_MAX_DEPTH = 4  # card fields may hold macros; a field quoting itself stops here
_TRIM = "\x00trim\x00"
_OPEN_ESC, _CLOSE_ESC = "\x01", "\x02"
_LEGACY = re.compile(r"<(USER|BOT|CHAR|CHARIFNOTGROUP|GROUP)>", re.IGNORECASE)
_NAME = re.compile(r"([A-Za-z_][\w-]*)(.*)", re.DOTALL)
_TIME_UTC = re.compile(r"(time)_(UTC[+-]\d+)$", re.IGNORECASE)
_DICE = re.compile(r"(\d*)d(\d+)([+-]\d+)?", re.IGNORECASE)
_EN_MONTHS = "January February March April May June July August September October November December"
_EN_DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
_ZH_DAYS = "星期一 星期二 星期三 星期四 星期五 星期六 星期日".split()


@dataclass
class MacroEnv:
    """What macros can see. Card fields are raw; their own macros expand when inserted."""

    user: str = "User"
    char: str = ""
    description: str = ""
    personality: str = ""
    scenario: str = ""
    persona: str = ""
    mes_examples: str = ""
    char_prompt: str = ""
    char_instruction: str = ""
    char_depth_prompt: str = ""
    creator_notes: str = ""
    char_version: str = ""
    original: str = ""
    input: str = ""
    model: str = ""
    lang: str = "en"
    outlets: Mapping[str, Sequence[str]] = field(default_factory=dict)
    variables: dict[str, Any] = field(default_factory=dict)
    global_variables: dict[str, Any] = field(default_factory=dict)  # {{getglobalvar}}
    message_variables: Mapping[str, Any] = field(default_factory=dict)  # MVU's stat_data…
    last_user_message: str = ""
    last_char_message: str = ""
    rng: random.Random | None = None
    clock: datetime | None = None
    pick_seed: str = ""


def env_for(card: Card, persona: Persona | None = None, **overrides: Any) -> MacroEnv:
    """A MacroEnv for ``card`` and ``persona``; keyword arguments set any other field."""
    persona = persona or Persona()
    depth = card.depth_prompt
    env = MacroEnv(
        user=persona.name or "User",
        char=card.name,
        description=card.description,
        personality=card.personality,
        scenario=card.scenario,
        persona=persona.description,
        mes_examples=card.mes_example,
        char_prompt=card.system_prompt,
        char_instruction=card.post_history_instructions,
        char_depth_prompt=depth.prompt if depth else "",
        creator_notes=card.creator_notes,
        char_version=card.character_version,
    )
    for key, value in overrides.items():
        setattr(env, key, value)
    return env


@dataclass
class _Run:
    """One call of :func:`expand`: the source text (for ``{{pick}}``) and once-only flags."""

    env: MacroEnv
    source: str
    original_used: bool = False
    depth: int = 0


def expand(text: str, env: MacroEnv) -> str:
    """``text`` with every known macro replaced; unknown ones stay as written."""
    if not text or not any(mark in text for mark in ("{{", "<", "\\")):
        return text
    named = _names_only(text, env)
    if named is not None:
        return named
    return _expand_all(text, env)


# A text whose only macros are {{char}} and {{user}}, written plainly: no other "{{" or "}}"
# (a brace alone is fine), no backslash escape, none of the marks expand uses inside.
# (Possessive: each piece is read one way only, so a run of plain text is read at once.)
_NAMES_ONLY = re.compile(r"(?:[^{}\\\x00-\x02]++|\{(?!\{)|\}(?!\})|\{\{(?:char|user)\}\})*+")
_PLAIN_NAME = re.compile(r"[^{}\\\x00-\x02]*")


def _names_only(text: str, env: MacroEnv) -> str | None:
    """``text`` with its names put in, when {{char}} and {{user}} are its only macros (most of a
    card's fields): the same as the full expansion, without a pass per macro (a card's fields
    are expanded for every turn; #17, session seven). None: use the full expansion."""
    if not _NAMES_ONLY.fullmatch(text) or ("<" in text and _LEGACY.search(text)):
        return None
    if not (_PLAIN_NAME.fullmatch(env.char) and _PLAIN_NAME.fullmatch(env.user)):
        return None
    return text.replace("{{char}}", env.char).replace("{{user}}", env.user)


def _expand_all(text: str, env: MacroEnv) -> str:
    """``expand`` without the short cut: legacy names, escapes, every macro, trims."""
    text = text.replace("\\{", _OPEN_ESC).replace("\\}", _CLOSE_ESC)
    text = _LEGACY.sub(_legacy_name, text)
    result = _expand(text, _Run(env, text))
    result = re.sub(r"(?:\r?\n)*" + _TRIM + r"(?:\r?\n)*", "", result)
    return result.replace(_OPEN_ESC, "{").replace(_CLOSE_ESC, "}")


def _legacy_name(match: re.Match[str]) -> str:
    name = match.group(1).lower()
    return "{{user}}" if name == "user" else "{{char}}"


def _expand(text: str, run: _Run) -> str:
    out: list[str] = []
    i = 0
    while True:
        start = text.find("{{", i)
        end = _closing(text, start) if start >= 0 else -1
        if end < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:start])
        out.append(_macro(text[start + 2 : end], run, start))
        i = end + 2


def _closing(text: str, start: int) -> int:
    """Index of the ``}}`` that closes the ``{{`` at ``start``, or -1."""
    depth, i = 0, start
    while i < len(text) - 1:
        pair = text[i : i + 2]
        if pair == "{{":
            depth += 1
            i += 2
        elif pair == "}}":
            depth -= 1
            if depth == 0:
                return i
            i += 2
        else:
            i += 1
    return -1


def _macro(raw: str, run: _Run, offset: int) -> str:
    stripped = raw.strip()
    if stripped.startswith("//") or stripped.lower().startswith("comment "):
        return ""
    inner = _expand(raw, run)
    parsed = _parse(inner.strip())
    handler = _HANDLERS.get(parsed[0].lower()) if parsed else None
    value = handler(run, parsed[1], offset) if handler and parsed else None
    return "{{" + inner + "}}" if value is None else value


def _parse(inner: str) -> tuple[str, list[str]] | None:
    """``name::a::b`` → (name, [a, b]); ``name arg`` or ``name:arg`` → (name, [arg])."""
    inner = _TIME_UTC.sub(r"\1::\2", inner)
    match = _NAME.fullmatch(inner)
    if not match:
        return None
    name, rest = match.groups()
    if not rest:
        return name, []
    if rest.startswith("::"):
        return name, [a.strip() for a in rest[2:].split("::")]
    if rest[0] in ": \t\n":
        return name, [rest[1:].strip()]
    return None


Handler = Callable[[_Run, list[str], int], "str | None"]


def _field(getter: Callable[[MacroEnv], str]) -> Handler:
    """A card or persona field, trimmed, with its own macros expanded."""

    def handler(run: _Run, args: list[str], offset: int) -> str | None:
        value = getter(run.env).strip()
        if run.depth >= _MAX_DEPTH or "{{" not in value:
            return value
        run.depth += 1
        try:
            return _expand(value, run)
        finally:
            run.depth -= 1

    return handler


def _constant(value: str) -> Handler:
    return lambda run, args, offset: value


def _original(run: _Run, args: list[str], offset: int) -> str:
    if run.original_used:
        return ""
    run.original_used = True
    return run.env.original


def _repeat(text: str) -> Handler:
    """``{{newline}}``/``{{space}}``, or N of them with ``::N``."""
    return lambda run, args, offset: text * _count(args)


def _count(args: list[str]) -> int:
    try:
        return max(int(args[0]), 0) if args else 1
    except ValueError:
        return 1


def _now(env: MacroEnv, args: list[str]) -> datetime:
    now = env.clock or datetime.now()
    if args and args[0].upper().startswith("UTC"):
        try:
            hours = int(args[0][3:] or 0)
        except ValueError:
            return now
        aware = now if now.tzinfo else now.replace(tzinfo=timezone.utc)
        return aware.astimezone(timezone(timedelta(hours=hours)))
    return now


def _time_text(now: datetime, zh: bool) -> str:
    if zh:
        return f"{now.hour:02d}:{now.minute:02d}"
    return f"{now.hour % 12 or 12}:{now.minute:02d} {'AM' if now.hour < 12 else 'PM'}"


def _date_text(now: datetime, zh: bool) -> str:
    if zh:
        return f"{now.year}年{now.month}月{now.day}日"
    return f"{_EN_MONTHS.split()[now.month - 1]} {now.day}, {now.year}"


def _clock(render: Callable[[datetime, bool], str]) -> Handler:
    """A time macro: ``render`` the injected clock (``{{time::UTC+2}}`` shifts it)."""
    return lambda run, args, offset: render(_now(run.env, args), run.env.lang == "zh")


def _choices(args: list[str]) -> list[str]:
    """``a::b`` items as given; a single ``a,b`` argument split on commas (``\\,`` escapes)."""
    if len(args) != 1:
        return args
    if "::" in args[0]:
        return [a.strip() for a in args[0].split("::")]
    parts = re.split(r"(?<!\\),", args[0])
    return [p.replace("\\,", ",").strip() for p in parts]


def _random(run: _Run, args: list[str], offset: int) -> str | None:
    items = _choices(args)
    if not items:
        return None
    return (run.env.rng or random.Random(0)).choice(items)


def _pick(run: _Run, args: list[str], offset: int) -> str | None:
    items = _choices(args)
    if not items:
        return None
    key = f"{run.env.pick_seed}\x00{run.source}\x00{offset}".encode()
    import hashlib  # here, not at the top: only {{pick}} needs it

    seed = int.from_bytes(hashlib.sha256(key).digest()[:8], "big")
    return random.Random(seed).choice(items)


def _roll(run: _Run, args: list[str], offset: int) -> str:
    expr = "".join(args).replace(" ", "")
    if expr.isdigit():
        expr = f"1d{expr}"
    match = _DICE.fullmatch(expr)
    if not match:
        return ""
    count, sides = int(match.group(1) or 1), int(match.group(2))
    if not 1 <= count <= 1000 or not 1 <= sides <= 1_000_000:
        return ""
    rng = run.env.rng or random.Random(0)
    total = sum(rng.randint(1, sides) for _ in range(count)) + int(match.group(3) or 0)
    return str(total)


def _outlet(run: _Run, args: list[str], offset: int) -> str:
    return "\n".join(run.env.outlets.get(args[0], [])) if args else ""


def _var(action: Callable[[dict[str, Any], list[str]], str], arity: int) -> Handler:
    """A variables macro (``context.variables``) that needs ``arity`` arguments."""
    return lambda run, args, offset: action(run.env.variables, args) if len(args) >= arity else None


def _global(action: Callable[[dict[str, Any], list[str]], str], arity: int) -> Handler:
    """A global-variables macro: the same actions over the session's global variables."""
    return lambda run, args, offset: (
        action(run.env.global_variables, args) if len(args) >= arity else None
    )


def _scoped_value(scope: Callable[[MacroEnv], Mapping[str, Any]], yaml_text: bool) -> Handler:
    """TavernHelper's ``{{get_message_variable::path}}`` (JSON) and ``format_…`` (YAML)."""

    def handler(run: _Run, args: list[str], offset: int) -> str | None:
        if not args:
            return None
        value = variables.lookup(scope(run.env), args[0])
        if not yaml_text:
            return variables.as_json(value)
        # continuation lines line up under the macro (known only in the top-level text)
        line_start = run.source.rfind("\n", 0, offset) + 1
        return variables.as_yaml(value, offset - line_start if run.depth == 0 else 0)

    return handler


def _reverse(run: _Run, args: list[str], offset: int) -> str:
    return "::".join(args)[::-1]


_ALIASES = {
    "chardescription": "description", "charpersonality": "personality",
    "charscenario": "scenario", "charjailbreak": "charinstruction",
    "charcreatornotes": "creatornotes", "char_version": "charversion", "version": "charversion",
    "varexists": "hasvar", "flushvar": "deletevar",
    "globalvarexists": "hasglobalvar", "flushglobalvar": "deleteglobalvar",
    "charifnotgroup": "char", "group": "char", "notchar": "user",  # no group chats here
}  # fmt: skip

_HANDLERS: dict[str, Handler] = {
    "user": lambda run, args, offset: run.env.user,
    "char": lambda run, args, offset: run.env.char,
    "description": _field(lambda e: e.description),
    "personality": _field(lambda e: e.personality),
    "scenario": _field(lambda e: e.scenario),
    "persona": _field(lambda e: e.persona),
    "mesexamples": _field(lambda e: e.mes_examples),
    "mesexamplesraw": lambda run, args, offset: run.env.mes_examples,
    "charprompt": _field(lambda e: e.char_prompt),
    "charinstruction": _field(lambda e: e.char_instruction),
    "chardepthprompt": _field(lambda e: e.char_depth_prompt),
    "creatornotes": _field(lambda e: e.creator_notes),
    "charversion": lambda run, args, offset: run.env.char_version,
    "original": _original,
    "input": lambda run, args, offset: run.env.input,
    "model": lambda run, args, offset: run.env.model,
    "newline": _repeat("\n"),
    "space": _repeat(" "),
    "noop": _constant(""),
    "trim": _constant(_TRIM),
    "time": _clock(_time_text),
    "date": _clock(_date_text),
    "weekday": _clock(lambda now, zh: (_ZH_DAYS if zh else _EN_DAYS)[now.weekday()]),
    "isotime": _clock(lambda now, zh: now.strftime("%H:%M")),
    "isodate": _clock(lambda now, zh: now.strftime("%Y-%m-%d")),
    "random": _random,
    "pick": _pick,
    "roll": _roll,
    "outlet": _outlet,
    "getvar": _var(variables.getvar, 1),
    "setvar": _var(variables.setvar, 2),
    "addvar": _var(variables.addvar, 2),
    "incvar": _var(variables.step("1"), 1),
    "decvar": _var(variables.step("-1"), 1),
    "hasvar": _var(variables.hasvar, 1),
    "deletevar": _var(variables.deletevar, 1),
    "getglobalvar": _global(variables.getvar, 1),
    "setglobalvar": _global(variables.setvar, 2),
    "addglobalvar": _global(variables.addvar, 2),
    "incglobalvar": _global(variables.step("1"), 1),
    "decglobalvar": _global(variables.step("-1"), 1),
    "hasglobalvar": _global(variables.hasvar, 1),
    "deleteglobalvar": _global(variables.deletevar, 1),
    "get_message_variable": _scoped_value(lambda e: e.message_variables, False),
    "format_message_variable": _scoped_value(lambda e: e.message_variables, True),
    "get_chat_variable": _scoped_value(lambda e: e.variables, False),
    "format_chat_variable": _scoped_value(lambda e: e.variables, True),
    "get_global_variable": _scoped_value(lambda e: e.global_variables, False),
    "format_global_variable": _scoped_value(lambda e: e.global_variables, True),
    "lastusermessage": lambda run, args, offset: run.env.last_user_message,
    "lastmessage": lambda run, args, offset: run.env.last_user_message or run.env.last_char_message,
    "lastcharmessage": lambda run, args, offset: run.env.last_char_message,
    "reverse": _reverse,
}
_HANDLERS.update({alias: _HANDLERS[name] for alias, name in _ALIASES.items()})
