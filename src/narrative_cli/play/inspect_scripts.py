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

RUN_PLACEMENTS = {1: "user input", 2: "AI output", 5: "world info"}
NOT_HERE = {
    3: "slash commands (a terminal has none)",
    6: "reasoning (neither shown nor sent here)",
}
HELPER_NOT_HERE = (
    "browser JavaScript (page events, iframes, buttons): a terminal runs none of it"
)
MVU_BUILT_IN = "MagVarUpdate's script: what it does (MVU variables) is built in here"


def regex_rows(card: Card) -> list[dict[str, Any]]:
    """One row per regex script: its flags, any problem, and where it ``runs`` here."""
    from narrative_cli.load import regex_scripts
    from narrative_cli.load.regex import split_find_regex

    scripts = regex_scripts(card)
    if not scripts:
        return []  # no need for the JavaScript sandbox (QuickJS) then
    from narrative_cli.regex.quickjs_run import JsScript, pattern_errors

    checks = [JsScript(s.script_name, *split_find_regex(s.find_regex), "") for s in scripts]
    refused = pattern_errors([c for s, c in zip(scripts, checks, strict=True) if s.find_regex])
    usable = [s for s in scripts if s.find_regex]
    problems = {id(usable[i]): f"invalid regex: {why}" for i, why in refused.items()}
    rows = []
    for script in scripts:
        problem = _problem(script) or problems.get(id(script))
        rows.append({
            "name": script.script_name, "find_regex": script.find_regex,
            "placement": script.placement, "disabled": script.disabled,
            "markdown_only": script.markdown_only, "prompt_only": script.prompt_only,
            "problem": problem, "runs": _runs(script, problem),
        })  # fmt: skip
    return rows


def _problem(script: RegexScript) -> str | None:
    if not script.find_regex:
        return "empty findRegex"
    from narrative_cli.load.regex import split_find_regex

    unknown = sorted(set(split_find_regex(script.find_regex)[1]) - set("dgimsuvy"))
    return f"unknown regex flags: {''.join(unknown)}" if unknown else None


def _runs(script: RegexScript, problem: str | None) -> str:
    """Where the script runs here (``prompt``, ``display``), or ``no: why``."""
    from narrative_cli.regex.targets import prompts, shows

    if script.disabled:
        return "no: disabled"
    if problem:
        return f"no: {problem}"
    places = [RUN_PLACEMENTS[p] for p in script.placement if p in RUN_PLACEMENTS]
    if not places:
        missing = [NOT_HERE.get(p, f"placement {p}") for p in script.placement] or ["none"]
        return "no: only " + ", ".join(missing)
    targets = [t for t, ok in (("prompt", prompts(script)), ("display", shows(script))) if ok]
    text = " and ".join(targets) + " (" + ", ".join(places) + ")"
    skipped = [NOT_HERE[p] for p in script.placement if p in NOT_HERE]
    text += "; not " + ", ".join(skipped) if skipped else ""
    if "display" in targets and "StatusPlaceHolderImpl" in script.find_regex:
        text += "; with MVU variables the native status panel shows instead"
    return text


def helper_rows(card: Card) -> list[dict[str, Any]]:
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
        rows.append({
            "name": str(value.get("name") or ""),
            "enabled": bool(value.get("enabled", True)),
            "buttons": [str(b.get("name")) for b in buttons if isinstance(b, dict)],
            "runs": "no: " + (MVU_BUILT_IN if mvu else HELPER_NOT_HERE),
        })  # fmt: skip
    return rows
