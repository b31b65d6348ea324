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

from narrative_cli.errors import BadInput


def editor_command() -> list[str] | None:
    """The editor command from ``$VISUAL`` or ``$EDITOR``; None when neither is set."""
    for name in ("VISUAL", "EDITOR"):
        value = os.environ.get(name, "").strip()
        if value:
            return shlex.split(value)
    return None


def edit_text(text: str, inline_hint: str) -> str:
    """``text`` as the player left it in their editor (the trailing newline removed)."""
    command = editor_command()
    if not command:
        raise BadInput("no editor: set $EDITOR (or $VISUAL)", hint=inline_hint)
    with tempfile.TemporaryDirectory(prefix="narrative-edit-") as folder:
        path = Path(folder) / "edit.md"
        path.write_text(text + "\n", encoding="utf-8")
        try:
            done = subprocess.run([*command, str(path)], check=False)
        except OSError as error:
            raise BadInput(f"cannot start the editor {command[0]!r}: {error.strerror}",
                           hint=inline_hint) from None  # fmt: skip
        if done.returncode != 0:
            raise BadInput(f"the editor {command[0]!r} exited with {done.returncode}; "
                           "nothing changed", hint=inline_hint)  # fmt: skip
        return path.read_text(encoding="utf-8", errors="replace").removesuffix("\n")
