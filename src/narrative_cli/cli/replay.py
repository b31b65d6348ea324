"""``narrative replay LOG... --card CARD``: batch-replay chat logs (``--diff A B``: compare)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from narrative_cli.cli import options as opts
from narrative_cli.cli.help import AUTHOR, NarrativeCommand, example

Opt = typer.Option


def register(app: typer.Typer) -> None:
    """Add the ``replay`` command to the root app."""
    app.command(
        "replay",
        cls=NarrativeCommand,
        rich_help_panel=AUTHOR,
        epilog=example(
            "narrative replay chats/*.jsonl --card card.png --trace base/ --report before.json",
            "narrative replay chats/*.jsonl --card card.png --responses base/",
            "narrative replay --diff before.json after.json",
        ),
    )(replay_command)


def replay_command(
    logs: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="LOG...", help="SillyTavern chats (.jsonl) or narrative-cli exports to replay."
        ),
    ] = None,
    card: Annotated[
        list[Path] | None,
        Opt("--card", metavar="CARD",
            help="The character card the logs use (repeat it for a group chat's members)."),
    ] = None,
    lorebook: opts.Lorebooks = None,
    preset: opts.Preset = None,
    persona: opts.Persona = None,
    user_name: Annotated[
        str | None,
        Opt("--user-name", metavar="NAME", help="Your name ({{user}}); default: the log's."),
    ] = None,
    profile: opts.Profile = None,
    provider: opts.Provider = None,
    base_url: opts.BaseUrl = None,
    model: opts.Model = None,
    api_key_env: opts.ApiKeyEnv = None,
    trace: Annotated[
        Path | None,
        Opt(
            "--trace", metavar="DIR", help="Write every model call to DIR (one sub-folder per log)."
        ),
    ] = None,
    seed: Annotated[
        int | None,
        Opt("--seed", metavar="N", help="Seed for dice and lore rolls; default: from the log."),
    ] = None,
    mode: opts.Mode = None,
    lang: opts.Lang = None,
    responses: Annotated[
        Path | None,
        Opt(
            "--responses",
            metavar="DIR",
            help="Answer every call from this recorded trace (no model needed).",
        ),
    ] = None,
    jobs: Annotated[
        int, Opt("--jobs", "-j", metavar="N", help="Logs replayed at once.", min=1)
    ] = 1,
    rpm: Annotated[
        float | None,
        Opt(
            "--rpm", metavar="N", help="At most this many model calls a minute, all logs together."
        ),
    ] = None,
    report: Annotated[
        Path | None,
        Opt("--report", metavar="FILE", help="Write per-log, per-turn figures to FILE.json."),
    ] = None,
    force: Annotated[
        bool, Opt("--force", help="Let --report overwrite an existing file.")
    ] = False,
    diff: Annotated[
        tuple[Path, Path] | None,
        Opt(
            "--diff",
            metavar="A B",
            help="Compare two reports (A.json B.json) instead of replaying.",
        ),
    ] = None,
    prices: Annotated[
        Path | None,
        Opt("--prices", metavar="FILE", help="Prices per million tokens (YAML/JSON) for costs."),
    ] = None,
    no_color: opts.NoColor = False,
) -> None:
    """Replay the user turns of chat logs through the pipeline, or compare two reports."""
    from narrative_cli.play.options import PlayOptions
    from narrative_cli.replay.batch import ReplayRequest, run_diff, run_replay
    from narrative_cli.ui.replay_view import RichReplayView

    view = RichReplayView.create(no_color=no_color, lang=_view_lang(lang, card))
    if diff is not None:
        raise SystemExit(run_diff(diff[0], diff[1], view, prices=prices))
    if not logs or not card:
        raise typer.BadParameter("give LOG files and --card CARD (or --diff A.json B.json)")
    options = PlayOptions(
        card=str(card[0]), members=[str(p) for p in card[1:]],
        lorebooks=[str(p) for p in lorebook or []], preset=opts.text(preset),
        persona=persona, user_name=user_name, profile=profile, provider=provider,
        base_url=base_url, model=model, api_key_env=api_key_env, trace=opts.text(trace), seed=seed,
        mode=mode, lang=lang,
    )  # fmt: skip
    request = ReplayRequest(
        [str(p) for p in logs],
        options,
        opts.text(responses),
        jobs,
        rpm,
        opts.text(report),
        prices,
        force,
    )
    from narrative_cli.cli.errors import user_errors

    with user_errors():
        code = run_replay(request, view)
    raise SystemExit(code)


def _view_lang(flag: str | None, cards: list[Path] | None) -> str:
    """The report's language: ``--lang``, then the (first) card's language, then the locale.
    A card that does not load leaves the choice to the locale; ``run_replay`` reports it."""
    from narrative_cli.i18n import LANGS, choose

    if flag in LANGS or not cards:
        return choose(flag)
    from narrative_cli.errors import NarrativeError
    from narrative_cli.load import card_language, load_card

    try:
        return choose(None, card_language(load_card(cards[0])))
    except (NarrativeError, OSError, ValueError):
        return choose(None)
