"""Whether JavaScript accepts regex scripts' patterns, checked in this process when it can.

Compiling a pattern never runs it, so a short one is compiled by QuickJS here
(``lore.jskeys.js_syntax_error``, as lore keys are): no helper process to start, and none of
the script runner (``regex.quickjs_run``) to load, which ``inspect`` of a card with regex
scripts needs for nothing else. A long pattern (QuickJS can take minutes to compile a huge
alternation) or one with a lone surrogate (which crashes QuickJS) is for the helper process,
which is killed when it hangs or dies: ``quickjs_run.pattern_errors`` sends it there.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

LOCAL_PATTERN_CHARS = 2000  # longer patterns are checked in the helper process
_SURROGATE = re.compile("[\ud800-\udfff]")


def checked_here(source: str, flags: str) -> bool:
    """Whether the pattern ``/source/flags`` may be compiled in this process."""
    text = source + flags
    return len(text) <= LOCAL_PATTERN_CHARS and not _SURROGATE.search(text)


def pattern_errors_here(patterns: Sequence[tuple[str, str]]) -> dict[int, str] | None:
    """The ``(source, flags)`` patterns (by index) JavaScript refuses, with its reason; None
    when one of them is for the helper process (``checked_here``): then check them all there."""
    if not all(checked_here(source, flags) for source, flags in patterns):
        return None
    from narrative_cli.lore.jskeys import js_syntax_error

    found = ((i, js_syntax_error(source, flags)) for i, (source, flags) in enumerate(patterns))
    return {i: error for i, error in found if error is not None}
