"""`narrative sessions list|show|export|import|rename|delete`: the saved sessions."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from narrative_cli.cli.help import SETUP, NarrativeCommand, example, group

if TYPE_CHECKING:
    from narrative_cli.store.sessions import SessionStore

F = TypeVar("F", bound=Callable[..., Any])
sessions_app = group("sessions", "List, show, export, import and delete saved sessions.")

SessionRef = Annotated[
    str, typer.Argument(metavar="SESSION", help="Session id (or its name, when unique).")
]


class ExportFormat(str, Enum):
    jsonl = "jsonl"
    json = "json"


def register(app: typer.Typer) -> None:
    """Add the `sessions` command group to the root app."""
    app.add_typer(sessions_app, name="sessions", rich_help_panel=SETUP)


def _command(name: str, *examples: str) -> Callable[[F], F]:
    """``@sessions_app.command(name)`` with our help formatting and an example."""
    return sessions_app.command(name, cls=NarrativeCommand, epilog=example(*examples))


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
def sessions_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List saved sessions, most recently played first."""
    from narrative_cli.ui.sessions_view import render_sessions

    with _store() as store:
        render_sessions(store.list_sessions(), as_json=as_json)


@_command("show", "narrative sessions show 3 --full")
def sessions_show(
    session: SessionRef,
    full: Annotated[bool, typer.Option("--full", help="Print whole texts, not previews.")] = False,
) -> None:
    """Show a session and its turns."""
    from narrative_cli.ui.sessions_view import render_session

    with _store() as store:
        info = store.find(session)
        render_session(info, store.turns(info.id), full=full)


@_command("export", "narrative sessions export 3 rainy-night.jsonl")
def sessions_export(
    session: SessionRef,
    file: Annotated[Path, typer.Argument(metavar="FILE", help="Where to write the export.")],
    fmt: Annotated[
        ExportFormat | None,
        typer.Option(
            "--format",
            metavar="jsonl|json",
            help="jsonl: a SillyTavern chat; json: everything. "
            "Default: from FILE's suffix, else jsonl.",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite FILE if it exists.")
    ] = False,
) -> None:
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
def sessions_import(
    file: Annotated[Path | None, typer.Argument(
        metavar="FILE", help="A SillyTavern chat (.jsonl); with --group, default: its open chat.",
        show_default=False)] = None,
    card: Annotated[
        Path | None,
        typer.Option("--card", metavar="CARD", help="The card the chat was played with."),
    ] = None,
    group: Annotated[str | None, typer.Option(
        "--group", metavar="GROUP",
        help="A SillyTavern group file (or a group's name, with --st-data): FILE is its chat.",
    )] = None,
    st_data: Annotated[Path | None, typer.Option(
        "--st-data", metavar="DIR", help="SillyTavern's user data folder, for --group.")] = None,
    name: Annotated[
        str | None, typer.Option("--name", metavar="NAME", help="Name (default: FILE).")
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", metavar="N", help="Seed for dice and rolls.")
    ] = None,
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
def sessions_rename(
    session: SessionRef,
    name: Annotated[str, typer.Argument(metavar="NAME", help="The new name.")],
) -> None:
    """Give a session another name."""
    from narrative_cli.ui.sessions_view import render_renamed

    with _store() as store:
        info = store.find(session)
        store.rename(info.id, name)
        render_renamed(info, store.session(info.id).name)


@_command("delete", "narrative sessions delete 3 --yes")
def sessions_delete(
    session: SessionRef,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete a session and all its turns (branches made from it stay)."""
    from narrative_cli.ui.sessions_view import render_deleted

    with _store() as store:
        info = store.find(session)
        if not yes:
            question = f"Delete session {info.id} ({info.name}, turns 0..{info.last_turn})?"
            typer.confirm(question, abort=True)
        store.delete(info.id)
        render_deleted(info)
