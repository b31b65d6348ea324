"""Options that ``run`` and ``replay`` share (architecture §2), declared once, with the
metavars ``--help`` shows (``FILE``, ``NAME``)."""

from __future__ import annotations

from pathlib import Path

from narrative_cli.cli.help import option
from narrative_cli.cli.types import PATH

LOREBOOKS = option("--lorebook", "-l", "lorebook", type=PATH, multiple=True, metavar="FILE",
                   help="A world file (repeatable).")
PRESET = option("--preset", "preset", type=PATH, metavar="FILE", help="A Chat Completion preset.")
PERSONA = option("--persona", "persona", metavar="TEXT|FILE",
                 help="Your persona: text or a file.")
PROFILE = option("--profile", "profile", metavar="NAME", help="A backend profile.")
PROVIDER = option("--provider", "provider", metavar="NAME", help="openai, anthropic or local.")
BASE_URL = option("--base-url", "base_url", metavar="URL", help="The provider's base URL.")
MODEL = option("--model", "model", metavar="NAME", help="The model name.")
API_KEY_ENV = option("--api-key-env", "api_key_env", metavar="VAR",
                     help="The environment variable holding the key.")
MODE = option("--mode", "mode", metavar="MODE", help="auto, serial, merged or parallel.")
LANG = option("--lang", "lang", metavar="LANG", help="auto, zh or en.")
NO_COLOR = option("--no-color", "no_color", is_flag=True, default=False,
                  help="Plain output without colour.")


def text(path: Path | None) -> str | None:
    """A path option as the string PlayOptions keeps (None stays None)."""
    return str(path) if path is not None else None
