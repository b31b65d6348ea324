"""Writing a stored session to a file: the format from ``/export FORMAT`` or the file's suffix.

``json`` is the full dump, ``md``/``txt`` a transcript, anything else a SillyTavern chat. The
writers refuse the open database and any existing file unless ``force`` is given (issue 13).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from narrative_cli.errors import BadInput, worded
from narrative_cli.store import SessionStore


def export_session(
    store: SessionStore, session_id: int, path: str | Path, fmt: str | None = None,
    *, force: bool = False, usage: Mapping[str, Any] | None = None,
) -> tuple[int, str]:  # fmt: skip
    """Write session ``session_id`` to ``path``; how many of what (``turns``/``messages``).
    ``usage`` (tokens and money, ``play.costs.usage_metadata``) goes into the json and jsonl
    exports' metadata."""
    from narrative_cli.play.transcript import write_transcript
    from narrative_cli.store.export import export_json, export_jsonl

    target = Path(path).expanduser()
    fmt = fmt or target.suffix.lower().lstrip(".")
    try:
        if fmt == "json":
            return export_json(store, session_id, target, force=force, usage=usage), "turns"
        if fmt in ("md", "txt"):
            return write_transcript(store, session_id, fmt, target, force=force), "messages"
        return export_jsonl(store, session_id, target, force=force, usage=usage), "messages"
    except OSError as exc:
        raise worded(BadInput, "usage.cannot_write", where=target,
                     reason=exc.strerror or str(exc)) from None


def default_export_path(session_id: int, name: str, fmt: str) -> Path:
    """Where ``/export FORMAT`` writes without a file name: the session's id and name."""
    slug = re.sub(r"[^\w-]+", "-", name, flags=re.UNICODE).strip("-") or "story"
    return Path(f"session-{session_id}-{slug}.{fmt}")
