"""What a story says at load about regex scripts that cannot do (all) their work here.

No script is dropped in silence. Placement 3 rewrites slash commands, which a terminal does not
have. Placement 6 rewrites the model's reasoning: the backends keep a reply's reasoning apart
from its text, only in the trace; it is never shown, stored with the turn or sent back to the
model, so such a script has nothing to act on. Global scripts (the config's
``pipeline.regex_scripts`` files, ``extension_settings.regex`` of an ``--st-data`` folder's
``settings.json``) are also checked for a pattern JavaScript refuses, since ``inspect`` shows only
a card's scripts.
"""

from __future__ import annotations

from collections.abc import Sequence

from narrative_cli.domain import RegexScript
from narrative_cli.i18n import t
from narrative_cli.regex.quickjs_run import JsScript, pattern_errors

SLASH_COMMAND = 3
REASONING = 6
RUNS_HERE = (1, 2, 5)


def script_notes(
    scripts: Sequence[RegexScript], origin: str, lang: str = "en", *, check_patterns: bool = False
) -> list[str]:
    """One line per enabled script that does not (fully) run here, saying why."""
    where = (t("regex.origin.card", lang) if origin == "card" else
             t("regex.origin.preset", lang) if origin == "preset" else
             t("regex.origin.global", lang))  # fmt: skip
    live = [s for s in scripts if not s.disabled]
    broken = _broken(live) if check_patterns else {}
    notes = []
    for index, script in enumerate(live):
        name = repr(script.script_name or script.find_regex)
        if index in broken:
            notes.append(t("regex.note.broken", lang, name=name, origin=where,
                           why=broken[index]))
        elif not any(p in RUNS_HERE for p in script.placement):
            only_slash = bool(script.placement) and set(script.placement) <= {SLASH_COMMAND}
            if REASONING in script.placement:
                notes.append(t("regex.note.reasoning", lang, name=name, origin=where))
            elif only_slash:
                notes.append(t("regex.note.slash", lang, name=name, origin=where))
            else:
                notes.append(t("regex.note.none", lang, name=name, origin=where))
        elif REASONING in script.placement:
            notes.append(t("regex.note.reasoning", lang, name=name, origin=where))
    return notes


def _broken(scripts: Sequence[RegexScript]) -> dict[int, str]:
    """Scripts (by index) that cannot run: no pattern, unknown flags, or refused by JavaScript."""
    from narrative_cli.load.regex import split_find_regex

    found: dict[int, str] = {}
    checks: list[tuple[int, JsScript]] = []
    for index, script in enumerate(scripts):
        if not script.find_regex:
            found[index] = "empty findRegex"
            continue
        body, flags = split_find_regex(script.find_regex)
        unknown = sorted(set(flags) - set("dgimsuvy"))
        if unknown:
            found[index] = f"unknown regex flags: {''.join(unknown)}"
            continue
        checks.append((index, JsScript(script.script_name, body, flags, "")))
    refused = pattern_errors([js for _, js in checks])
    for position, why in refused.items():
        found[checks[position][0]] = f"invalid regex: {why}"
    return found
