"""SillyTavern's regex scripts (compat Appendix A): which apply where, and how they rewrite.

One ``RegexScripts`` holds the card's scripts for one target, as SillyTavern's regex engine
picks them. ``display``: a script with neither ``markdownOnly`` nor ``promptOnly`` rewrites
the message when it arrives (so it shows, whatever its depth), then ``markdownOnly`` scripts
rewrite what is shown, depth permitting; ``promptOnly`` ones never change what is shown.
``prompt``: every script with neither flag or with ``promptOnly`` runs, in order, depth
permitting; ``markdownOnly`` ones never reach a prompt. Placements: 1 the user's input, 2 the
model's output, 3 slash commands (none run here), 5 world-info entries, 6 reasoning.
``minDepth``/``maxDepth`` count messages back from the newest (0). Disabled scripts, and
scripts whose pattern JavaScript refuses, are skipped and listed in ``problems``.

The scripts run in JavaScript (``regex.quickjs_run``): the pattern and the replacement mean
what they mean in SillyTavern. Macros (``{{char}}``, ``{{user}}``, …) are expanded in the
replacement and trim strings, and in the pattern when ``substituteRegex`` is 1 (2: with their
values escaped). A script that runs past its time limit is named in ``problems`` once and
skipped for the rest of the session.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from narrative_cli.context.ejs import has_template
from narrative_cli.domain import RegexScript
from narrative_cli.regex.quickjs_run import (
    SCRIPT_TIME_LIMIT,
    JsScript,
    pattern_errors,
    run_many,
    run_scripts,
)
from narrative_cli.regex.targets import prompts, shows
from narrative_cli.regex.templated import Renderer, render_marked
from narrative_cli.tools.templates import TemplateJob

USER_INPUT = 1
AI_OUTPUT = 2
SLASH_COMMAND = 3
WORLD_INFO = 5
REASONING = 6
PLACEMENT_NAMES = {
    USER_INPUT: "user input",
    AI_OUTPUT: "AI output",
    SLASH_COMMAND: "slash commands",
    WORLD_INFO: "world info",
    REASONING: "reasoning",
}
Target = Literal["display", "prompt"]

Macros = Callable[[str], str]


_Key = tuple[str, int, tuple[int, ...]]  # a text, its placement, the scripts it runs through
MANY_JOBS = 200  # texts per sandbox call of _apply_many (a call has MANY_TIME_LIMIT)
MANY_CHARS = 40_000  # JSON characters of those texts (a result is capped at 64 KiB)
SINGLE_KEPT = 64  # results of single texts remembered (a script is a pure function of its text)


def _no_macros(text: str) -> str:
    return text


@dataclass(frozen=True)
class _Ready:
    script: RegexScript
    js: JsScript


@dataclass
class RegexScripts:
    """The regex scripts of one card for one target; ``ai_output``/``user_input`` rewrite text."""

    scripts: Sequence[RegexScript] = ()
    macros: Macros = _no_macros
    target: Target = "display"
    problems: list[str] = field(default_factory=list)
    _ready: list[_Ready] = field(default_factory=list, repr=False)
    # (text, placement, the scripts run) -> result, for the texts of the last _apply_many
    _memo: dict[_Key, str] = field(default_factory=dict, repr=False)
    # the same for single texts (``apply``): a turn sends its narrative through the same
    # scripts for each agent that reads it, the analysis, the MVU extraction, the post tools
    _single: dict[_Key, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        applies = shows if self.target == "display" else prompts
        ready: list[_Ready] = []
        for script in self.scripts:
            if script.disabled or not applies(script):
                continue
            prepared = self._prepare(script)
            if prepared is not None:
                ready.append(prepared)
        refused = pattern_errors([r.js for r in ready])
        for index, reason in sorted(refused.items()):
            self.problems.append(f"regex script {ready[index].js.name!r}: invalid regex: {reason}")
        self._ready = [r for i, r in enumerate(ready) if i not in refused]

    def applies_to(self, placement: int) -> bool:
        """True when some script would change text of this placement."""
        return any(placement in r.script.placement for r in self._ready)

    def ai_output(self, text: str, depth: int | None = 0, render: Renderer | None = None) -> str:
        """The model's text for this target (placement 2)."""
        return self.apply(text, AI_OUTPUT, depth, render)

    def user_input(self, text: str, depth: int | None = 0, render: Renderer | None = None) -> str:
        """The user's text for this target (placement 1)."""
        return self.apply(text, USER_INPUT, depth, render)

    def world_info(
        self, text: str, depth: int | None = None, render: Renderer | None = None
    ) -> str:
        """A world-info entry's content for this target (placement 5)."""
        return self.apply(text, WORLD_INFO, depth, render)

    def apply_many(
        self, items: Sequence[tuple[str, int, int | None]], render: Renderer | None = None
    ) -> list[str]:
        """Each ``(text, placement, depth)`` as ``apply`` gives it, in one sandbox call (and
        the templates of templated replacements in one more)."""
        return render_marked(self._apply_many(items), render or self._render)

    def _apply_many(self, items: Sequence[tuple[str, int, int | None]]) -> list[str]:
        """The texts through their scripts, before templates are rendered.

        A script is a pure function of its text, so a text run through the same scripts
        before (the same past message, one turn older) gives what it gave then: only new
        texts, and texts whose depth moved them into or out of a script's range, go to the
        sandbox (issue #17: the whole history went every turn, and past a few hundred turns
        one call outgrew the sandbox's 64 KiB result and fell back to a call per text). The
        texts that do run go in calls of at most ``MANY_JOBS`` texts and ``MANY_CHARS``
        characters."""
        chosen = [self._chosen(p, d) if text else [] for text, p, d in items]
        if not any(chosen):
            return [text for text, _, _ in items]
        keys = [
            (text, p, tuple(id(r) for r in c)) if c else None
            for (text, p, _), c in zip(items, chosen, strict=True)
        ]
        known: dict[_Key, str] = {}
        todo: dict[_Key, list[_Ready]] = {}
        for key, scripts in zip(keys, chosen, strict=True):
            if key is None:
                continue
            if key in self._memo:
                known[key] = self._memo[key]
            elif key in self._single:  # last turn's narrative, read by this turn's agents
                known[key] = self._single[key]
            else:
                todo[key] = scripts
        for part in _parts(list(todo.items())):
            for (key, _), text in zip(part, self._run_part(part), strict=True):
                known[key] = text
        self._memo = known  # this turn's texts: next turn's are mostly the same ones
        pairs = zip(items, keys, strict=True)
        return [text if key is None else known[key] for (text, _, _), key in pairs]

    def _run_part(self, part: Sequence[tuple[_Key, list[_Ready]]]) -> list[str]:
        """One sandbox call for ``part`` (text by text when it runs out of time)."""
        outcomes = run_many([(key[0], [r.js for r in scripts]) for key, scripts in part])
        if outcomes is None:  # too slow together: one at a time finds the runaway script
            return [self._run_one(key[0], scripts) for key, scripts in part]
        texts = []
        for (_, scripts), outcome in zip(part, outcomes, strict=True):
            for index, reason in outcome.failed:
                self._drop(scripts[index], f"failed: {reason}")
            texts.append(outcome.text)
        return texts

    def depth_horizon(self) -> int:
        """The depth past which no script's choice changes any more (the largest minDepth or
        maxDepth a script sets; 0 when none does): a message deeper than this, at any later
        depth, goes through the same scripts and so comes out the same."""
        bounds = [
            bound
            for r in self._ready
            for bound in (r.script.min_depth, r.script.max_depth)
            if bound is not None and bound >= 0
        ]
        return max(bounds, default=0)

    @property
    def version(self) -> tuple[int, ...]:
        """Changes when a script is dropped (results computed before are then stale)."""
        return tuple(id(r) for r in self._ready)

    def _chosen(self, placement: int, depth: int | None) -> list[_Ready]:
        """The scripts that run on text of ``placement`` at ``depth``, in SillyTavern's order."""
        chosen = [r for r in self._ready if placement in r.script.placement]
        if self.target == "display":  # arrival rewrites (no depth), then the shown-only ones
            return [r for r in chosen if not r.script.markdown_only] + [
                r for r in chosen if r.script.markdown_only and _in_depth(r.script, depth)
            ]
        return [r for r in chosen if _in_depth(r.script, depth)]

    def apply(
        self, text: str, placement: int, depth: int | None = 0, render: Renderer | None = None
    ) -> str:
        """``text`` after the scripts of this target and placement, in SillyTavern's order;
        templates that replacements wrote are rendered by ``render`` (``regex.templated``;
        without one, against no variables)."""
        return render_marked([self._apply(text, placement, depth)], render or self._render)[0]

    def _render(self, jobs: Sequence[TemplateJob]) -> list[str | None]:
        """Templates rendered with no session behind them (names and variables empty)."""
        from narrative_cli.tools.templates import TemplateContext, render_templates

        batch = render_templates(jobs, TemplateContext())
        self.problems += [w for w in batch.warnings if w not in self.problems]
        return batch.outputs

    def _apply(self, text: str, placement: int, depth: int | None) -> str:
        chosen = self._chosen(placement, depth)
        if not chosen or not text:
            return text
        key = (text, placement, tuple(id(r) for r in chosen))
        known = self._single.get(key)
        if known is None:
            known = self._run_one(text, chosen)
            if len(self._single) >= SINGLE_KEPT:
                self._single.clear()
            self._single[key] = known
        return known

    def _run_one(self, text: str, chosen: list[_Ready]) -> str:
        outcome = run_scripts(text, [r.js for r in chosen])
        for index, reason in outcome.failed:
            self._drop(chosen[index], f"failed: {reason}")
        for index in outcome.timed_out:
            limit = f"{SCRIPT_TIME_LIMIT * 1000:.0f} ms"
            self._drop(chosen[index], f"ran longer than {limit} and is skipped from now on")
        return outcome.text

    def _drop(self, ready: _Ready, why: str) -> None:
        if ready in self._ready:
            self._ready.remove(ready)
            self.problems.append(f"regex script {ready.js.name!r}: {why}")

    def _prepare(self, script: RegexScript) -> _Ready | None:
        from narrative_cli.load.regex import split_find_regex

        name = script.script_name or script.find_regex
        if not script.find_regex:
            self.problems.append(f"regex script {name!r}: empty findRegex")
            return None
        body, flags = split_find_regex(script.find_regex)
        unknown = sorted(set(flags) - set("dgimsuvy"))
        if unknown:
            self.problems.append(f"regex script {name!r}: unknown regex flags: {''.join(unknown)}")
            return None
        if script.substitute_regex == 1:
            body = self.macros(body)
        elif script.substitute_regex == 2:
            body = _escaped_macros(body, self.macros)
        trims = tuple(self.macros(t) for t in script.trim_strings if t)
        replace = self.macros(script.replace_string)
        mark = has_template(replace)
        return _Ready(script, JsScript(name, body, flags, replace, trims, mark))


