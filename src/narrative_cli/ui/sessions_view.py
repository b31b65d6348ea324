"""Rich rendering of saved sessions: the list, one session's turns, import and export notes.

No story is open here, so the words follow ``--lang``, else the locale (``i18n.help_lang``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from narrative_cli.i18n import help_lang, t
from narrative_cli.ui.console import console as safe_console
from narrative_cli.ui.console import safe_markup
from narrative_cli.ui.safe import safe_json

if TYPE_CHECKING:  # the store's row types, for annotations only: ui/ never runs store code
    from narrative_cli.store.models import SessionInfo, TurnView

PREVIEW = 60


def _lang() -> str:
    import sys

    return help_lang(sys.argv[1:])


def _console(stderr: bool = False) -> Console:
    return safe_console(highlight=False, soft_wrap=False, stderr=stderr)


def render_sessions(sessions: Sequence[SessionInfo], *, as_json: bool = False) -> None:
    """The session list: id, name, character, turns, last played."""
    if as_json:
        listed = [_session_json(s) for s in sessions]
        print(safe_json(json.dumps(listed, ensure_ascii=False, indent=2)))
        return
    console = _console()
    lang = _lang()
    if not sessions:
        console.print(t("sessions.none", lang))
        return
    from narrative_cli.ui.rows import rows_table

    table = Table(title=t("sessions.title", lang), title_justify="left")
    columns = ("id", "name", "character", "turns", "last_played", "card")
    headers = [t(f"sessions.{column}", lang) for column in columns]
    for column, header in zip(columns, headers, strict=True):
        table.add_column(header, no_wrap=column in ("id", "turns", "last_played"))
    stacked = []  # a narrow terminal: one block per session, nothing cut
    for info in sessions:
        row = [str(info.id), info.name, info.character_name or "-",
               str(max(info.last_turn, 0)), _when(info.updated_at), _card(info)]  # fmt: skip
        table.add_row(row[0], *(safe_markup(cell) for cell in row[1:3]), *row[3:5],
                      safe_markup(row[5]))  # fmt: skip
        stacked.append([f"{row[0]} {row[1]}", *row[2:]])
    console.print(rows_table(t("sessions.title", lang), [headers[1], *headers[2:]], stacked,
                             table))  # fmt: skip


def render_session(info: SessionInfo, turns: Sequence[TurnView], *, full: bool = False) -> None:
    """One session: its header, then each turn's input and reply (swipe k of n)."""
    from narrative_cli.pipeline.story import PlayedTurn

    console = _console()
    lang = _lang()
    head = t("sessions.session", lang, id=info.id)
    console.print(f"[bold]{safe_markup(head)}[/bold]: {safe_markup(info.name)}")
    for line in _header_lines(info, lang):
        console.print(f"  {safe_markup(line)}")
    table = Table(show_lines=full)
    table.add_column(t("sessions.turn", lang), justify="right", no_wrap=True)
    table.add_column(t("sessions.swipe", lang), no_wrap=True)
    table.add_column(safe_markup(info.user_name or t("sessions.user", lang)))
    table.add_column(safe_markup(info.character_name or t("sessions.reply", lang)))
    for turn in turns:
        played = PlayedTurn.from_record(turn.record)
        user = "" if turn.number == 0 else _text(played.user_input, full)
        reply = _text(played.narrative, full)
        swipe = f"{turn.swipe_id + 1}/{turn.swipe_count}"
        table.add_row(str(turn.number), swipe, safe_markup(user), safe_markup(reply))
    console.print(table)


def render_exported(path: str, count: int, what: str) -> None:
    """One line: where the export went and how much it holds."""
    lang = _lang()
    what = t("export.turns" if what == "turns" else "export.messages", lang)
    _console().print(safe_markup(t("sessions.wrote", lang, count=count, what=what, path=path)))


def render_imported(
    info: SessionInfo, swipes: int, restored: bool, warnings: Sequence[str]
) -> None:
    """The new session's id and size, then any warnings (on stderr)."""
    lang = _lang()
    state = t("sessions.restored" if restored else "sessions.fresh", lang)
    console = _console()
    console.print(safe_markup(t("sessions.imported", lang, id=info.id, name=info.name,
                                last=info.last_turn, swipes=swipes, state=state)))  # fmt: skip
    console.print(t("sessions.continue", lang, id=info.id))
    errors = _console(stderr=True)
    for warning in warnings:
        errors.print(f"{t('sessions.warning', lang)}{safe_markup(warning)}")


def render_deleted(info: SessionInfo) -> None:
    _console().print(safe_markup(t("sessions.deleted", _lang(), id=info.id, name=info.name)))


def render_renamed(info: SessionInfo, name: str) -> None:
    _console().print(safe_markup(t("sessions.renamed", _lang(), id=info.id, name=name)))


def _header_lines(info: SessionInfo, lang: str = "en") -> list[str]:
    lines = [
        t("sessions.card_line", lang, path=info.card_path, hash=info.card_hash[:19]),
        t("sessions.turns_line", lang, last=info.last_turn, seed=info.seed,
          greeting=info.greeting_index),
        t("sessions.dates_line", lang, started=_when(info.created_at),
          played=_when(info.updated_at)),
    ]  # fmt: skip
    lines.extend(t("sessions.lore_line", lang, path=ref.path, hash=ref.hash[:19])
                 for ref in info.lore)  # fmt: skip
    if info.parent_turn is not None:
        parent = (t("sessions.parent", lang, id=info.parent_id) if info.parent_id is not None
                  else t("sessions.parent_deleted", lang))  # fmt: skip
        lines.append(t("sessions.branched", lang, parent=parent, turn=info.parent_turn))
    return lines


def _session_json(info: SessionInfo) -> dict[str, Any]:
    data = asdict(info)
    data["lore"] = [asdict(ref) for ref in info.lore]
    return data


def _card(info: SessionInfo) -> str:
    return info.card_path.replace("\\", "/").rsplit("/", 1)[-1]


def _when(stamp: str) -> str:
    return stamp[:16].replace("T", " ")


def _text(value: Any, full: bool) -> str:
    text = "" if value is None else str(value)
    if full:
        return text.strip()
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW else flat[: PREVIEW - 1] + "…"
