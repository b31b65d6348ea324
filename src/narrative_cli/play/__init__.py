"""play stage: a story tied to the session store, and the slash commands that drive it."""

from __future__ import annotations

from narrative_cli.play.controller import Failure, PlaySession, SwipeInfo
from narrative_cli.play.options import PlayOptions

__all__ = ["Failure", "PlayOptions", "PlaySession", "SwipeInfo"]
