"""Loading what a story plays with: card, lore, preset, persona, tools, language.

``open_story`` (``pipeline.story``) calls ``load_parts``; this module only gathers, the
loaders in ``load/`` do the reading and raise ``BadInput`` errors naming the file. Problems
that do not stop the story (a tool entry that cannot be registered, an invalid regex key, a
lorebook skipped by the world-book source setting) are collected for the REPL to show.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from narrative_cli.agents.templates import pick_language
from narrative_cli.config import Settings
from narrative_cli.context.ejs import has_template
from narrative_cli.context.macro_scan import card_sources, scan
from narrative_cli.context.macros import env_for, expand
from narrative_cli.domain import Card, Lorebook, LoreEntry, RegexScript
from narrative_cli.domain_chat import Persona, Preset
from narrative_cli.errors import BadInput, spoken_in
from narrative_cli.i18n import t
from narrative_cli.load import (
    card_language,
    load_card,
    load_lorebook,
    load_persona,
    load_preset,
    load_regex_scripts,
    regex_scripts,
    select_lore,
)
from narrative_cli.load.lorebooks import linked_world
from narrative_cli.load.regex import parse_regex_scripts
from narrative_cli.lore.engine import LoreSettings
from narrative_cli.lore.index import index_for
from narrative_cli.lore.notes import note_words
from narrative_cli.regex.notes import script_notes
from narrative_cli.tools.definitions import ToolSet, load_tools
from narrative_cli.tools.templates import TemplateJob, check_templates


@dataclass
class StoryParts:
    """Everything loaded for a story, before any turn."""

    card: Card
    entries: list[LoreEntry]
    tools: ToolSet
    settings: Settings
    persona: Persona
    preset: Preset | None
    lang: str
    problems: list[str] = field(default_factory=list)
    global_regex: list[RegexScript] = field(default_factory=list)  # run before the card's

    def render(self, text: str) -> str:
        """``text`` with the card's macros ({{user}}, {{char}}, …) expanded (for greetings)."""
        return expand(text, env_for(self.card, self.persona, lang=self.lang)).strip()


def load_parts(
    card_path: str | Path | Card,
    lorebooks: Sequence[str | Path],
    preset: str | Path | Preset | None,
    persona: str | Persona | None,
    settings: Settings | None,
    lang: str,
    user_name: str | None,
    regex: Sequence[RegexScript] = (),
    member_books: Sequence[Lorebook] = (),
) -> StoryParts:
    """Load the card (unless already loaded) and what goes with it; BadInput names any file
    that cannot be used. ``regex``: global regex scripts found elsewhere (an ``--st-data``
    folder's settings); the config's ``pipeline.regex_scripts`` files come after them.
    ``member_books``: a group scene's other members' own books, used as the card's own book
    is (not under worldbook source ``world``)."""
    settings = settings or Settings()
    card = card_path if isinstance(card_path, Card) else load_card(card_path)
    flag = lang if lang and lang != "auto" else settings.pipeline.lang
    with spoken_in(pick_language(card_language(card), flag)):  # the card is read: its language
        worlds = [load_lorebook(path) for path in lorebooks]
        preset = load_preset(preset) if isinstance(preset, (str, Path)) else preset
    selection = select_lore(card, worlds, settings.pipeline.worldbook_source)
    entries = selection.entries
    if settings.pipeline.worldbook_source != "world":
        seen = set(map(id, entries))
        entries += [e for book in member_books for e in book.entries if id(e) not in seen]
    tools = load_tools(entries)
    persona_obj = _persona(persona, user_name)
    parts = StoryParts(
        card=card,
        entries=entries,
        tools=tools,
        settings=settings,
        persona=persona_obj,
        preset=preset,
        lang=pick_language(card_language(card), flag),
        problems=[f"lore: {note}" for note in selection.skipped],
    )
    parts.problems = [note_words(note, parts.lang) for note in parts.problems]
    parts.problems += [f"tool {problem}" for problem in tools.problems]
    parts.problems += [note_words(note, parts.lang)
                       for note in _lore_problems(entries, settings, persona_obj, card)]
    sources = card_sources(card, entries, parts.preset)
    report = scan(sources, entries)
    parts.problems += report.problems(parts.lang)
    if report.templates:  # JavaScript syntax errors too, found before the first turn
        broken = {tpl.where for tpl in report.templates if tpl.error}  # already reported
        env = env_for(card, persona_obj, lang=parts.lang)  # a throwaway: macros run first
        jobs = [TemplateJob(where, expand(text, env)) for where, text in sources
                if has_template(text) and where not in broken]
        parts.problems += check_templates(jobs, parts.lang)
    parts.problems += _missing_world(card, worlds, parts.lang)
    if parts.preset is not None and parts.preset.extra.get("wrap_in_quotes") is True:
        parts.problems.append(f"preset {parts.preset.name!r}: wrap_in_quotes is not applied; "
                              "SillyTavern 1.13 and later no longer quote the user's messages")
    parts.global_regex = [*regex, *_config_regex(settings)]
    parts.problems += script_notes(parts.global_regex, "global", parts.lang, check_patterns=True)
    preset_regex, unread = _preset_regex(parts.preset)
    parts.problems += unread
    parts.problems += script_notes(preset_regex, "preset", parts.lang, check_patterns=True)
    parts.global_regex += preset_regex  # SillyTavern: global, then the preset's, then the card's
    parts.problems += script_notes(regex_scripts(card), "card", parts.lang)
    return parts