def _in_depth(script: RegexScript, depth: int | None) -> bool:
    if depth is None or depth < 0:  # no depth given: SillyTavern checks none
        return True
    low, high = script.min_depth, script.max_depth
    if low is not None and low >= 0 and depth < low:
        return False
    return not (high is not None and high >= 0 and depth > high)


def _escaped_macros(body: str, macros: Macros) -> str:
    """Macros substituted into a pattern with their values regex-escaped (substituteRegex 2)."""
    return re.sub(r"\{\{[^{}]*\}\}", lambda m: _js_escape(macros(m.group())), body)


def _js_escape(text: str) -> str:
    """``text`` as a literal inside a JavaScript pattern (the characters RegExp treats)."""
    return re.sub(r"[.*+?^${}()|[\]\\/]", lambda m: "\\" + m.group(), text)


def scripts_for(
    card: object,
    persona: object = None,
    lang: str = "en",
    target: Target = "display",
    global_scripts: Sequence[RegexScript] = (),
) -> RegexScripts:
    """The global scripts and then the card's, for ``target``, with the card's macros
    ({{char}}, {{user}}) expanded. SillyTavern runs global scripts first, then the preset's,
    then the character's (``getRegexScripts`` in its regex engine)."""
    from narrative_cli.context.macros import env_for, expand
    from narrative_cli.domain import Card
    from narrative_cli.domain_chat import Persona
    from narrative_cli.load.regex import regex_scripts

    if not isinstance(card, Card):
        return RegexScripts(list(global_scripts), target=target)
    env = env_for(card, persona if isinstance(persona, Persona) else None, lang=lang)
    scripts = [*global_scripts, *regex_scripts(card)]
    return RegexScripts(scripts, macros=lambda text: expand(text, env), target=target)


def _parts(jobs: list[tuple[_Key, list[_Ready]]]) -> list[list[tuple[_Key, list[_Ready]]]]:
    """``jobs`` in order, cut into sandbox calls of at most MANY_JOBS texts and MANY_CHARS
    characters of JSON (a longer text goes alone)."""
    parts: list[list[tuple[_Key, list[_Ready]]]] = []
    size = 0
    for job in jobs:
        cost = len(json.dumps(job[0][0])) + 16
        if not parts or len(parts[-1]) >= MANY_JOBS or size + cost > MANY_CHARS:
            parts.append([])
            size = 0
        parts[-1].append(job)
        size += cost
    return parts
