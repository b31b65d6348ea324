"""SillyTavern's regex scripts (compat Appendix A): which apply where, and how they rewrite.

One ``RegexScripts`` holds the card's scripts for one target. ``display``: SillyTavern runs a
script on *displayed* text when it is ``markdownOnly``; a script with neither
``markdownOnly`` nor ``promptOnly`` rewrites the message itself when it arrives, so it shows
too; ``promptOnly`` scripts never change what is shown. ``prompt``: what the model is sent
is changed by ``promptOnly`` scripts and by those with neither flag (the message itself);
``markdownOnly`` ones never reach a prompt. Placement 2 is the model's output, placement 1
the user's input; ``minDepth``/``maxDepth`` filter by the distance from the newest message
(0). Disabled scripts and scripts whose pattern cannot be used, or that run past the time
limit, are skipped (listed in ``problems``).

The terminal display (``ui.screen``) uses the ``display`` target today; prompts do not
apply scripts yet (records, traces and exports keep the raw text either way).

Replacement strings follow SillyTavern: ``{{match}}`` is ``$0``; ``$1``… and ``$<name>`` are
capture groups with every ``trimStrings`` item removed (a missing group gives ""); the result
then has its macros (``{{char}}``, ``{{user}}``, …) expanded. Without the ``g`` flag only the
first match is replaced.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from narrative_cli.domain import RegexScript

USER_INPUT = 1
AI_OUTPUT = 2
Target = Literal["display", "prompt"]
_GROUP_REF = re.compile(r"\$(\d+)|\$<([^>]+)>")

Macros = Callable[[str], str]


def _no_macros(text: str) -> str:
    return text


@dataclass(frozen=True)
class _Compiled:
    script: RegexScript
    pattern: Any  # a regex.Pattern: it can stop at a time limit
    count: int  # 0 = every match (the g flag), 1 = the first only


@dataclass
class RegexScripts:
    """The regex scripts of one card for one target; ``ai_output``/``user_input`` rewrite text."""

    scripts: Sequence[RegexScript] = ()
    macros: Macros = _no_macros
    target: Target = "display"
    problems: list[str] = field(default_factory=list)
    _compiled: list[_Compiled] = field(default_factory=list, repr=False)
    _slow: list[_Compiled] = field(default_factory=list, repr=False)  # timed out: skipped

    def __post_init__(self) -> None:
        applies = shows if self.target == "display" else prompts
        for script in self.scripts:
            if script.disabled or not applies(script):
                continue
            compiled = self._compile(script)
            if compiled is not None:
                self._compiled.append(compiled)

    def applies_to(self, placement: int) -> bool:
        """True when some script would change text of this placement."""
        return any(placement in c.script.placement for c in self._compiled)

    def ai_output(self, text: str, depth: int = 0) -> str:
        """The model's text for this target (placement 2)."""
        return self.apply(text, AI_OUTPUT, depth)

    def user_input(self, text: str, depth: int = 0) -> str:
        """The user's text for this target (placement 1)."""
        return self.apply(text, USER_INPUT, depth)

    def apply(self, text: str, placement: int, depth: int = 0) -> str:
        """``text`` after the message-rewriting scripts, then the markdownOnly ones."""
        for markdown in (False, True):
            for compiled in self._compiled:
                script = compiled.script
                if script.markdown_only != markdown or placement not in script.placement:
                    continue
                if _in_depth(script, depth):
                    text = self._replace(compiled, text)
        return text

    def _replace(self, compiled: _Compiled, text: str) -> str:
        script = compiled.script
        template = re.sub(r"\{\{match\}\}", "$0", script.replace_string, flags=re.IGNORECASE)
        trims = [self.macros(t) for t in script.trim_strings if t]

        def substitute(match: re.Match[str]) -> str:
            def group(ref: re.Match[str]) -> str:
                value = _group_value(match, ref)
                for trim in trims:
                    value = value.replace(trim, "")
                return value

            return self.macros(_GROUP_REF.sub(group, template))

        from narrative_cli.lore.jsregex import TIME_LIMIT

        if compiled in self._slow:
            return text
        try:
            result: str = compiled.pattern.sub(
                substitute, text, count=compiled.count, timeout=TIME_LIMIT
            )
        except TimeoutError:
            self._slow.append(compiled)
            name = script.script_name or script.find_regex
            self.problems.append(
                f"regex script {name!r}: ran longer than {TIME_LIMIT * 1000:.0f} ms and is "
                "skipped from now on"
            )
            return text
        return result

    def _compile(self, script: RegexScript) -> _Compiled | None:
        from narrative_cli.load.regex import regex_problem, split_find_regex
        from narrative_cli.lore.jsregex import RegexKeyError, compile_js

        name = script.script_name or script.find_regex
        problem = regex_problem(script)
        if problem is not None:
            self.problems.append(f"regex script {name!r}: {problem}")
            return None
        body, flags = split_find_regex(script.find_regex)
        if script.substitute_regex == 1:
            body = self.macros(body)
        elif script.substitute_regex == 2:
            body = _escaped_macros(body, self.macros)
        try:
            compiled = compile_js(body, flags.replace("g", "").replace("d", ""))
        except RegexKeyError as exc:
            self.problems.append(f"regex script {name!r}: {exc}")
            return None
        return _Compiled(script, compiled.pattern, 0 if "g" in flags else 1)


def shows(script: RegexScript) -> bool:
    """True when the script changes displayed text: markdownOnly, or neither only-flag."""
    return script.markdown_only or not script.prompt_only


def prompts(script: RegexScript) -> bool:
    """True when the script changes what a prompt is sent: promptOnly, or neither only-flag."""
    return script.prompt_only or not script.markdown_only


def _in_depth(script: RegexScript, depth: int) -> bool:
    low, high = script.min_depth, script.max_depth
    if low is not None and low >= 0 and depth < low:
        return False
    return not (high is not None and high >= 0 and depth > high)


def _group_value(match: re.Match[str], ref: re.Match[str]) -> str:
    number, name = ref.group(1), ref.group(2)
    try:
        value = match.group(int(number)) if number is not None else match.group(name)
    except IndexError:  # no such group number or name
        return ""
    return value or ""


def _escaped_macros(body: str, macros: Macros) -> str:
    """Macros substituted into a pattern with their values regex-escaped (substituteRegex 2)."""
    return re.sub(r"\{\{[^{}]*\}\}", lambda m: re.escape(macros(m.group())), body)


def scripts_for(
    card: object, persona: object = None, lang: str = "en", target: Target = "display"
) -> RegexScripts:
    """A card's scripts for ``target``, with its macros ({{char}}, {{user}}) expanded."""
    from narrative_cli.context.macros import env_for, expand
    from narrative_cli.domain import Card, Persona
    from narrative_cli.load.regex import regex_scripts

    if not isinstance(card, Card):
        return RegexScripts(target=target)
    env = env_for(card, persona if isinstance(persona, Persona) else None, lang=lang)
    return RegexScripts(regex_scripts(card), macros=lambda text: expand(text, env), target=target)
