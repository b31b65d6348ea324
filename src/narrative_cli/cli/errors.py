"""The one place that turns a NarrativeError into what the user sees: one or two plain lines
on stderr and the error's exit code (``--debug`` lets the traceback through instead). The
``error:`` / ``hint:`` words follow the story's language when the error came from one (``--lang``,
then the card's), else ``--lang``, else the locale (``错误：`` / ``提示：``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from narrative_cli.errors import NarrativeError

options = {"debug": False}  # set by the root callback from --debug


def report_error(error: NarrativeError) -> None:
    """Print a NarrativeError as one or two plain lines on stderr, control sequences removed
    (messages quote provider replies and file contents)."""
    from narrative_cli.i18n import help_lang, t
    from narrative_cli.ui.safe import safe_text  # here, not at import: --help stays light

    # the story's language when the error came from one (``errors.spoken_in``: --lang, then
    # the card's language); else no story yet: --lang, else the locale
    lang = error.lang or help_lang(sys.argv[1:])
    sys.stderr.write(f"{t('error.prefix', lang)}{safe_text(error.text(lang))}\n")
    hint = error.hint_text(lang)
    if hint:
        sys.stderr.write(f"{t('hint.prefix', lang)}{safe_text(hint)}\n")


@contextmanager
def user_errors() -> Iterator[None]:
    """Report a NarrativeError and exit with its code. ``app.main`` does this for the console
    script; a command wraps its body in this too so it behaves the same under ``CliRunner``,
    which calls the Click group directly."""
    try:
        yield
    except NarrativeError as error:
        if options["debug"]:
            raise
        report_error(error)
        raise SystemExit(error.exit_code) from None