def _preset_regex(preset: Preset | None) -> tuple[list[RegexScript], list[str]]:
    """The preset's own regex scripts (``extensions.regex_scripts``), and a note per script
    that cannot be read. A preset the user gives is taken as allowed (SillyTavern asks)."""
    extensions = preset.extra.get("extensions") if preset is not None else None
    raw = extensions.get("regex_scripts") if isinstance(extensions, dict) else None
    if preset is None or not isinstance(raw, list):
        return [], []
    scripts: list[RegexScript] = []
    notes: list[str] = []
    for index, item in enumerate(raw):
        where = f"preset {preset.name!r}: extensions.regex_scripts[{index}]"
        try:
            scripts += parse_regex_scripts([item], where)
        except BadInput as error:
            notes.append(f"regex: {error.message}; this preset script is not used")
    return scripts, notes


def _config_regex(settings: Settings) -> list[RegexScript]:
    """The global scripts of the config's ``pipeline.regex_scripts`` files, in order."""
    scripts: list[RegexScript] = []
    for path in settings.pipeline.regex_scripts:
        scripts += load_regex_scripts(Path(path).expanduser())
    return scripts


def _missing_world(card: Card, worlds: Sequence[Lorebook], lang: str = "en") -> list[str]:
    """A hint naming the world the card links (``data.extensions.world``) when it was not
    given: SillyTavern loads that world with the card. In the story's language."""
    linked = linked_world(card)
    if not linked or any(w.name.strip() == linked for w in worlds):
        return []
    has_book = card.character_book is not None and bool(card.character_book.entries)
    return [t("opening.missing_world_book" if has_book else "opening.missing_world_none", lang,
              world=repr(linked), file=f"{linked}.json")]


def _persona(persona: str | Persona | None, user_name: str | None) -> Persona:
    if isinstance(persona, Persona):
        return persona if not user_name else Persona(user_name, persona.description)
    if persona:
        return load_persona(persona, user_name)
    return Persona(name=user_name or "User")


def _lore_problems(
    entries: list[LoreEntry], settings: Settings, persona: Persona, card: Card
) -> list[str]:
    lore: dict[str, Any] = settings.lore
    index = index_for(entries, LoreSettings.from_dict(lore), (persona.name or "User", card.name))
    return [f"lore: {problem}" for problem in index.problems]
