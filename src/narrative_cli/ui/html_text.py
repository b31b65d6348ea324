"""HTML in displayed story text, flattened for the terminal.

Display regex scripts (``regex.scripts``) often produce HTML: status bars, tables, folded
details. A terminal runs no HTML or JavaScript, so ``ui.screen`` shows their text instead.
"""

from __future__ import annotations

import re

_HTML_HINT = re.compile(
    r"<(?:html|head|body|div|span|p|br|hr|table|tr|td|th|details|summary|style|script|b|i|u|"
    r"strong|em|font|center|img|ul|ol|li|h[1-6])\b[^>]*>",
    re.IGNORECASE,
)
_HIDDEN = re.compile(r"<(script|style|head)\b[^>]*>.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_FENCE = re.compile(r"```(?:html)?\s*\n(.*?)```", re.IGNORECASE | re.DOTALL)
_BREAKS = re.compile(
    r"<br\s*/?>|</(?:p|div|li|tr|h[1-6]|summary|details|table)\s*>|<hr\s*/?>", re.IGNORECASE
)
_CELL = re.compile(r"</t[dh]\s*>", re.IGNORECASE)
_TAG = re.compile(r"<!--.*?-->|<!doctype[^>]*>|</?[A-Za-z][^<>]*>", re.IGNORECASE | re.DOTALL)


def terminal_text(text: str) -> str:
    """HTML that display scripts produced (status bars and the like) as plain terminal text.

    A terminal runs no HTML or JavaScript: scripts and styles are dropped, line-level tags
    become line breaks, table cells are separated, other tags vanish and entities are decoded.
    Text without HTML comes back unchanged.
    """
    if not _HTML_HINT.search(text):
        return text
    import html

    body = _FENCE.sub(lambda m: m.group(1), text)
    body = _HIDDEN.sub("", body)
    body = _CELL.sub("  ", _BREAKS.sub("\n", body))
    body = html.unescape(_TAG.sub("", body))
    lines = [re.sub(r"[ \t]+", " ", line).strip() for line in body.splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
