"""Text from outside made safe for a terminal: the one sanitiser of everything we did not write.

Model replies, card and lorebook fields, tool output, provider error messages, session names
and trace contents can all carry terminal control sequences: ``ESC]52`` writes the user's
clipboard, ``ESC]0`` sets the window title, ``ESC[2J`` clears the screen, and a bidi override
(U+202E) reverses what follows on the line. None of that may reach the terminal, with colour
or without. ``safe_text`` removes whole escape sequences (CSI, OSC/DCS/APC/PM/SOS strings,
two-byte ``ESC x``; 7-bit and C1 forms), then every remaining control character (C0 but
newline and tab, DEL, C1 U+0080–U+009F, a lone ESC, carriage returns) and the bidi
embedding, override and isolate controls. Only our own renderer (Rich styles, the live
region's cursor moves) emits escape sequences.

``StreamCleaner`` does the same for streamed text, where one sequence may be split across
chunks: it holds back a short unfinished tail and remembers that it is inside an OSC string,
so the work per chunk is proportional to the chunk.

The console of every view (``ui.console.SafeConsole``) passes all printed text through
``safe_text`` as a last line of defence; views still build their renderables from
``safe_text``-ed strings, so measured widths match what is shown. Rich markup injection
(``[bold red]`` in a card field) is a separate matter: views print outside text as ``Text``
or through ``rich.markup.escape``, never as markup.
"""

from __future__ import annotations

import re

_CONTROL_CLASS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[{_CONTROL_CLASS}]")
_STRING_OPEN = r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])"
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"  # CSI: ESC[2J, ESC[31m
    + "|"
    + _STRING_OPEN
    + r"[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"  # OSC/DCS/SOS/PM/APC strings
    + r"|\x1b[\x20-\x2f]*[\x30-\x7e]"  # two-byte and nF sequences: ESC c, ESC ( B
)
_INCOMPLETE = re.compile(
    r"(?:\x1b[\x20-\x2f]*|(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*"
    + "|"
    + _STRING_OPEN
    + r"[^\x07\x1b\x9c\n]*\x1b?)\Z"
)
_STRING_END = re.compile(r"[\x07\x9c\n\x1b]")
MAX_CARRY = 64  # an unfinished CSI longer than this is not held back any more


def safe_text(text: str) -> str:
    """``text`` without escape sequences, control characters (but ``\\n``, ``\\t``) or bidi
    overrides; text without any of them comes back as is (the common case, checked first)."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub("", _SEQUENCE.sub("", text))


def has_control(text: str) -> bool:
    """True when ``safe_text`` would change ``text``."""
    return _CONTROL.search(text) is not None


class StreamCleaner:
    """``safe_text`` over a stream of chunks, for sequences split across chunk boundaries."""

    def __init__(self) -> None:
        self._carry = ""
        self._in_string = False  # inside an OSC/DCS string whose start was already dropped

    def feed(self, chunk: str) -> str:
        """The displayable part of ``chunk`` (an unfinished sequence at its end is held)."""
        text = self._carry + chunk
        self._carry = ""
        if self._in_string:
            text = self._leave_string(text)
        if not _CONTROL.search(text):
            return text
        tail = _INCOMPLETE.search(text)
        if tail is not None:
            text = self._hold(text, tail.start())
        return safe_text(text)

    def flush(self) -> str:
        """Whatever is still held, cleaned (the stream ended)."""
        rest, self._carry, self._in_string = self._carry, "", False
        return safe_text(rest)

    def _leave_string(self, text: str) -> str:
        """Drop the rest of a string sequence up to its terminator (kept: a newline)."""
        end = _STRING_END.search(text)
        if end is None:
            return ""
        if end.group() == "\x1b":
            after = end.end()
            if after == len(text):
                self._carry = "\x1b"  # maybe the first half of ESC \
                return ""
            cut = after + 1 if text[after] == "\\" else end.start()
        elif end.group() == "\n":
            cut = end.start()
        else:
            cut = end.end()
        self._in_string = False
        return text[cut:]

    def _hold(self, text: str, start: int) -> str:
        """Keep ``text[start:]`` (an unfinished sequence) for the next chunk; return the rest."""
        tail = text[start:]
        opens_string = tail[0] in "\x90\x98\x9d\x9e\x9f" or tail[1:2] in ("]", "P", "X", "^", "_")
        if opens_string and (len(tail) > 1 or tail[0] != "\x1b"):
            self._in_string = True
            if tail.endswith("\x1b") and len(tail) > 2:
                self._carry = "\x1b"
            return text[:start]
        if len(tail) > MAX_CARRY:
            return text
        self._carry = tail
        return text[:start]


_JSON_UNSAFE = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def safe_json(text: str) -> str:
    """JSON text (from ``json.dumps(..., ensure_ascii=False)``, which already escapes C0) with
    DEL, C1 and bidi controls written as ``\\uXXXX`` escapes: the same data, nothing a
    terminal acts on. Such characters only occur inside JSON strings, where escapes are valid."""
    return _JSON_UNSAFE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)
