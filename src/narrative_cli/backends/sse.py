"""Server-sent events: turn the lines of a ``text/event-stream`` body into events.

Follows the WHATWG rules that matter for LLM APIs: ``:`` comment lines are skipped (OpenRouter
keep-alives), several ``data:`` lines join with newlines, ``event:`` names the event
(Anthropic), one optional space after the colon is dropped, and a blank line ends an event.
An event still open at end of stream is delivered too (KoboldCpp ends ``[DONE]`` without a
blank line).

Lines end at CR, LF or CRLF only (``split_lines``): httpx's ``iter_lines`` also breaks at
U+0085, U+2028 and U+2029, which a server writing JSON with ``ensure_ascii=False`` sends raw
inside a token, cutting the event's JSON in two (found by the fuzz suite, issue #13).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched event."""

    data: str
    event: str = "message"
    id: str | None = None


def split_lines(chunks: Iterable[str]) -> Iterator[str]:
    """The lines of decoded text ``chunks``, without their CR, LF or CRLF ends.

    A line spread over many chunks is joined once, when its end arrives (linear time); a CR
    at the end of a chunk waits for the next one, which may start with the LF of a CRLF.
    """
    pending: list[str] = []
    for chunk in chunks:
        if not chunk:
            continue
        if pending and pending[-1].endswith("\r"):
            if chunk.startswith("\n"):
                chunk = chunk[1:]
            pending[-1] = pending[-1][:-1]
            yield "".join(pending)
            pending = []
        if not _LINE_END.search(chunk):
            pending.append(chunk)
            continue
        parts = _LINE_END.split("".join(pending) + chunk)
        tail = parts.pop()
        if chunk.endswith("\r"):  # maybe the first half of CRLF: keep it for the next chunk
            tail = parts.pop() + "\r"
        yield from parts
        pending = [tail] if tail else []
    rest = "".join(pending)
    if rest:
        yield rest[:-1] if rest.endswith("\r") else rest


def iter_sse(lines: Iterable[str]) -> Iterator[SSEEvent]:
    """Events from already-split lines (``split_lines`` strips line ends)."""
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
