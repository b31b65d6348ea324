"""The REPL's keys for ``/help`` (#18): (key, what it does), from the message catalogs."""

from __future__ import annotations

from narrative_cli.i18n import t

KEYS = ("enter", "newline", "backslash", "editor", "ctrl_c", "ctrl_d", "typeahead", "tab",
        "history")  # fmt: skip


def key_rows(lang: str) -> list[tuple[str, str]]:
    """The rows of the keys table of ``/help`` in ``lang``."""
    return [
        (t("help.typing" if key == "typeahead" else f"help.keyname_{key}", lang),
         t(f"help.key_{key}", lang))
        for key in KEYS
    ]  # fmt: skip
