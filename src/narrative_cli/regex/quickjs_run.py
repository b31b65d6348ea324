"""Regex scripts run by JavaScript itself: QuickJS's RegExp and String.replace, in the sandbox.

SillyTavern runs a card's regex scripts in the browser, so a pattern means what JavaScript
says (lookbehind, named groups, the ``u``/``s``/``y`` flags, ``\\d`` on Unicode text) and a
replacement string means what SillyTavern's engine builds from it. Translating either to
Python's ``re`` drifts on real cards; running them in QuickJS (``tools.sandbox``) does not.

All scripts that apply to one text go to the helper process in one call (a round trip costs
more than the regexes). The call's time limit is the sum of the scripts' limits; when it runs
out, the scripts are run again one at a time so the runaway one can be named: it is skipped
from then on, the others still apply.

Replacement strings, as SillyTavern's engine reads them: ``{{match}}`` is ``$0``; ``$0``,
``$1``… and ``$<name>`` are the match or a group with every trim string removed, "" when the
group did not take part. JavaScript's own ``$&`` (the match), `` $` `` (the text before it),
``$'`` (the text after it) and ``$$`` (a dollar) keep their JavaScript meaning.

A replacement holding an EJS template (``<%``) is marked (``JsScript.mark``): each text it
produced comes back between ``TEMPLATE_OPEN`` (then the script's name and ``TEMPLATE_NAMED``)
and ``TEMPLATE_CLOSE``, for ``regex.scripts`` to render as ST-Prompt-Template would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from narrative_cli.regex.delimited import run_here
from narrative_cli.regex.patterns import LOCAL_PATTERN_CHARS, pattern_errors_here
from narrative_cli.tools.sandbox import run_code

__all__ = ["LOCAL_PATTERN_CHARS", "MANY_TIME_LIMIT", "SCRIPT_TIME_LIMIT", "TEMPLATE_CLOSE",
           "TEMPLATE_NAMED", "TEMPLATE_OPEN", "JsOutcome", "JsScript", "helper_pattern_errors",
           "pattern_errors", "run_many", "run_scripts"]  # fmt: skip

# A replacement that holds an EJS template comes back between these two private-use
# characters, so only the template the script wrote is rendered, never the model's own text.
TEMPLATE_OPEN = "\ue010"
TEMPLATE_CLOSE = "\ue011"
TEMPLATE_NAMED = "\ue012"  # ends the script's name, which follows TEMPLATE_OPEN
SCRIPT_TIME_LIMIT = 0.5  # seconds one script may run on one text
MEMORY_LIMIT = 64 * 1024 * 1024

# The body of ``function (params, state)``: params.text, params.scripts[{source, flags,
# replace, trims}]. Returns the text after every script and, per script, an error or null.
_RUNNER = r"""
const trimmed = (value, trims) => {
  let out = value;
  for (const t of trims) if (t) out = out.split(t).join('');
  return out;
};
const expand = (template, args, trims) => {
  const named = typeof args[args.length - 1] === 'object' && args[args.length - 1] !== null;
  const groups = named ? args[args.length - 1] : undefined;
  const end = named ? args.length - 3 : args.length - 2;
  const whole = args[end + 1], offset = args[end], captures = args.slice(0, end);
  const match = captures[0];
  return template.replace(/\$(\$|&|`|'|\d+|<([^>]*)>)/g, (all, token, name) => {
    if (token === '$') return '$';
    if (token === '&') return match;
    if (token === '`') return whole.slice(0, offset);
    if (token === "'") return whole.slice(offset + match.length);
    const value = name !== undefined ? (groups ? groups[name] : undefined)
                                     : captures[Number(token)];
    return value ? trimmed(String(value), trims) : '';
  });
};
const OPEN = '\uE010', NAMED = '\uE012', CLOSE = '\uE011';
const runAll = (start, scripts) => {
  let text = start;
  const errors = [];
  for (const script of scripts) {
    let pattern;
    try { pattern = new RegExp(script.source, script.flags); }
    catch (error) { errors.push(String(error && error.message || error)); continue; }
    const template = script.replace.replace(/\{\{match\}\}/gi, '$0');
    const trims = script.trims;
    const mark = script.mark;
    text = text.replace(pattern, function () {
      const out = expand(template, [...arguments], trims);
      return mark ? OPEN + mark + NAMED + out + CLOSE : out;
    });
    errors.push(null);
  }
  return {text: text, errors: errors};
};
if (params.jobs) {
  return params.jobs.map(job => runAll(job.text, job.scripts.map(i => params.scripts[i])));
}
return runAll(params.text, params.scripts);
"""
MANY_TIME_LIMIT = 2.0  # seconds for a batch of texts; past it, each text is run on its own


@dataclass(frozen=True)
class JsScript:
    """One script ready to run: its name (for messages), pattern, flags, replacement, trims."""

    name: str
    source: str
    flags: str
    replace: str
    trims: tuple[str, ...] = ()
    mark: bool = False  # each replacement comes back as OPEN name NAMED text CLOSE (a template)

    def params(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "flags": self.flags,
            "replace": self.replace,
            "trims": list(self.trims),
            "mark": (self.name or "?") if self.mark else "",
        }


@dataclass(frozen=True)
class JsOutcome:
    """The rewritten text; the scripts (by index) that failed, with why, and that timed out."""

    text: str
    failed: tuple[tuple[int, str], ...] = ()
    timed_out: tuple[int, ...] = ()


def run_scripts(
    text: str, scripts: list[JsScript], time_limit: float = SCRIPT_TIME_LIMIT
) -> JsOutcome:
    """``text`` after ``scripts`` in order, by JavaScript; never raises."""
    if not scripts or not text:
        return JsOutcome(text)
    done = run_here(text, scripts)  # a delimited block's scripts: the same, without a call
    if done is not None:
        return JsOutcome(done)
    batch = _call(text, scripts, time_limit * len(scripts))
    if batch is not None:
        return batch
    return _one_by_one(text, scripts, time_limit)


def _call(text: str, scripts: list[JsScript], time_limit: float) -> JsOutcome | None:
    """One sandbox call; None when it ran out of time (or the engine died)."""
    params = {"text": text, "scripts": [s.params() for s in scripts]}
    result = run_code(_RUNNER, params, {}, time_limit=time_limit, memory_limit=MEMORY_LIMIT)
    if not result.ok:
        if result.error_kind in ("timeout", "crash", "memory", "stack"):
            return None
        reason = result.message("en")
        return JsOutcome(text, failed=tuple((i, reason) for i in range(len(scripts))))
    value = result.value if isinstance(result.value, dict) else {}
    errors = value.get("errors") or []
    failed = tuple((i, str(e)) for i, e in enumerate(errors[: len(scripts)]) if e is not None)
    return JsOutcome(str(value.get("text", text)), failed=failed)


def run_many(jobs: list[tuple[str, list[JsScript]]]) -> list[JsOutcome] | None:
    """Several texts, each with its scripts, in one call; None when the call ran out of time
    or failed (the caller then runs each text with ``run_scripts``, which names a runaway).
    Texts whose scripts all have the delimited shape (``regex.delimited``) are done here."""
    here = [run_here(text, chosen) if text else text for text, chosen in jobs]
    rest = [job for job, done in zip(jobs, here, strict=True) if done is None]
    sent = _run_many(rest) if rest else []
    if sent is None:
        return None
    outcomes = iter(sent)
    return [JsOutcome(done) if done is not None else next(outcomes) for done in here]


def _run_many(jobs: list[tuple[str, list[JsScript]]]) -> list[JsOutcome] | None:
    scripts: list[JsScript] = []
    index: dict[JsScript, int] = {}
    shaped = []
    for text, chosen in jobs:
        for script in chosen:
            if script not in index:
                index[script] = len(scripts)
                scripts.append(script)
        shaped.append({"text": text, "scripts": [index[s] for s in chosen]})
    params = {"jobs": shaped, "scripts": [s.params() for s in scripts]}
    result = run_code(_RUNNER, params, {}, time_limit=MANY_TIME_LIMIT, memory_limit=MEMORY_LIMIT)
    if not result.ok or not isinstance(result.value, list) or len(result.value) != len(jobs):
        return None
    outcomes = []
    for (text, _), value in zip(jobs, result.value, strict=True):
        errors = value.get("errors") or [] if isinstance(value, dict) else []
        failed = tuple((i, str(e)) for i, e in enumerate(errors) if e is not None)
        done = str(value.get("text", text)) if isinstance(value, dict) else text
        outcomes.append(JsOutcome(done, failed=failed))
    return outcomes


def _one_by_one(text: str, scripts: list[JsScript], time_limit: float) -> JsOutcome:
    failed: list[tuple[int, str]] = []
    timed_out: list[int] = []
    for index, script in enumerate(scripts):
        outcome = _call(text, [script], time_limit)
        if outcome is None:
            timed_out.append(index)
            continue
        text = outcome.text
        failed.extend((index, reason) for _, reason in outcome.failed)
    return JsOutcome(text, tuple(failed), tuple(timed_out))


_CHECK = r"""
return params.scripts.map(s => {
  try { new RegExp(s.source, s.flags); return null; }
  catch (error) { return String(error && error.message || error); }
});
"""


def pattern_errors(scripts: list[JsScript]) -> dict[int, str]:
    """Scripts (by index) whose pattern JavaScript refuses, with JavaScript's reason: short
    ones compiled by QuickJS in this process, and all of them in the helper process when one
    is long or holds a lone surrogate (``regex.patterns``)."""
    if not scripts:
        return {}
    found = pattern_errors_here([(script.source, script.flags) for script in scripts])
    return helper_pattern_errors(scripts) if found is None else found


def helper_pattern_errors(scripts: list[JsScript]) -> dict[int, str]:
    """``pattern_errors`` checked in the sandbox's helper process, whatever the patterns."""
    if not scripts:
        return {}
    params = {"scripts": [s.params() for s in scripts]}
    result = run_code(_CHECK, params, {}, time_limit=SCRIPT_TIME_LIMIT, memory_limit=MEMORY_LIMIT)
    if not result.ok or not isinstance(result.value, list):
        reason = result.message("en") or "the JavaScript check gave no answer"
        return dict.fromkeys(range(len(scripts)), reason)
    return {i: str(e) for i, e in enumerate(result.value[: len(scripts)]) if e is not None}
