"""``narrative lore check``: a world-book author's test suite, run like CI.

A suite is a YAML file::

    card: lantern-keeper.png          # paths are relative to the suite file
    worlds: [extra-world.json]        # optional world files, added to the card's book
    settings: {depth: 2}              # optional lore settings (SillyTavern's names work too)
    user: User                        # optional {{user}} name
    cases:
      - name: the lantern room
        text: I climb to the lantern room.     # the newest user message
        chat: chats/evening.jsonl              # or: a SillyTavern chat to scan first
        messages:                              # or: messages, oldest first
          - {char: The keeper looks up.}
          - {user: Where is the key?}
        fires: [Lantern room, 12]              # entry titles (comment) or uids
        not_fires: [Storm]
        position: {Lantern room: after_char}   # optional: where a firing entry goes

``check_suite`` returns one ``CaseResult`` per case; a failure says what differs in words.
Every malformed part raises ``SuiteError`` (exit 2) naming the suite, the case and the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from narrative_cli.domain import LoreEntry
from narrative_cli.domain_chat import ChatMessage
from narrative_cli.errors import BadInput
from narrative_cli.i18n import t
from narrative_cli.load import load_card, load_chat, load_lorebook, select_lore
from narrative_cli.lore.engine import ActivationResult, LoreSettings, ScanContext
from narrative_cli.lore.reasons import reason_words
from narrative_cli.lore.report import scan_chat

POSITIONS = {
    "before_char": 0, "after_char": 1, "an_top": 2, "an_bottom": 3, "at_depth": 4,
    "em_top": 5, "em_bottom": 6, "outlet": 7,
}
_CASE_KEYS = {"name", "text", "chat", "messages", "fires", "not_fires", "position", "seed"}
_SUITE_KEYS = {"card", "worlds", "settings", "user", "cases"}


class SuiteError(BadInput):
    """A suite file that cannot be run; the message names the part."""


@dataclass
class CaseResult:
    name: str
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def load_suite(path: Path) -> dict[str, Any]:
    """The parsed suite, with the top-level shape checked."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SuiteError(f"{path}: cannot read the suite ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SuiteError(f"{path}: not valid YAML{line}: {problem}") from None
    if not isinstance(data, dict):
        raise SuiteError(f"{path}: a suite is a mapping with 'card' and 'cases'")
    unknown = sorted(set(map(str, data)) - _SUITE_KEYS)
    if unknown:
        known = ", ".join(sorted(_SUITE_KEYS))
        raise SuiteError(f"{path}: unknown field {unknown[0]!r} (use {known})")
    if not isinstance(data.get("card"), str):
        raise SuiteError(f"{path}: 'card' must name the card file")
    cases = data.get("cases")
    if not isinstance(cases, list) or not cases:
        raise SuiteError(f"{path}: 'cases' must be a non-empty list")
    return data


def check_suite(path: Path, lang: str | None = "en") -> list[CaseResult]:
    """Run every case of the suite at ``path``."""
    data = load_suite(path)
    base = path.parent
    card = load_card(base / data["card"])
    worlds_field = data.get("worlds") or []
    if not isinstance(worlds_field, list) or not all(isinstance(w, str) for w in worlds_field):
        raise SuiteError(f"{path}: 'worlds' must be a list of file names")
    worlds = [load_lorebook(base / name) for name in worlds_field]
    entries = select_lore(card, worlds).entries
    settings_field = data.get("settings") or {}
    if not isinstance(settings_field, dict):
        raise SuiteError(f"{path}: 'settings' must be a mapping")
    try:
        settings = LoreSettings.from_dict(settings_field)
    except BadInput as exc:
        raise SuiteError(f"{path}: settings: {exc}") from None
    user = str(data.get("user") or "User")
    context = ScanContext(user_name=user, char_name=card.name)
    results = []
    for number, raw in enumerate(data["cases"], 1):
        case = _case(path, number, raw)
        where = f"{path}: case {number} ({case['name']})"
        chat = _chat(where, base, case, user, card.name)
        result = scan_chat(entries, chat, str(case.get("text") or ""), settings, context,
                           int(case.get("seed") or 0))
        results.append(CaseResult(case["name"], _judge(where, case, entries, result, lang)))
    return results


