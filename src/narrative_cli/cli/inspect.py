"""``narrative inspect``: a card's fields, greetings, token estimates, lore routes, tools, MVU."""

from __future__ import annotations

from pathlib import Path

import click

from narrative_cli.cli.errors import user_errors
from narrative_cli.cli.help import AUTHOR, argument, command, option
from narrative_cli.cli.types import PATH


def register(root: click.Group) -> None:
    """Add the ``inspect`` command to the root group."""
    root.add_command(inspect_command)


@command(
    "inspect",
    "narrative inspect sample_cards/lantern-keeper.png --lorebook sample_cards/sample-world.json",
    panel=AUTHOR,
)
@argument("card", type=PATH, metavar="CARD", help="Character card: PNG, JSON or CHARX.")
@option("--lorebook", "lorebook", type=PATH, multiple=True, metavar="FILE",
        help="World file to list too (repeatable).")
@option("--preset", "preset", type=PATH, metavar="FILE",
        help="Chat Completion preset to summarise.")
@option("--json", "as_json", is_flag=True, default=False, help="Print the report as JSON.")
def inspect_command(
    card: Path, lorebook: tuple[Path, ...], preset: Path | None, as_json: bool
) -> None:
    """Show a card: fields, greetings, token estimates, lorebook routes, tools, MVU, regex."""
    from narrative_cli.errors import spoken_in
    from narrative_cli.i18n import choose
    from narrative_cli.load import card_language, load_card, load_lorebook, load_preset
    from narrative_cli.play.inspect import inspect_report
    from narrative_cli.ui.inspect_view import render_inspect

    with user_errors():
        loaded = load_card(card)
        with spoken_in(choose(None, card_language(loaded))):  # a bad world or preset: the card's
            books = [load_lorebook(path) for path in lorebook or []]
            summarised = load_preset(preset) if preset else None
        lang = "en" if as_json else choose(None, card_language(loaded))  # --json: English
        report = inspect_report(loaded, books, summarised, lang)
    if as_json:
        import json

        from narrative_cli.ui.safe import safe_json

        click.echo(safe_json(json.dumps(report, ensure_ascii=False, indent=2)))
    else:
        render_inspect(report)
