"""Options that ``run`` and ``replay`` share (architecture §2), declared once, with the
metavars ``--help`` shows (``FILE``, ``NAME``; not Typer's ``<list[Path]>``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

Opt = typer.Option

Lorebooks = Annotated[
    list[Path] | None, Opt("--lorebook", "-l", metavar="FILE", help="A world file (repeatable).")
]
Preset = Annotated[Path | None, Opt("--preset", metavar="FILE", help="A Chat Completion preset.")]
Persona = Annotated[
    str | None, Opt("--persona", metavar="TEXT|FILE", help="Your persona: text or a file.")
]
Profile = Annotated[str | None, Opt("--profile", metavar="NAME", help="A backend profile.")]
Provider = Annotated[
    str | None, Opt("--provider", metavar="NAME", help="openai, anthropic or local.")
]
BaseUrl = Annotated[str | None, Opt("--base-url", metavar="URL", help="The provider's base URL.")]
Model = Annotated[str | None, Opt("--model", metavar="NAME", help="The model name.")]
ApiKeyEnv = Annotated[
    str | None,
    Opt("--api-key-env", metavar="VAR", help="The environment variable holding the key."),
]
Mode = Annotated[
    str | None, Opt("--mode", metavar="MODE", help="auto, serial, merged or parallel.")
]
Lang = Annotated[str | None, Opt("--lang", metavar="LANG", help="auto, zh or en.")]
NoColor = Annotated[bool, Opt("--no-color", help="Plain output without colour.")]


def text(path: Path | None) -> str | None:
    """A path option as the string PlayOptions keeps (None stays None)."""
    return str(path) if path is not None else None
