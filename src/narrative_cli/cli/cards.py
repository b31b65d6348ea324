"""``narrative cards --st-data DIR``: the characters of a SillyTavern user data folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from narrative_cli.cli.help import PLAY, NarrativeCommand, example


def register(app: typer.Typer) -> None:
    """Add the ``cards`` command to the root app."""
    app.command(
        "cards",
        cls=NarrativeCommand,
        rich_help_panel=PLAY,
        epilog=example("narrative cards --st-data ~/SillyTavern/data/default-user"),
    )(cards_command)


def cards_command(
    st_data: Annotated[Path, typer.Option(
        "--st-data", metavar="DIR",
        help="SillyTavern's user data folder (e.g. data/default-user).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the list as JSON.")] = False,
) -> None:
    """List the characters of a SillyTavern data folder: name, file and linked world.

    Play one with ``narrative run NAME --st-data DIR``."""
    import json

    from narrative_cli.i18n import choose, t
    from narrative_cli.load import st_data as folder

    root = folder.check_folder(st_data)
    refs, problems = folder.characters(root)
    if as_json:
        rows = [{"name": r.name, "file": str(r.path), "world": r.world or None,
                 "world_found": r.world_found} for r in refs]
        typer.echo(json.dumps({"characters": rows, "problems": problems}, ensure_ascii=False,
                              indent=2))
        return
    lang = choose(None)  # many cards, no story: the locale chooses
    for ref in refs:
        world = ""
        if ref.world:
            world = t("cards.world", lang, world=ref.world) + (
                "" if ref.world_found else t("cards.not_in_worlds", lang))
        typer.echo(f"{ref.name}  [{ref.path.name}]{world}")
    if not refs:
        typer.echo(t("cards.none", lang, path=root / "characters"))
    for problem in problems:
        typer.echo(f"! {problem}", err=True)
