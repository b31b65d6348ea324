"""``narrative run CARD``: play a story in the REPL (or line by line when stdin is not a TTY)."""

from __future__ import annotations

from pathlib import Path

import click

from narrative_cli.cli import options as opts
from narrative_cli.cli.collector import collector_on
from narrative_cli.cli.help import PLAY, argument, command, option
from narrative_cli.cli.types import PATH, WHOLE_NUMBER


def register(root: click.Group) -> None:
    """Add the ``run`` command to the root group."""
    root.add_command(run_command)


@command("run", "narrative run sample_cards/lantern-keeper.png --profile deepseek", panel=PLAY)
@argument("cards", nargs=-1, metavar="CARD...",
          help="The character card (PNG, JSON, CHARX, YAML); several cards play as a group.")
@option("--group", "group", metavar="FILE|NAME",
        help="A SillyTavern group file to play (or a group's name, with --st-data).")
@opts.LOREBOOKS
@opts.PRESET
@opts.PERSONA
@option("--user-name", "user_name", metavar="NAME", help="Your name ({{user}}).")
@opts.PROFILE
@opts.PROVIDER
@opts.BASE_URL
@opts.MODEL
@opts.API_KEY_ENV
@option("--trace", "trace", type=PATH, metavar="DIR", help="Write every model call to DIR.")
@option("--seed", "seed", type=WHOLE_NUMBER, metavar="N", help="Seed for dice and lore rolls.")
@opts.MODE
@opts.LANG
@option("--session", "session", metavar="NAME",
        help="Name the session (resumes it if it exists).")
@option("--resume", "resume", metavar="ID", help="Resume session ID (or name).")
@option("-c", "--continue", "continue_last", is_flag=True, default=False,
        help="Continue the last played session (of CARD, if given).")
@option("--greeting", "greeting", type=WHOLE_NUMBER, metavar="N", help="Start with greeting N.")
@option("--st-data", "st_data", type=PATH, metavar="DIR",
        help="SillyTavern's user data folder: CARD may be a character's name.")
@option("--catch-up/--no-catch-up", "catch_up", default=None,
        help="An imported chat: summarise its old turns first, or skip (default: ask).")
@opts.NO_COLOR
def run_command(
    cards: tuple[str, ...],
    group: str | None,
    lorebook: tuple[Path, ...],
    preset: Path | None,
    persona: str | None,
    user_name: str | None,
    profile: str | None,
    provider: str | None,
    base_url: str | None,
    model: str | None,
    api_key_env: str | None,
    trace: Path | None,
    seed: int | None,
    mode: str | None,
    lang: str | None,
    session: str | None,
    resume: str | None,
    continue_last: bool,
    greeting: int | None,
    st_data: Path | None,
    catch_up: bool | None,
    no_color: bool,
) -> None:
    """Play a character card turn by turn (REPL on a terminal, line mode otherwise)."""
    card, *members = cards or [""]
    if card and not group and Path(card).is_file():  # before the imports below: see play.warm
        from narrative_cli.play.warm import warm_up_for_file

        warm_up_for_file(card)
    from narrative_cli.play.launch import run_session
    from narrative_cli.play.options import PlayOptions
    from narrative_cli.ui.front import TerminalFront

    collector_on()  # after the pipeline's imports (cli/collector.py)
    options = PlayOptions(
        card=card,
        members=members,
        group=group,
        lorebooks=[str(p) for p in lorebook or []],
        preset=opts.text(preset),
        persona=persona,
        user_name=user_name,
        profile=profile,
        provider=provider,
        base_url=base_url,
        model=model,
        api_key_env=api_key_env,
        trace=opts.text(trace),
        seed=seed,
        mode=mode,
        lang=lang,
        session=session,
        resume=resume,
        greeting=greeting,
        st_data=opts.text(st_data),
        continue_last=continue_last,
        catch_up=catch_up,
    )
    if not card and not group and not resume and not continue_last:
        raise click.BadParameter(
            "give a CARD to play, --resume ID, or -c for the last session", param_hint="CARD"
        )
    raise SystemExit(run_session(options, TerminalFront.create(no_color=no_color)))
