"""play stage: a story tied to the session store, and the slash commands that drive it.

The names below load on first use (PEP 562): ``narrative inspect`` imports
``play.inspect`` only, and must not pay for the controller, the pipeline and HTTP.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from narrative_cli.play.controller import PlaySession, SwipeInfo
    from narrative_cli.play.options import PlayOptions
    from narrative_cli.play.recovery import Failure

__all__ = ["Failure", "PlayOptions", "PlaySession", "SwipeInfo"]
_HOMES = {"Failure": "recovery", "PlaySession": "controller", "SwipeInfo": "controller",
          "PlayOptions": "options"}  # fmt: skip


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
