"""``narrative inspect``: the report, one JSON-ready dict (``ui.inspect_view`` draws it).

Report keys (a contract for ``inspect --json``): ``card`` (name, spec, source chunk, language, …),
``greetings``, ``tokens`` (estimate per card field), ``lore`` (books and ``entries`` with their
route and its reason), ``tools`` (tool entries with name, type and trigger, or the problem),
``mvu`` (``initvar`` and ``mvu_update`` entries), ``regex_scripts``, ``preset`` and ``macros``
(``unknown`` macro names with where each is first seen; ``templates``: each text holding EJS
templates with the helpers it calls, those ``unavailable`` here, and any compile ``error``;
``special_entries``: ST-Prompt-Template's own entry kinds, handled as ordinary lore).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from narrative_cli.domain import Card, Lorebook, LoreEntry
from narrative_cli.i18n import t
from narrative_cli.load import card_language, regex_scripts, select_lore
from narrative_cli.lore.routed import routes_for
from narrative_cli.lore.routing import INITVAR, MVU_UPDATE, TOOL, initvar_entries
from narrative_cli.play.inspect_scripts import helper_rows, regex_rows
from narrative_cli.safetext import loads
from narrative_cli.tokens import estimate_tokens

if TYPE_CHECKING:
    from narrative_cli.domain_chat import Preset

TOKEN_FIELDS = ("description", "personality", "scenario", "first_mes", "mes_example",
                "system_prompt", "post_history_instructions", "creator_notes")
TRIGGERS = ("planning", "post_pipeline")
PREVIEW = 80


def preview(text: str, limit: int = PREVIEW) -> str:
    """The first ``limit`` characters of ``text`` on one line."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def card_tokens(card: Card) -> dict[str, int]:
    """A token estimate per card field, plus greetings, character's note and the total."""
    tokens = {name: estimate_tokens(getattr(card, name)) for name in TOKEN_FIELDS}
    tokens["alternate_greetings"] = sum(estimate_tokens(g) for g in card.alternate_greetings)
    note = card.depth_prompt
    tokens["depth_prompt"] = estimate_tokens(note.prompt) if note else 0
    tokens["total"] = sum(tokens.values())
    return tokens


def _card_summary(card: Card) -> dict[str, Any]:
    note = card.depth_prompt
    return {
        "name": card.name, "spec": card.spec, "spec_version": card.spec_version,
        "source": card.source, "path": card.path, "language": card_language(card),
        "creator": card.creator, "character_version": card.character_version,
        "tags": card.tags, "greeting_count": len(card.greetings),
        "world": card.extensions.get("world") or None,
        "depth_prompt": {"depth": note.depth, "role": note.role} if note else None,
    }


def _entry_row(entry: LoreEntry, book: Lorebook) -> dict[str, Any]:
    route = routes_for(book.entries).route_of(entry)
    return {
        "uid": entry.uid, "book": book.name, "comment": entry.comment, "keys": entry.keys,
        "secondary_keys": entry.secondary_keys, "position": entry.position,
        "depth": entry.depth, "constant": entry.constant, "selective": entry.selective,
        "selective_logic": entry.selective_logic, "order": entry.order,
        "disabled": entry.disabled, "route": route.name, "route_reason": route.reason,
        "tokens": estimate_tokens(entry.content),
    }


def tool_row(entry: LoreEntry, book: str, lang: str = "en") -> dict[str, Any]:
    """What a tool entry defines (name, type, trigger, output tag), or why it cannot work
    (in ``lang``)."""
    row: dict[str, Any] = {"uid": entry.uid, "book": book, "comment": entry.comment,
                           "name": None, "type": None, "trigger": None, "problem": None}
    try:
        spec = loads(entry.content)
    except ValueError as exc:
        row["problem"] = t("tooldef.not_json", lang, error=exc)
        return row
    if not isinstance(spec, dict):
        row["problem"] = t("tooldef.not_object", lang)
        return row
    function = spec.get("function")
    name = function.get("name") if isinstance(function, dict) else None
    row.update(name=name, type=spec.get("type"), trigger=spec.get("trigger", "planning"))
    for key in ("output_tag", "tag_lookback", "context"):
        if key in spec:
            row[key] = spec[key]
    row["problem"] = _tool_problem(spec, name, entry.disabled, lang)
    return row


def _tool_problem(spec: dict[str, Any], name: object, disabled: bool, lang: str) -> str | None:
    if not isinstance(name, str) or not name:
        return t("tooldef.no_name", lang)
    if spec.get("type") not in ("llm", "code"):
        return t("tooldef.bad_type", lang, value=repr(spec.get("type")))
    if spec.get("trigger", "planning") not in TRIGGERS:
        return t("tooldef.bad_trigger", lang, value=repr(spec.get("trigger")))
    if spec["type"] == "code" and name != "roll_dice" and not str(spec.get("code") or "").strip():
        return t("tooldef.no_code", lang)
    return t("tooldef.disabled", lang) if disabled else None


def _initvar_row(entry: LoreEntry, book: str) -> dict[str, Any]:
    row: dict[str, Any] = {"uid": entry.uid, "book": book, "comment": entry.comment,
                           "disabled": entry.disabled, "tokens": estimate_tokens(entry.content)}
    try:
        value = loads(entry.content)
        row["format"] = "json"
        row["variables"] = list(value) if isinstance(value, dict) else []
    except ValueError:
        row["format"] = "text"
        row["variables"] = [line.split(":", 1)[0].strip() for line in entry.content.splitlines()
                            if ":" in line and line[:1] not in (" ", "\t", "#")]
    return row


