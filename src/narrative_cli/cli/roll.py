"""``narrative roll``: the story engine's dice and check systems on their own."""

from __future__ import annotations

import os
from typing import Any

import click

from narrative_cli.cli.help import PLAY, argument, command, option
from narrative_cli.cli.types import WHOLE_NUMBER

_EXPR_HELP = (
    "Dice expression: 1d20+5, 4d6kh3, 3d6*5, (2d6+6)*5, d%, 2d6!, 1d6r1, 4dF, 6d10>=8. "
    "Optional with --system coc7 (1d100)."
)


def register(root: click.Group) -> None:
    """Add the ``roll`` command to the root group."""
    root.add_command(roll_command)


@command(
    "roll",
    "narrative roll 2d6+1d4+3",
    "narrative roll 1d20+5 --mode advantage --dc 15",
    "narrative roll --system coc7 --skill 60 --difficulty hard",
    panel=PLAY,
)
@argument("expr", nargs=-1, metavar="EXPR", help=_EXPR_HELP)
@option("--mode", "-m", "mode", default="normal", metavar="MODE",
        help="normal, advantage, disadvantage or exploding.")
@option("--dc", "dc", type=WHOLE_NUMBER, metavar="N",
        help="Difficulty (AC for a dnd5e attack): success when total ≥ DC.")
@option("--system", "-s", "system", default="none", metavar="SYSTEM",
        help="none, dnd5e, coc7 or pool.")
@option("--kind", "kind", metavar="KIND", help="dnd5e: check, save, attack or damage.")
@option("--modifier", "modifier", type=WHOLE_NUMBER, metavar="N",
        help="dnd5e: added to the d20.")
@option("--crit", "crit", is_flag=True, default=False,
        help="dnd5e damage: a critical hit, dice doubled.")
@option("--skill", "skill", type=WHOLE_NUMBER, metavar="N", help="coc7: the skill value.")
@option("--difficulty", "difficulty", metavar="LEVEL", help="coc7: regular, hard or extreme.")
@option("--bonus", "bonus", type=WHOLE_NUMBER, default=0, metavar="N",
        help="coc7: bonus dice (0-2).")
@option("--penalty", "penalty", type=WHOLE_NUMBER, default=0, metavar="N",
        help="coc7: penalty dice (0-2).")
@option("--pushed", "pushed", is_flag=True, default=False, help="coc7: a pushed roll.")
@option("--need", "need", type=WHOLE_NUMBER, metavar="N", help="pool: successes needed.")
@option("--target", "target", type=WHOLE_NUMBER, metavar="N",
        help="pool: a die succeeds at this or more.")
@option("--seed", "seed", type=WHOLE_NUMBER, metavar="N", help="Seed for a repeatable roll.")
@option("--json", "as_json", is_flag=True, default=False, help="Print the roll as JSON.")
@option("--lang", "lang", default="auto", metavar="LANG", help="auto, zh or en.")
def roll_command(
    expr: tuple[str, ...],
    mode: str,
    dc: int | None,
    system: str,
    kind: str | None,
    modifier: int | None,
    crit: bool,
    skill: int | None,
    difficulty: str | None,
    bonus: int,
    penalty: int,
    pushed: bool,
    need: int | None,
    target: int | None,
    seed: int | None,
    as_json: bool,
    lang: str,
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
        click.echo(f"error: --system {system} does not use {names}", err=True)
        raise SystemExit(EXIT_USAGE)
    try:
        rolled = check(params, rng)
    except DiceError as error:
        click.echo(f"error: {error.localized(language)}", err=True)
        if error.caret():
            click.echo(error.caret(), err=True)
        raise SystemExit(EXIT_USAGE) from None
    if as_json:
        data = {**rolled.to_dict(), "line": rolled.line(language)}
        click.echo(json.dumps(data, ensure_ascii=False))
        return
    from narrative_cli.ui.dice_view import print_roll

    print_roll(rolled, language)


def _language(lang: str) -> str:
    if lang in ("zh", "en"):
        return lang
    if lang != "auto":
        raise click.BadParameter(f"--lang must be auto, zh or en, not {lang!r}")
    locale = os.environ.get("LC_ALL") or os.environ.get("LANG") or ""
    return "zh" if locale.lower().startswith("zh") else "en"
