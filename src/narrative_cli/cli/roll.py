"""``narrative roll``: the story engine's dice on their own."""

from __future__ import annotations

import json
import os
import secrets
from typing import Annotated

import typer

from narrative_cli.errors import EXIT_USAGE
from narrative_cli.rng import new_rng
from narrative_cli.tools.dice import DiceError, roll


def register(app: typer.Typer) -> None:
    app.command("roll")(roll_command)


def roll_command(
    expr: Annotated[
        list[str], typer.Argument(metavar="EXPR", help="Dice expression: 1d20+5, 2d6+1d4+3, d20.")
    ],
    mode: Annotated[
        str, typer.Option("--mode", "-m", help="normal, advantage, disadvantage or exploding.")
    ] = "normal",
    dc: Annotated[
        int | None, typer.Option("--dc", help="Difficulty: success when total ≥ DC.")
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed for a repeatable roll.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the roll as JSON.")] = False,
    lang: Annotated[str, typer.Option("--lang", help="auto, zh or en.")] = "auto",
) -> None:
    """Roll dice with the story engine: NdM±K sums, advantage, exploding dice, DC checks."""
    language = _language(lang)
    rng = new_rng(seed if seed is not None else secrets.randbits(64))
    try:
        rolled = roll(" ".join(expr), mode, dc, rng)
    except DiceError as error:
        typer.echo(f"error: {error.localized(language)}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    if as_json:
        data = {**rolled.to_dict(), "line": rolled.line(language)}
        typer.echo(json.dumps(data, ensure_ascii=False))
        return
    from narrative_cli.ui.dice_view import print_roll

    print_roll(rolled, language)


def _language(lang: str) -> str:
    if lang in ("zh", "en"):
        return lang
    if lang != "auto":
        raise typer.BadParameter(f"--lang must be auto, zh or en, not {lang!r}")
    locale = os.environ.get("LC_ALL") or os.environ.get("LANG") or ""
    return "zh" if locale.lower().startswith("zh") else "en"
