"""``narrative lore test|check|lint``: author tools for lorebooks (the logic lives in lore/)."""

from __future__ import annotations

from pathlib import Path

import click

from narrative_cli.cli.help import AUTHOR, argument, command, group, option
from narrative_cli.cli.types import PATH, WHOLE_NUMBER

lore_group = group("lore", "Author tools for lorebooks.", AUTHOR)


def register(root: click.Group) -> None:
    """Add the ``lore`` command group to the root group."""
    root.add_command(lore_group)


@command(
    "test",
    'narrative lore test sample_cards/lantern-keeper.png "I trim the lamp in the fog"',
    parent=lore_group,
)
@argument("card", type=PATH, metavar="CARD", help="Character card: PNG, JSON or CHARX.")
@argument("text", default="", required=False, metavar="TEXT",
          help="The user's input to scan, as typed this turn.")
@option("--lorebook", "lorebook", type=PATH, multiple=True, metavar="FILE",
        help="World file to use (repeatable).")
@option("--json", "as_json", is_flag=True, default=False, help="Print the result as JSON.")
@option("--seed", "seed", type=WHOLE_NUMBER, default=0, metavar="N",
        help="Seed for probability and group rolls.")
@option("--user-name", "user_name", default="User", metavar="NAME", help="Name for {{user}}.")
@option("--chat", "chat", type=PATH, metavar="FILE",
        help="A SillyTavern chat (.jsonl) to scan first, as ST would.")
def lore_test_command(
    card: Path, text: str, lorebook: tuple[Path, ...], as_json: bool, seed: int,
    user_name: str, chat: Path | None,
) -> None:
    """Show which entries TEXT activates, why, where each is routed, and what was rejected.

    With --chat the whole chat is scanned turn by turn (sticky, cooldown and delay carried
    across its turns) and TEXT, if given, is the newest message."""
    from narrative_cli.cli.errors import user_errors
    from narrative_cli.config import load_settings
    from narrative_cli.errors import BadInput, worded
    from narrative_cli.i18n import choose
    from narrative_cli.load import card_language, load_card, load_lorebook
    from narrative_cli.lore.report import lore_test, report_dict

    with user_errors():
        if chat is None and not text.strip():
            raise worded(BadInput, "usage.lore_test_text")
        messages = None
        if chat is not None:
            from narrative_cli.load import load_chat  # the chat reader: only with --chat

            messages = load_chat(chat).messages
        settings = load_settings()
        worlds = [load_lorebook(path) for path in lorebook or []]
        source = settings.pipeline.worldbook_source
        loaded = load_card(card)
        lang = choose(None, card_language(loaded))
        outcome = lore_test(
            loaded,
            worlds,
            text,
            lore=settings.lore,
            source=source,
            seed=seed,
            user_name=user_name,
            chat=messages,
        )
    if as_json:
        import json

        from narrative_cli.ui.safe import safe_json, safe_text

        for problem in outcome.problems:
            click.echo(f"warning: {safe_text(problem)}", err=True)
        shown = json.dumps(report_dict(outcome.result), ensure_ascii=False, indent=2)
        click.echo(safe_json(shown))
        return
    from narrative_cli.ui.lore_view import render_lore_test

    render_lore_test(outcome.result, outcome.problems, lang=lang)


@command("check", "narrative lore check sample_cards/lantern-keeper.lore-tests.yaml",
         parent=lore_group)
@argument("suite", type=PATH, metavar="SUITE", help="A lore test suite (YAML): card, cases.")
def lore_check_command(suite: Path) -> None:
    """Run a world-book test suite: exit 1 if any case fails, 2 if the suite is malformed."""
    from narrative_cli.cli.errors import user_errors
    from narrative_cli.i18n import choose, t
    from narrative_cli.lore.suite import check_suite

    lang = choose(None)  # a suite may hold several cards: the locale chooses
    with user_errors():
        results = check_suite(suite, lang)
    failed = [result for result in results if not result.ok]
    for result in results:
        click.echo(f"{t('check.ok' if result.ok else 'check.fail', lang)} {result.name}")
        for failure in result.failures:
            click.echo(f"     {failure}")
    click.echo(t("check.summary", lang, passed=len(results) - len(failed), total=len(results)))
    if failed:
        raise click.exceptions.Exit(1)


@command("lint", "narrative lore lint sample_cards/lantern-keeper.png", parent=lore_group)
@argument("card", type=PATH, metavar="CARD", help="Character card: PNG, JSON or CHARX.")
@option("--lorebook", "lorebook", type=PATH, multiple=True, metavar="FILE",
        help="World file to lint too (repeatable).")
@option("--json", "as_json", is_flag=True, default=False, help="Print the result as JSON.")
def lore_lint_command(card: Path, lorebook: tuple[Path, ...], as_json: bool) -> None:
    """Find entries that can never fire, duplicates, budget and whole-word problems, and show
    each entry's token cost. Exit 1 when an entry has an error, 2 on bad input."""
    from narrative_cli.cli.errors import user_errors
    from narrative_cli.config import load_settings
    from narrative_cli.i18n import choose
    from narrative_cli.load import card_language, load_card, load_lorebook
    from narrative_cli.lore.lint import lint_card, report_json, report_lines

    with user_errors():
        settings = load_settings()
        loaded = load_card(card)
        report = lint_card(
            loaded, [load_lorebook(path) for path in lorebook or []], settings.lore
        )
    if as_json:
        import json

        lines = [json.dumps(report_json(report), ensure_ascii=False, indent=2)]
    else:
        import shutil

        # COLUMNS or the terminal's width; a pipe without COLUMNS: no wrapping (scripts)
        columns = shutil.get_terminal_size((0, 0)).columns or None
        lines = report_lines(report, choose(None, card_language(loaded)), columns)
    for line in lines:
        click.echo(line)
    if report.errors:
        raise click.exceptions.Exit(1)
