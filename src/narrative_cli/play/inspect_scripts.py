"""``inspect``'s account of a card's scripts: which regex scripts run here and where, and why
its TavernHelper scripts do not.

Regex scripts run in QuickJS (``regex.scripts``) on the history and lore sent to the model
(``prompt``) and on the story shown (``display``). Placement 3 rewrites slash commands, which
a terminal does not have; placement 6 rewrites reasoning, which is neither shown nor sent
here. TavernHelper scripts are browser JavaScript: they run in SillyTavern's page, with its
events, iframes and buttons; a terminal runs none of them. MagVarUpdate's own script is the
exception in effect: what it does (MVU variables) is built in here.
"""

from __future__ import annotations

from typing import Any

from narrative_cli.domain import Card, RegexScript
from narrative_cli.i18n import has, t

RUN_PLACEMENTS = (1, 2, 5)  # user input, AI output, world info (``script.place_N``)
NOT_HERE = (3, 6)  # slash commands, reasoning (``script.not_N``)


def regex_rows(card: Card, lang: str = "en") -> list[dict[str, Any]]:
    """One row per regex script: its flags, any problem, and where it ``runs`` here (the
    words in ``lang``; ``inspect --json`` keeps English)."""
    from narrative_cli.load import regex_scripts

    scripts = regex_scripts(card)
    if not scripts:
        return []  # no need for QuickJS then
    usable = [s for s in scripts if s.find_regex]
    refused = _pattern_errors(usable)
    problems = {id(usable[i]): t("script.invalid", lang, why=why) for i, why in refused.items()}
    rows = []
    for script in scripts:
        problem = _problem(script, lang) or problems.get(id(script))
        rows.append({
            "name": script.script_name, "find_regex": script.find_regex,
            "placement": script.placement, "disabled": script.disabled,
            "markdown_only": script.markdown_only, "prompt_only": script.prompt_only,
            "problem": problem, "runs": _runs(script, problem, lang),
        })  # fmt: skip
    return rows


def _pattern_errors(scripts: list[RegexScript]) -> dict[int, str]:
    """The scripts (by index) whose pattern JavaScript refuses, with its reason: checked in
    this process when they are short (``regex.patterns``), else in the sandbox's helper."""
    from narrative_cli.load.regex import split_find_regex
    from narrative_cli.regex.patterns import pattern_errors_here

    patterns = [split_find_regex(script.find_regex) for script in scripts]
    found = pattern_errors_here(patterns)
    if found is not None:
        return found
    from narrative_cli.regex.quickjs_run import JsScript, helper_pattern_errors

    named = zip(scripts, patterns, strict=True)
    return helper_pattern_errors([JsScript(s.script_name, *pattern, "") for s, pattern in named])


def _problem(script: RegexScript, lang: str) -> str | None:
    if not script.find_regex:
        return t("script.empty", lang)
    from narrative_cli.load.regex import split_find_regex

    unknown = sorted(set(split_find_regex(script.find_regex)[1]) - set("dgimsuvy"))
    return t("script.flags", lang, flags="".join(unknown)) if unknown else None


def _place(placement: int, lang: str) -> str:
    """What a placement rewrites, in words (``placement N`` for one we do not know)."""
    key = f"script.place_{placement}" if placement in RUN_PLACEMENTS else (
        f"script.not_{placement}")
    return t(key, lang) if has(key, lang) else t("script.placement", lang, placement=placement)


def _runs(script: RegexScript, problem: str | None, lang: str) -> str:
    """Where the script runs here (``prompt``, ``display``), or ``no: why``."""
    from narrative_cli.regex.targets import prompts, shows

    if script.disabled:
        return t("script.no", lang, why=t("script.disabled", lang))
    if problem:
        return t("script.no", lang, why=problem)
    places = [_place(p, lang) for p in script.placement if p in RUN_PLACEMENTS]
    comma = t("script.comma", lang)
    if not places:
        missing = [_place(p, lang) for p in script.placement] or [t("script.none", lang)]
        return t("script.no", lang, why=t("script.only", lang, places=comma.join(missing)))
    targets = ([t("script.prompt", lang)] if prompts(script) else []) + (
        [t("script.display", lang)] if shows(script) else [])
    text = t("script.runs", lang, targets=t("script.and", lang).join(targets),
             places=comma.join(places))
    skipped = [_place(p, lang) for p in script.placement if p in NOT_HERE]
    text += t("script.not_here", lang, places=comma.join(skipped)) if skipped else ""
    if shows(script) and "StatusPlaceHolderImpl" in script.find_regex:
        text += t("script.status_panel", lang)
    return text


def helper_rows(card: Card, lang: str = "en") -> list[dict[str, Any]]:
    """The card's TavernHelper scripts, each with its buttons and why it does not run."""
    raw = card.extensions.get("TavernHelper_scripts")
    items = raw if isinstance(raw, list) else []
    rows = []
    for item in items:
        value = item.get("value", item) if isinstance(item, dict) else None
        if not isinstance(value, dict):
            continue
        content = str(value.get("content") or "") + str(value.get("info") or "")
        listed = value.get("buttons")
        buttons: list[Any] = listed if isinstance(listed, list) else []
        mvu = "MagVarUpdate" in content or "MagicalAstrogy" in content
        why = t("script.mvu_built_in" if mvu else "script.helper_not_here", lang)
        rows.append({
            "name": str(value.get("name") or ""),
            "enabled": bool(value.get("enabled", True)),
            "buttons": [str(b.get("name")) for b in buttons if isinstance(b, dict)],
            "runs": t("script.no", lang, why=why),
        })  # fmt: skip
    return rows
