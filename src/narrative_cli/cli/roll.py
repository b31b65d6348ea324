"""``narrative roll``: the story engine's dice and check systems on their own."""

from __future__ import annotations

import os
from typing import Annotated, Any

import typer

from narrative_cli.cli.help import PLAY, NarrativeCommand, example

_EXPR_HELP = (
    "Dice expression: 1d20+5, 4d6kh3, 3d6*5, (2d6+6)*5, d%, 2d6!, 1d6r1, 4dF, 6d10>=8. "
    "Optional with --system coc7 (1d100)."
)


def register(app: typer.Typer) -> None:
    app.command(
        "roll",
        cls=NarrativeCommand,
        rich_help_panel=PLAY,
        epilog=example(
            "narrative roll 2d6+1d4+3",
            "narrative roll 1d20+5 --mode advantage --dc 15",
            "narrative roll --system coc7 --skill 60 --difficulty hard",
        ),
    )(roll_command)


def roll_command(
    expr: Annotated[list[str] | None, typer.Argument(metavar="EXPR", help=_EXPR_HELP)] = None,
    mode: Annotated[
        str,
        typer.Option(
            "--mode", "-m", metavar="MODE", help="normal, advantage, disadvantage or exploding."
        ),
    ] = "normal",
    dc: Annotated[
        int | None,
        typer.Option(
            "--dc", metavar="N", help="Difficulty (AC for a dnd5e attack): success when total ≥ DC."
        ),
    ] = None,
    system: Annotated[
        str, typer.Option("--system", "-s", metavar="SYSTEM", help="none, dnd5e, coc7 or pool.")
    ] = "none",
    kind: Annotated[
        str | None,
        typer.Option("--kind", metavar="KIND", help="dnd5e: check, save, attack or damage."),
    ] = None,
    modifier: Annotated[
        int | None, typer.Option("--modifier", metavar="N", help="dnd5e: added to the d20.")
    ] = None,
    crit: Annotated[
        bool, typer.Option("--crit", help="dnd5e damage: a critical hit, dice doubled.")
    ] = False,
    skill: Annotated[
        int | None, typer.Option("--skill", metavar="N", help="coc7: the skill value.")
    ] = None,
    difficulty: Annotated[
        str | None,
        typer.Option("--difficulty", metavar="LEVEL", help="coc7: regular, hard or extreme."),
    ] = None,
    bonus: Annotated[int, typer.Option("--bonus", metavar="N", help="coc7: bonus dice (0-2).")] = 0,
    penalty: Annotated[
        int, typer.Option("--penalty", metavar="N", help="coc7: penalty dice (0-2).")
    ] = 0,
    pushed: Annotated[bool, typer.Option("--pushed", help="coc7: a pushed roll.")] = False,
    need: Annotated[
        int | None, typer.Option("--need", metavar="N", help="pool: successes needed.")
    ] = None,
    target: Annotated[
        int | None,
        typer.Option("--target", metavar="N", help="pool: a die succeeds at this or more."),
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", metavar="N", help="Seed for a repeatable roll.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the roll as JSON.")] = False,
    lang: Annotated[str, typer.Option("--lang", metavar="LANG", help="auto, zh or en.")] = "auto",
) -> None:
    """Roll dice with the story engine: the dice notation, DC checks, D&D 5e, CoC 7e, pools."""
    import json
    import secrets

    from narrative_cli.errors import EXIT_USAGE
    from narrative_cli.rng import new_rng
    from narrative_cli.tools.dice_checks import check, ignored_params
    from narrative_cli.tools.dice_notation import DiceError

    language = _language(lang)
    rng = new_rng(seed if seed is not None else secrets.randbits(64))
    params: dict[str, Any] = {
        "expr": " ".join(expr or []),
        "mode": mode,
        "dc": dc,
        "system": system,
        "kind": kind,
        "modifier": modifier,
        "critical": crit,
        "skill": skill,
        "difficulty": difficulty,
        "bonus": bonus,
        "penalty": penalty,
        "pushed": pushed,
        "need": need,
        "target": target,
    }
    ignored = ignored_params({**params, "system": system or "none"})
    if ignored:
        names = ", ".join("--" + ("crit" if n == "critical" else n) for n in ignored)
        typer.echo(f"error: --system {system} does not use {names}", err=True)
        raise SystemExit(EXIT_USAGE)
    try:
        rolled = check(params, rng)
    except DiceError as error:
        typer.echo(f"error: {error.localized(language)}", err=True)
        if error.caret():
            typer.echo(error.caret(), err=True)
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