def _mvu(card: Card, entries: list[LoreEntry], routed: list[tuple[LoreEntry, str, str]]
         ) -> dict[str, Any]:
    """MVU as a session would start it: detected or not, the variables after greeting 0."""
    found = initvar_entries(entries)
    report: dict[str, Any] = {
        "initvar": [_initvar_row(e, b) for e, b, r in routed if r == INITVAR],
        "mvu_update": [_update_row(e, b) for e, b, r in routed if r == MVU_UPDATE],
        "detected": bool(found), "variables": None, "problems": [], "notes": [],
    }
    if found:
        from narrative_cli.state.mvu_init import initialise  # MVU and YAML: only when used

        greeting = card.greetings[0] if card.greetings else ""
        result = initialise(entries, greeting, char=card.name, lang=card_language(card))
        report["variables"] = result.data.stat_data
        report["problems"] = list(result.problems)
        report["notes"] = list(result.notes)
    return report


def _update_row(entry: LoreEntry, book: str) -> dict[str, Any]:
    return {"uid": entry.uid, "book": book, "comment": entry.comment,
            "constant": entry.constant, "disabled": entry.disabled,
            "tokens": estimate_tokens(entry.content)}


def _books(card: Card, worlds: list[Lorebook]) -> list[tuple[Lorebook, bool]]:
    used = select_lore(card, worlds, "auto").books
    books = [card.character_book] if card.character_book is not None else []
    return [(book, any(book is u for u in used)) for book in [*books, *worlds]]


def _lore(card: Card, worlds: list[Lorebook]) -> dict[str, Any]:
    books = _books(card, worlds)
    rows = [_entry_row(e, b) for b, _ in books for e in b.entries]
    return {
        "worldbook_source": "auto",
        "books": [{"name": b.name, "source": b.source, "entries": len(b.entries), "used": used,
                   "tokens": sum(estimate_tokens(e.content) for e in b.entries)}
                  for b, used in books],
        "entries": rows,
        "routes": dict(Counter(row["route"] for row in rows)),
    }


def _preset(preset: Preset | None) -> dict[str, Any] | None:
    if preset is None:
        return None
    return {"name": preset.name, "prompts": len(preset.prompts),
            "enabled": len(preset.enabled_prompts()),
            "enabled_identifiers": [p.identifier for p in preset.enabled_prompts()],
            "samplers": preset.samplers}


def inspect_report(card: Card, worlds: list[Lorebook] | None = None,
                   preset: Preset | None = None, lang: str = "en") -> dict[str, Any]:
    """Everything ``narrative inspect`` shows about a card, its lorebooks and a preset; the
    notes and problems in ``lang`` (``--json`` keeps English: the keys are the contract)."""
    worlds = worlds or []
    _warm_up_sandbox(card, select_lore(card, worlds, "auto").entries, preset)
    books = _books(card, worlds)
    routed = [
        (e, b.name, routes_for(b.entries).route_of(e).name) for b, _ in books for e in b.entries
    ]
    return {
        "card": _card_summary(card),
        "greetings": [{"index": i, "tokens": estimate_tokens(g), "preview": preview(g)}
                      for i, g in enumerate(card.greetings)],
        "tokens": card_tokens(card),
        "lore": _lore(card, worlds),
        "tools": [tool_row(e, b, lang) for e, b, r in routed if r == TOOL],
        "mvu": _mvu(card, select_lore(card, worlds, "auto").entries, routed),
        "regex_scripts": regex_rows(card, lang),
        "tavern_helper_scripts": helper_rows(card, lang),
        "preset": _preset(preset),
        "macros": _macros(card, select_lore(card, worlds, "auto").entries, preset),
    }


def _warm_up_sandbox(card: Card, entries: list[LoreEntry], preset: Preset | None) -> None:
    """Start the sandbox's helper process now when the report will need it (EJS templates to
    check, a regex pattern too long to check in this process), so that its start-up (a
    Python process importing QuickJS) overlaps the rest of the report instead of following."""
    from narrative_cli.play.warm import has_templates

    needed = has_templates(card, entries, preset)
    scripts = regex_scripts(card)
    if scripts and not needed:
        from narrative_cli.regex.patterns import LOCAL_PATTERN_CHARS

        needed = any(len(script.find_regex) > LOCAL_PATTERN_CHARS for script in scripts)
    if needed:
        from narrative_cli.tools.sandbox import warm_up

        warm_up()


def _macros(card: Card, entries: list[LoreEntry], preset: Preset | None) -> dict[str, Any]:
    """Unknown macros and the texts holding EJS templates, with what will not run."""
    from narrative_cli.context.macro_scan import card_sources, scan

    sources = dict(card_sources(card, entries, preset))
    report = scan(sources.items(), entries)
    rows = [t.to_dict() for t in report.templates]
    errors: list[str | None] = []
    if rows:  # the macro engine and the template sandbox (QuickJS): only for templates
        from narrative_cli.context.macros import env_for, expand
        from narrative_cli.tools.templates import syntax_errors

        env = env_for(card)  # macros run before templates (<user> in template code is a name)
        errors = syntax_errors([expand(sources[str(row["where"])], env) for row in rows])
    for row, error in zip(rows, errors, strict=True):
        row["error"] = error or ""
    return {"unknown": [{"name": n, "where": w} for n, w in report.unknown.items()],
            "templates": rows, "special_entries": report.special}
