"""`narrative sessions list|show|export|import|rename|delete`: the saved sessions."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from narrative_cli.cli.help import SETUP, F, NarrativeCommand, argument, command, group, option
from narrative_cli.cli.types import PATH, WHOLE_NUMBER, OneOf

if TYPE_CHECKING:
    from narrative_cli.store.sessions import SessionStore

sessions_group = group("sessions", "List, show, export, import and delete saved sessions.", SETUP)


class ExportFormat(str, Enum):
    jsonl = "jsonl"
    json = "json"


def register(root: click.Group) -> None:
    """Add the `sessions` command group to the root group."""
    root.add_command(sessions_group)


def _command(name: str, *examples: str) -> Callable[[Callable[..., Any]], NarrativeCommand]:
    """``@sessions_group.command(name)`` with our help formatting and an example."""
    return command(name, *examples, parent=sessions_group)


def _session() -> Callable[[F], F]:
    return argument("session", metavar="SESSION", help="Session id (or its name, when unique).")


@contextmanager
def _store() -> Iterator[SessionStore]:
    """The default store, closed afterwards; errors reported as ``main`` would (CliRunner)."""
    from narrative_cli.cli.errors import user_errors
    from narrative_cli.store.sessions import SessionStore

    with user_errors():
        store = SessionStore()
        try:
            yield store
        finally:
            store.close()


@_command("list", "narrative sessions list --json")
@option("--json", "as_json", is_flag=True, default=False, help="Print JSON instead of a table.")
def sessions_list(as_json: bool) -> None:
    """List saved sessions, most recently played first."""
    from narrative_cli.ui.sessions_view import render_sessions

    with _store() as store:
        render_sessions(store.list_sessions(), as_json=as_json)


@_command("show", "narrative sessions show 3 --full")
@_session()
@option("--full", "full", is_flag=True, default=False, help="Print whole texts, not previews.")
def sessions_show(session: str, full: bool) -> None:
    """Show a session and its turns."""
    from narrative_cli.ui.sessions_view import render_session

    with _store() as store:
        info = store.find(session)
        render_session(info, store.turns(info.id), full=full)


@_command("export", "narrative sessions export 3 rainy-night.jsonl")
@_session()
@argument("file", type=PATH, metavar="FILE", help="Where to write the export.")
@option("--format", "fmt", type=OneOf(ExportFormat), metavar="jsonl|json",
        help="jsonl: a SillyTavern chat; json: everything. "
        "Default: from FILE's suffix, else jsonl.")
@option("--force", "force", is_flag=True, default=False, help="Overwrite FILE if it exists.")
def sessions_export(session: str, file: Path, fmt: ExportFormat | None, force: bool) -> None:
    """Export a session as a SillyTavern chat (.jsonl) or a full JSON dump.

    FILE is never the session database (nor a link to it); an existing FILE needs --force.
    """
    from narrative_cli.store.export import export_json, export_jsonl
    from narrative_cli.ui.sessions_view import render_exported

    chosen = fmt or (ExportFormat.json if file.suffix.lower() == ".json" else ExportFormat.jsonl)
    with _store() as store:
        info = store.find(session)
        if chosen is ExportFormat.json:
            count = export_json(store, info.id, file, force=force)
            render_exported(str(file), count, "turns")
        else:
            count = export_jsonl(store, info.id, file, force=force)
            render_exported(str(file), count, "messages")


@_command(
    "import",
    "narrative sessions import chat.jsonl --card card.png --name rainy-night",
    "narrative sessions import --group 'Tea Party' --st-data ~/SillyTavern/data/default-user",
)
@argument("file", type=PATH, required=False, metavar="FILE",
          help="A SillyTavern chat (.jsonl); with --group, default: its open chat.")
@option("--card", "card", type=PATH, metavar="CARD", help="The card the chat was played with.")
@option("--group", "group", metavar="GROUP",
        help="A SillyTavern group file (or a group's name, with --st-data): FILE is its chat.")
@option("--st-data", "st_data", type=PATH, metavar="DIR",
        help="SillyTavern's user data folder, for --group.")
@option("--name", "name", metavar="NAME", help="Name (default: FILE).")
@option("--seed", "seed", type=WHOLE_NUMBER, metavar="N", help="Seed for dice and rolls.")
def sessions_import(
    file: Path | None, card: Path | None, group: str | None, st_data: Path | None,
    name: str | None, seed: int | None,
) -> None:
    """Import a SillyTavern chat, or a group's chat, as a new session.

    Continue it with `narrative run --resume`."""
    from narrative_cli.store.group_import import import_any
    from narrative_cli.ui.sessions_view import render_imported

    with _store() as store:
        result = import_any(store, file, card=card, group=group, st_data=st_data, name=name,
                            seed=seed)
        info = store.session(result.session_id)
        render_imported(info, result.swipes, result.restored_state, result.warnings)


@_command("rename", "narrative sessions rename 3 rainy-night")
@_session()
@argument("name", metavar="NAME", help="The new name.")
def sessions_rename(session: str, name: str) -> None:
    """Give a session another name."""
    from narrative_cli.ui.sessions_view import render_renamed

    with _store() as store:
        info = store.find(session)
        store.rename(info.id, name)
        render_renamed(info, store.session(info.id).name)


@_command("delete", "narrative sessions delete 3 --yes")
@_session()
@option("--yes", "-y", "yes", is_flag=True, default=False, help="Do not ask for confirmation.")
def sessions_delete(session: str, yes: bool) -> None:
    """Delete a session and all its turns (branches made from it stay)."""
    from narrative_cli.ui.sessions_view import render_deleted

    with _store() as store:
        info = store.find(session)
        if not yes:
            question = f"Delete session {info.id} ({info.name}, turns 0..{info.last_turn})?"
            click.confirm(question, abort=True)
        store.delete(info.id)
        render_deleted(info)
