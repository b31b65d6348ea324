"""``$EDITOR`` on a piece of text (``/edit`` without text): the player's editor, a temp file.

``$VISUAL`` wins over ``$EDITOR`` (as git and prompt_toolkit read them). The command may
carry arguments (``code --wait``); the file is UTF-8 and ends with a newline, which is
removed again. No editor set, one that cannot start or one that exits with an error is a
``BadInput`` naming it, with the inline form as the hint.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path

from narrative_cli.errors import BadInput, worded


def editor_command() -> list[str] | None:
    """The editor command from ``$VISUAL`` or ``$EDITOR``; None when neither is set."""
    for name in ("VISUAL", "EDITOR"):
        value = os.environ.get(name, "").strip()
        if value:
            return shlex.split(value)
    return None


def _with_hint(error: BadInput, hint: str) -> BadInput:
    """``error`` with the caller's hint (already in the player's language)."""
    error.hint = hint
    return error


def edit_text(text: str, inline_hint: str) -> str:
    """``text`` as the player left it in their editor (the trailing newline removed)."""
    command = editor_command()
    if not command:
        raise _with_hint(worded(BadInput, "editor.none"), inline_hint)
    with tempfile.TemporaryDirectory(prefix="narrative-edit-") as folder:
        path = Path(folder) / "edit.md"
        path.write_text(text + "\n", encoding="utf-8")
        try:
            done = subprocess.run([*command, str(path)], check=False)
        except OSError as error:
            failed = worded(BadInput, "editor.cannot_start", editor=repr(command[0]),
                            reason=error.strerror)
            raise _with_hint(failed, inline_hint) from None
        if done.returncode != 0:
            failed = worded(BadInput, "editor.failed", editor=repr(command[0]),
                            code=done.returncode)
            raise _with_hint(failed, inline_hint)
        return path.read_text(encoding="utf-8", errors="replace").removesuffix("\n")
