"""Server-sent events: turn the lines of a ``text/event-stream`` body into events.

Follows the WHATWG rules that matter for LLM APIs: ``:`` comment lines are skipped (OpenRouter
keep-alives), several ``data:`` lines join with newlines, ``event:`` names the event
(Anthropic), one optional space after the colon is dropped, and a blank line ends an event.
An event still open at end of stream is delivered too (KoboldCpp ends ``[DONE]`` without a
blank line).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched event."""

    data: str
    event: str = "message"
    id: str | None = None


def iter_sse(lines: Iterable[str]) -> Iterator[SSEEvent]:
    """Events from already-split lines (``httpx.Response.iter_lines`` strips line ends)."""
    data: list[str] = []
    event = ""
    last_id: str | None = None
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                yield SSEEvent("\n".join(data), event or "message", last_id)
            data, event = [], ""
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
        elif name == "id":
            last_id = value
    if data:
        yield SSEEvent("\n".join(data), event or "message", last_id)
