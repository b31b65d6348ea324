"""Rich rendering of saved sessions: the list, one session's turns, import and export notes."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from narrative_cli.ui.console import console as safe_console
from narrative_cli.ui.console import safe_markup
from narrative_cli.ui.safe import safe_json

if TYPE_CHECKING:  # the store's row types, for annotations only: ui/ never runs store code
    from narrative_cli.store.models import SessionInfo, TurnView

PREVIEW = 60


def _console(stderr: bool = False) -> Console:
    return safe_console(highlight=False, soft_wrap=False, stderr=stderr)


def render_sessions(sessions: Sequence[SessionInfo], *, as_json: bool = False) -> None:
    """The session list: id, name, character, turns, last played."""
    if as_json:
        listed = [_session_json(s) for s in sessions]
        print(safe_json(json.dumps(listed, ensure_ascii=False, indent=2)))
        return
    console = _console()
    if not sessions:
        console.print("No saved sessions yet. Start one with `narrative run CARD`.")
        return
    table = Table(title="Sessions", title_justify="left")
    for column in ("id", "name", "character", "turns", "last played", "card"):
        table.add_column(column, no_wrap=column in ("id", "turns", "last played"))
    for info in sessions:
        table.add_row(
            str(info.id),
            safe_markup(info.name),
            safe_markup(info.character_name or "-"),
            str(max(info.last_turn, 0)),
            _when(info.updated_at),
            safe_markup(_card(info)),
        )
    console.print(table)


def render_session(info: SessionInfo, turns: Sequence[TurnView], *, full: bool = False) -> None:
    """One session: its header, then each turn's input and reply (swipe k of n)."""
    from narrative_cli.pipeline.story import PlayedTurn

    console = _console()
    console.print(f"[bold]Session {info.id}[/bold]: {safe_markup(info.name)}")
    for line in _header_lines(info):
        console.print(f"  {safe_markup(line)}")
    table = Table(show_lines=full)
    table.add_column("turn", justify="right", no_wrap=True)
    table.add_column("swipe", no_wrap=True)
    table.add_column(safe_markup(info.user_name or "user"))
    table.add_column(safe_markup(info.character_name or "reply"))
    for turn in turns:
        played = PlayedTurn.from_record(turn.record)
        user = "" if turn.number == 0 else _text(played.user_input, full)
        reply = _text(played.narrative, full)
        swipe = f"{turn.swipe_id + 1}/{turn.swipe_count}"
        table.add_row(str(turn.number), swipe, safe_markup(user), safe_markup(reply))
    console.print(table)


def render_exported(path: str, count: int, what: str) -> None:
    """One line: where the export went and how much it holds."""
    _console().print(f"Wrote {count} {what} to {safe_markup(path)}")


def render_imported(
    info: SessionInfo, swipes: int, restored: bool, warnings: Sequence[str]
) -> None:
    """The new session's id and size, then any warnings (on stderr)."""
    state = "its narrative-cli state restored" if restored else "fresh state"
    console = _console()
    console.print(
        f"Imported session {info.id} ({safe_markup(info.name)}): turns 0..{info.last_turn},"
        f" {swipes} swipes, {state}"
    )
    console.print(f"Continue with: narrative run --resume {info.id}")
    errors = _console(stderr=True)
    for warning in warnings:
        errors.print(f"warning: {safe_markup(warning)}")


def render_deleted(info: SessionInfo) -> None:
    _console().print(f"Deleted session {info.id} ({safe_markup(info.name)})")


def render_renamed(info: SessionInfo, name: str) -> None:
    _console().print(f"Renamed session {info.id} to {safe_markup(name)}")


def _header_lines(info: SessionInfo) -> list[str]:
    lines = [
        f"card: {info.card_path} ({info.card_hash[:19]})",
        f"turns: 0..{info.last_turn}   seed: {info.seed}   greeting: {info.greeting_index}",
        f"started: {_when(info.created_at)}   last played: {_when(info.updated_at)}",
    ]
    lines.extend(f"lorebook: {ref.path} ({ref.hash[:19]})" for ref in info.lore)
    if info.parent_turn is not None:
        parent = f"session {info.parent_id}" if info.parent_id is not None else "a deleted session"
        lines.append(f"branched from {parent} at turn {info.parent_turn}")
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
