"""Role-play text as styled Rich ``Text``: actions, speech, bold, code and lists.

Role-play cards write ``*she lifts the lamp*``, ``"Who goes there?"`` (or “…” and 「…」),
``**bold**``, code fences and ``-`` lists; printed raw, the asterisks and fences are noise.
``StoryStyler`` turns finished lines into styled ``Text``:

- ``*action*`` italic (the asterisks dropped), ``**bold**`` bold (dropped), `` `code` ``;
- quoted speech coloured, the quotes kept (``"…"``, ``“…”``, ``「…」``, ``『…』``);
- a fenced block (```` ``` ````/``~~~``) in the code style, its fence lines dimmed, nothing
  inside it parsed;
- ``-``/``*``/``+`` list items with a bullet, numbered items with the number styled.

A marker only counts when its partner is on the same line, so a line cut in the middle of a
stream (``preview``) shows an unclosed ``*`` as it is until the partner arrives; the caller
re-renders the whole unfinished line each time, so a marker split across two chunks is never
drawn half-parsed. Only what is drawn changes: the stored text is never touched, and callers
print the raw text when colour is off (``NO_COLOR``, a pipe).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rich.text import Text

FENCE = re.compile(r"^\s*(```|~~~)")
BULLET = re.compile(r"^(\s*)([-*+])\s+(?=\S)")
NUMBER = re.compile(r"^(\s*)(\d{1,3}[.)])\s+(?=\S)")
QUOTES = {"“": "”", "「": "」", "『": "』", '"': '"'}


@dataclass
class _Line:
    """One line being scanned: the text drawn so far and the styled spans over it."""

    source: str
    out: list[str] = field(default_factory=list)
    spans: list[tuple[int, int, str]] = field(default_factory=list)
    open: dict[str, int] = field(default_factory=dict)
    closer: str | None = None  # the quote that ends the open speech

    @property
    def at(self) -> int:
        return len(self.out)

    def toggle(self, style: str) -> None:
        start = self.open.pop(style, None)
        if start is None:
            self.open[style] = self.at
        elif self.at > start:
            self.spans.append((start, self.at, style))

    def text(self) -> Text:
        text = Text("".join(self.out), style="story")
        for start, end, style in self.spans:
            text.stylize(style, start, end)
        return text


class StoryStyler:
    """Styles story text line by line; remembers whether a code fence is open."""

    def __init__(self) -> None:
        self.in_fence = False

    def lines(self, block: str) -> Text:
        """Finished lines (joined by newlines), styled; the fence state moves on."""
        parts = [self.line(line) for line in block.split("\n")]
        return Text("\n", style="story").join(parts)

    def preview(self, partial: str) -> Text:
        """An unfinished line, styled without changing the fence state."""
        in_fence = self.in_fence
        try:
            return self.line(partial)
        finally:
            self.in_fence = in_fence

    def line(self, line: str) -> Text:
        """One line, styled; a fence line opens or closes a code block."""
        if FENCE.match(line):
            self.in_fence = not self.in_fence
            return Text(line, style="story.fence")
        if self.in_fence:
            return Text(line, style="story.code")
        match = BULLET.match(line) or NUMBER.match(line)
        if not match:
            return inline(line)
        indent, mark = match.group(1), match.group(2)
        shown = "•" if mark in "-*+" else mark
        item = Text.assemble(indent, (shown, "story.bullet"), " ", style="story")
        item.append_text(inline(line[match.end() :]))
        return item


def inline(line: str) -> Text:
    """Actions, bold, inline code and quoted speech within one line."""
    scan = _Line(line)
    i = 0
    while i < len(line):
        i = _step(scan, line, i)
    return scan.text()


def _step(scan: _Line, line: str, i: int) -> int:
    """Consume the marker or character at ``i``; the index after it."""
    ch = line[i]
    if ch == "`":
        end = line.find("`", i + 1)
        if end > i + 1:
            start = scan.at
            scan.out.extend(line[i + 1 : end])
            scan.spans.append((start, scan.at, "story.code"))
            return end + 1
    if line.startswith("**", i) and ("story.bold" in scan.open or "**" in line[i + 2 :]):
        scan.toggle("story.bold")
        return i + 2
    if ch == "*" and ("story.action" in scan.open or _single_star_after(line, i + 1)):
        scan.toggle("story.action")
        return i + 1
    _quote(scan, line, i)
    return i + 1


def _single_star_after(line: str, start: int) -> bool:
    """True when a lone ``*`` (not part of ``**``) follows ``start``: the action's partner."""
    return "*" in line[start:].replace("**", "")


def _quote(scan: _Line, line: str, i: int) -> None:
    """Copy the character at ``i``; a quote opens or closes a speech span around itself."""
    ch = line[i]
    speech = "story.speech"
    if scan.closer is not None and ch == scan.closer:
        scan.out.append(ch)
        scan.closer = None
        scan.toggle(speech)
        return
    if scan.closer is None and ch in QUOTES and QUOTES[ch] in line[i + 1 :]:
        scan.toggle(speech)
        scan.closer = QUOTES[ch]
    scan.out.append(ch)