def _case(path: Path, number: int, raw: object) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise SuiteError(f"{path}: case {number} must be a mapping")
    name = str(raw.get("name") or f"case {number}")
    where = f"{path}: case {number} ({name})"
    unknown = sorted(set(map(str, raw)) - _CASE_KEYS)
    if unknown:
        raise SuiteError(f"{where}: unknown field {unknown[0]!r}")
    if not any(raw.get(k) for k in ("text", "chat", "messages")):
        raise SuiteError(f"{where}: give 'text', 'chat' or 'messages' to scan")
    if raw.get("chat") and raw.get("messages"):
        raise SuiteError(f"{where}: give either 'chat' or 'messages', not both")
    for key in ("fires", "not_fires"):
        value = raw.get(key, [])
        if not isinstance(value, list):
            raise SuiteError(f"{where}: '{key}' must be a list of entry titles or uids")
    if not raw.get("fires") and not raw.get("not_fires"):
        raise SuiteError(f"{where}: say what should happen with 'fires' or 'not_fires'")
    position = raw.get("position", {})
    if not isinstance(position, dict):
        raise SuiteError(f"{where}: 'position' must map entries to a position")
    for ref, name_ in position.items():
        if name_ not in POSITIONS:
            raise SuiteError(f"{where}: position of {ref!r}: {name_!r} is not one of "
                             f"{', '.join(POSITIONS)}")
    return {**raw, "name": name}


def _chat(where: str, base: Path, case: dict[str, Any], user: str, char: str
          ) -> list[ChatMessage]:
    if case.get("chat"):
        return load_chat(base / str(case["chat"])).messages
    messages = []
    for index, item in enumerate(case.get("messages") or [], 1):
        if isinstance(item, dict) and len(item) == 1 and next(iter(item)) in ("user", "char"):
            who, text = next(iter(item.items()))
            messages.append(ChatMessage(name=user if who == "user" else char,
                                        is_user=who == "user", mes=str(text)))
        else:
            raise SuiteError(f"{where}: message {index} must be {{user: text}} or {{char: text}}")
    return messages


def resolve(where: str, ref: object, entries: list[LoreEntry]) -> list[LoreEntry]:
    """The entries a suite names: by title (comment), else by uid."""
    found = [e for e in entries if e.comment and e.comment == str(ref)]
    if not found:
        found = [e for e in entries if str(e.uid) == str(ref)]
    if not found:
        raise SuiteError(f"{where}: no entry is titled or numbered {ref!r}")
    return found


def _judge(where: str, case: dict[str, Any], entries: list[LoreEntry],
           result: ActivationResult, lang: str | None = "en") -> list[str]:
    """The case's failures as sentences in ``lang`` (reasons through ``reason_words``)."""
    fired = {id(a.entry): a for a in result.activated}
    why_not = {id(r.entry): r.reason for r in result.rejected}
    failures = []
    for ref in case.get("fires") or []:
        targets = resolve(where, ref, entries)
        if not any(id(e) in fired for e in targets):
            reason = next((reason_words(why_not[id(e)], lang) for e in targets
                           if id(e) in why_not), t("check.no_key", lang))
            failures.append(t("check.not_fired", lang, ref=repr(ref), reason=reason))
    for ref in case.get("not_fires") or []:
        for entry in resolve(where, ref, entries):
            if id(entry) in fired:
                reason = reason_words(fired[id(entry)].reason, lang)
                failures.append(t("check.fired", lang, ref=repr(ref), reason=reason))
    for ref, name in (case.get("position") or {}).items():
        for entry in resolve(where, ref, entries):
            if id(entry) in fired and entry.position != POSITIONS[name]:
                actual = next((k for k, v in POSITIONS.items() if v == entry.position), "none")
                failures.append(t("check.goes_to", lang, ref=repr(ref), name=name,
                                  actual=actual))
            elif id(entry) not in fired and ref not in (case.get("fires") or []):
                failures.append(t("check.at_not_fired", lang, ref=repr(ref), name=name))
    return failures
