"""The first variables of an MVU card, as MagVarUpdate's initCheck builds them at the greeting.

``initialise(entries, greeting)``:

1. every lore entry whose comment contains ``[initvar]`` (any case), **enabled or not** (cards
   ship them disabled so they never reach a prompt; MVU reads them anyway), in lore order:
   the content inside an ``<initvar>`` wrapper or a code fence is read, ``{{user}}``/``<user>``
   and the character's name filled in, parsed as YAML, JSON or JSON5 (``mvu_values.parse_text``)
   and merged into the previous ones (objects key by key, arrays replaced);
2. the schema is built from the ``$meta`` rules (``mvu_schema``) and the ``$meta`` markers are
   removed from the variables;
3. an ``<initvar>`` block in the greeting replaces those variables (MVU: the greeting's block
   wins over the lore), and the greeting's own update commands are applied.

As in MVU, an entry that cannot be parsed stops the lore's variables (MVU throws for the whole
lorebook); the problem names the entry. An entry whose text parses to something that is not an
object (the older extension's indented ``key: value`` text with full-width colons) is read with
``state.initvar`` instead, and said so.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from narrative_cli.domain import LoreEntry
from narrative_cli.errors import LorebookError
from narrative_cli.i18n import t
from narrative_cli.lore.routing import initvar_entries, is_initvar
from narrative_cli.safetext import MAX_JSON_DEPTH, json_depth
from narrative_cli.state.mvu_data import MvuData, UpdateResult, may_update, unchanged
from narrative_cli.state.mvu_paths import merge_replacing_arrays
from narrative_cli.state.mvu_schema import clean_up_metadata, generate_schema, root_flags
from narrative_cli.state.mvu_values import (
    TextParseError,
    has_nonfinite,
    parse_text,
    substitute_macros,
)

__all__ = ["InitResult", "initialise", "initvar_entries", "is_initvar"]

_XML = re.compile(r".*<initvar>.*\n([\s\S]*)\n.*</initvar>.*", re.MULTILINE)
_FENCE = re.compile(r"```.*\n([\s\S]*)\n```", re.MULTILINE)
_GREETING_BLOCK = re.compile(r"<(initvar)>(?:\s*```.*)?([\s\S]*?)(?:```\s*)?</\1>", re.IGNORECASE)
BOOK = "character"


@dataclass
class InitResult:
    """The variables after the greeting, the entries read, and what went wrong (one line each)."""

    data: MvuData
    entries: list[LoreEntry] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    greeting_update: UpdateResult | None = None
    notes: list[str] = field(default_factory=list)


def initialise(
    entries: Sequence[LoreEntry],
    greeting: str = "",
    *,
    user: str = "User",
    char: str = "Char",
    lang: str = "zh",
) -> InitResult:
    """The MVU variables at the greeting (see the module doc)."""
    result = InitResult(MvuData(initialized_lorebooks={BOOK: []}))
    merged: dict[str, Any] = {}
    try:
        for entry in initvar_entries(entries):
            parsed = _read_entry(entry, user, char, result, lang)
            result.entries.append(entry)
            if parsed:
                merge_replacing_arrays(merged, parsed)
    except LorebookError as problem:
        result.problems.append(str(problem))
        merged = {}
    data = result.data
    data.stat_data = merged
    schema = generate_schema(copy.deepcopy(merged), None)
    schema.update(root_flags(merged))
    data.schema = schema
    clean_up_metadata(data.stat_data)
    _greeting_block(greeting, user, char, result, lang)
    update = _greeting_update(greeting, result.data, lang, user, char)
    result.data = update.data
    result.greeting_update = update
    return result


def _greeting_update(greeting: str, data: MvuData, lang: str, user: str, char: str
                     ) -> UpdateResult:
    """The greeting's own update commands applied; a greeting without any (most) costs none
    of the update engine. NaN in the variables goes to the engine too: it is never equal to
    itself, so the engine finds the variables changed and rebuilds the schema."""
    if not may_update(substitute_macros(greeting, user, char)) and not has_nonfinite(
        data.stat_data
    ):
        return unchanged(data)
    from narrative_cli.state.mvu_update import update_variables

    return update_variables(greeting, data, lang=lang, user=user, char=char)


def _read_entry(entry: LoreEntry, user: str, char: str, result: InitResult, lang: str) -> Any:
    content = entry.content
    # The markers first: on a long line without them, the patterns' leading ``.*`` would
    # try every start position (quadratic; a 200 KB entry took minutes).
    xml = _XML.search(content.strip()) if "<initvar>" in content else None
    if xml:
        content = xml.group(1)
    fence = _FENCE.search(content.strip()) if "```" in content else None
    if fence:
        content = fence.group(1)
    text = substitute_macros(content, user, char)
    label = t("mvu.initvar_label", lang, uid=entry.uid, comment=entry.comment.strip())
    try:
        parsed = parse_text(text)
        deep = json_depth(parsed) > MAX_JSON_DEPTH
    except TextParseError as problem:
        raise LorebookError(t("mvu.entry_problem", lang, label=label,
                              problem=_unparsed(problem, lang))) from None
    except RecursionError:
        deep = True
    if deep:  # every later walk of the tree would recurse as deep (issue 13)
        raise LorebookError(t("mvu.too_deep", lang, label=label, levels=MAX_JSON_DEPTH))
    if parsed is None or isinstance(parsed, (dict, list)):
        return saved_as_json(parsed)
    from narrative_cli.state.initvar import read_initvar  # the older text form: rare

    try:
        older = read_initvar(text)
    except LorebookError as problem:
        raise LorebookError(t("mvu.entry_problem", lang, label=label, problem=problem)) from None
    result.notes.append(t("mvu.read_as_text", lang, label=label))
    return older.variables


def saved_as_json(value: Any) -> Any:
    """``value`` as SillyTavern saves it: NaN and ±Infinity (JSON5 allows them) become null."""
    if isinstance(value, float) and has_nonfinite(value):
        return None
    if isinstance(value, dict):
        return {key: saved_as_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [saved_as_json(item) for item in value]
    return value


def _unparsed(problem: TextParseError, lang: str) -> str:
    """Why a text is not YAML/JSON/JSON5, in ``lang`` (the parser's detail as it wrote it)."""
    return t("mvu.not_parsed", lang, detail=problem.detail) if problem.detail else str(problem)


def _greeting_block(greeting: str, user: str, char: str, result: InitResult,
                    lang: str) -> None:
    """An ``<initvar>`` block in the greeting replaces the lore's variables."""
    override: dict[str, Any] = {}
    applied = False
    for match in _GREETING_BLOCK.finditer(greeting):
        try:
            parsed = parse_text(substitute_macros(match.group(2), user, char))
        except TextParseError as problem:
            result.problems.append(t("mvu.greeting_block", lang,
                                     problem=_unparsed(problem, lang)))
            continue
        if isinstance(parsed, dict):
            merge_replacing_arrays(override, saved_as_json(parsed))
            applied = True
    if applied:
        result.data.stat_data = override
        result.notes.append(t("mvu.greeting_replaces", lang))
