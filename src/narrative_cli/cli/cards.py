"""``narrative cards --st-data DIR``: the characters of a SillyTavern user data folder."""

from __future__ import annotations

from pathlib import Path

import click

from narrative_cli.cli.help import PLAY, command, option
from narrative_cli.cli.types import PATH


def register(root: click.Group) -> None:
    """Add the ``cards`` command to the root group."""
    root.add_command(cards_command)


@command("cards", "narrative cards --st-data ~/SillyTavern/data/default-user", panel=PLAY)
@option("--st-data", "st_data", type=PATH, required=True, metavar="DIR",
        help="SillyTavern's user data folder (e.g. data/default-user).")
@option("--json", "as_json", is_flag=True, default=False, help="Print the list as JSON.")
def cards_command(st_data: Path, as_json: bool) -> None:
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
        click.echo(json.dumps({"characters": rows, "problems": problems}, ensure_ascii=False,
                              indent=2))
        return
    lang = choose(None)  # many cards, no story: the locale chooses
    for ref in refs:
        world = ""
        if ref.world:
            world = t("cards.world", lang, world=ref.world) + (
                "" if ref.world_found else t("cards.not_in_worlds", lang))
        click.echo(f"{ref.name}  [{ref.path.name}]{world}")
    if not refs:
        click.echo(t("cards.none", lang, path=root / "characters"))
    for problem in problems:
        click.echo(f"! {problem}", err=True)
