"""``narrative replay LOG... --card CARD``: batch-replay chat logs (``--diff A B``: compare)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from narrative_cli.cli import options as opts
from narrative_cli.cli.collector import collector_on
from narrative_cli.cli.help import AUTHOR, argument, command, option
from narrative_cli.cli.types import DECIMAL, PATH, WHOLE_NUMBER, Whole

if TYPE_CHECKING:
    from narrative_cli.domain import Card


def register(root: click.Group) -> None:
    """Add the ``replay`` command to the root group."""
    root.add_command(replay_command)


@command(
    "replay",
    "narrative replay chats/*.jsonl --card card.png --trace base/ --report before.json",
    "narrative replay chats/*.jsonl --card card.png --responses base/",
    "narrative replay --diff before.json after.json",
    panel=AUTHOR,
)
@argument("logs", type=PATH, nargs=-1, metavar="LOG...",
          help="SillyTavern chats (.jsonl) or narrative-cli exports to replay.")
@option("--card", "card", type=PATH, multiple=True, metavar="CARD",
        help="The character card the logs use (repeat it for a group chat's members).")
@opts.LOREBOOKS
@opts.PRESET
@opts.PERSONA
@option("--user-name", "user_name", metavar="NAME",
        help="Your name ({{user}}); default: the log's.")
@opts.PROFILE
@opts.PROVIDER
@opts.BASE_URL
@opts.MODEL
@opts.API_KEY_ENV
@option("--trace", "trace", type=PATH, metavar="DIR",
        help="Write every model call to DIR (one sub-folder per log).")
@option("--seed", "seed", type=WHOLE_NUMBER, metavar="N",
        help="Seed for dice and lore rolls; default: from the log.")
@opts.MODE
@opts.LANG
@option("--responses", "responses", type=PATH, metavar="DIR",
        help="Answer every call from this recorded trace (no model needed).")
@option("--jobs", "-j", "jobs", type=Whole(min=1), default=1, metavar="N",
        help="Logs replayed at once.")
@option("--rpm", "rpm", type=DECIMAL, metavar="N",
        help="At most this many model calls a minute, all logs together.")
@option("--report", "report", type=PATH, metavar="FILE",
        help="Write per-log, per-turn figures to FILE.json.")
@option("--force", "force", is_flag=True, default=False,
        help="Let --report overwrite an existing file.")
@option("--diff", "diff", type=(PATH, PATH), metavar="A B",
        help="Compare two reports (A.json B.json) instead of replaying.")
@option("--prices", "prices", type=PATH, metavar="FILE",
        help="Prices per million tokens (YAML/JSON) for costs.")
@opts.NO_COLOR
def replay_command(
    logs: tuple[Path, ...],
    card: tuple[Path, ...],
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
    responses: Path | None,
    jobs: int,
    rpm: float | None,
    report: Path | None,
    force: bool,
    diff: tuple[Path, Path] | None,
    prices: Path | None,
    no_color: bool,
) -> None:
    """Replay the user turns of chat logs through the pipeline, or compare two reports."""
    from narrative_cli.play.warm import warm_up_for_file

    first = warm_up_for_file(str(card[0])) if card and not diff else None  # before the imports
    from narrative_cli.play.options import PlayOptions
    from narrative_cli.replay.batch import ReplayRequest, run_diff, run_replay
    from narrative_cli.ui.replay_view import RichReplayView

    collector_on()  # after the pipeline's imports (cli/collector.py)
    view = RichReplayView.create(no_color=no_color, lang=_view_lang(lang, card, first))
    if diff is not None:
        raise SystemExit(run_diff(diff[0], diff[1], view, prices=prices))
    if not logs or not card:
        raise click.BadParameter("give LOG files and --card CARD (or --diff A.json B.json)")
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


def _view_lang(flag: str | None, cards: tuple[Path, ...], first: Card | None) -> str:
    """The report's language: ``--lang``, then the (first) card's language, then the locale.
    ``first``: that card, read already (None when it does not load: the choice is left to the
    locale; ``run_replay`` reports it)."""
    from narrative_cli.i18n import LANGS, choose

    if flag in LANGS or not cards or first is None:
        return choose(flag)
    from narrative_cli.load import card_language

    return choose(None, card_language(first))
