"""``narrative run CARD``: play a story in the REPL (or line by line when stdin is not a TTY)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from narrative_cli.cli import options as opts
from narrative_cli.cli.help import PLAY, NarrativeCommand, example

Opt = typer.Option


def register(app: typer.Typer) -> None:
    """Add the ``run`` command to the root app."""
    app.command(
        "run",
        cls=NarrativeCommand,
        rich_help_panel=PLAY,
        epilog=example("narrative run sample_cards/lantern-keeper.png --profile deepseek"),
    )(run_command)


def run_command(
    cards: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="CARD...",
            help="The character card (PNG, JSON, CHARX, YAML); several cards play as a group.",
        ),
    ] = None,
    group: Annotated[
        str | None,
        Opt("--group", metavar="FILE|NAME",
            help="A SillyTavern group file to play (or a group's name, with --st-data)."),
    ] = None,
    lorebook: opts.Lorebooks = None,
    preset: opts.Preset = None,
    persona: opts.Persona = None,
    user_name: Annotated[
        str | None, Opt("--user-name", metavar="NAME", help="Your name ({{user}}).")
    ] = None,
    profile: opts.Profile = None,
    provider: opts.Provider = None,
    base_url: opts.BaseUrl = None,
    model: opts.Model = None,
    api_key_env: opts.ApiKeyEnv = None,
    trace: Annotated[
        Path | None, Opt("--trace", metavar="DIR", help="Write every model call to DIR.")
    ] = None,
    seed: Annotated[
        int | None, Opt("--seed", metavar="N", help="Seed for dice and lore rolls.")
    ] = None,
    mode: opts.Mode = None,
    lang: opts.Lang = None,
    session: Annotated[
        str | None,
        Opt("--session", metavar="NAME", help="Name the session (resumes it if it exists)."),
    ] = None,
    resume: Annotated[
        str | None, Opt("--resume", metavar="ID", help="Resume session ID (or name).")
    ] = None,
    continue_last: Annotated[
        bool,
        Opt("-c", "--continue", help="Continue the last played session (of CARD, if given)."),
    ] = False,
    greeting: Annotated[
        int | None, Opt("--greeting", metavar="N", help="Start with greeting N.")
    ] = None,
    st_data: Annotated[Path | None, Opt(
        "--st-data", metavar="DIR",
        help="SillyTavern's user data folder: CARD may be a character's name.")
    ] = None,
    catch_up: Annotated[bool | None, Opt(
        "--catch-up/--no-catch-up",
        help="An imported chat: summarise its old turns first, or skip (default: ask).")
    ] = None,
    no_color: opts.NoColor = False,
) -> None:
    """Play a character card turn by turn (REPL on a terminal, line mode otherwise)."""
    from narrative_cli.play.launch import run_session
    from narrative_cli.play.options import PlayOptions
    from narrative_cli.ui.front import TerminalFront

    card, *members = cards or [""]
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
        raise typer.BadParameter(
            "give a CARD to play, --resume ID, or -c for the last session", param_hint="CARD"
        )
    raise SystemExit(run_session(options, TerminalFront.create(no_color=no_color)))
