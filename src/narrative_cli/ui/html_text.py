"""HTML in displayed story text, laid out for the terminal.

Display regex scripts (``regex.scripts``) often turn a reply into HTML: status bars, tables,
folded details, buttons. A terminal runs no HTML, CSS or JavaScript, so ``ui.screen`` shows
what the HTML says, laid out as its structure suggests: a table keeps its rows and columns
(CJK characters count two columns), ``<details>`` shows its summary as a heading and its body
indented, list items get bullets or numbers, a label element next to its value shares one line
(``身份：新来的牧师``), inline elements stay on their line. Interactive parts (buttons, form
fields, scripts, ``onclick`` handlers) cannot work here; they are left out and reported in
``TerminalHtml.interactive`` so the screen can say so once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

from rich.cells import cell_len

_HTML_HINT = re.compile(
    r"<(?:html|head|body|div|span|p|br|hr|table|tr|td|th|details|summary|style|script|b|i|u|"
    r"strong|em|font|center|img|ul|ol|li|h[1-6]|button|input|section|label)\b[^>]*>",
    re.IGNORECASE,
)
_FENCE = re.compile(r"```(?:html)?[ \t]*\n(.*?)```", re.IGNORECASE | re.DOTALL)
_HIDDEN = {"script", "style", "head", "title", "template", "noscript", "meta", "link"}
_INTERACTIVE = {"button", "input", "select", "textarea", "script", "iframe", "canvas"}
_VOID = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "wbr"}
_BLOCK = {
    "address", "article", "aside", "blockquote", "body", "center", "dd", "details", "dialog",
    "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3",
    "h4", "h5", "h6", "header", "hr", "html", "li", "main", "nav", "ol", "p", "pre", "section",
    "summary", "table", "tbody", "thead", "tfoot", "tr", "ul",
}  # fmt: skip
_LABEL_HINT = re.compile(r"name|label|key|title|tag", re.IGNORECASE)
_SPACES = re.compile(r"\s+")


@dataclass
class _Node:
    tag: str
    attrs: dict[str, str] = field(default_factory=dict)
    children: list[_Node | str] = field(default_factory=list)


@dataclass(frozen=True)
class TerminalHtml:
    """The text to show, and whether the HTML had parts a terminal cannot run."""

    text: str
    interactive: bool = False


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = _Node("root")
        self.stack = [self.root]
        self.interactive = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag in _INTERACTIVE or any(k.startswith("on") for k in values):
            self.interactive = True
        node = _Node(tag, values)
        self.stack[-1].children.append(node)
        if tag not in _VOID:
            self.stack.append(node)

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def terminal_html(text: str) -> TerminalHtml:
    """Story text with its HTML laid out as terminal text; text without HTML is unchanged."""
    if not _HTML_HINT.search(text):
        return TerminalHtml(text)
    builder = _Builder()
    builder.feed(_FENCE.sub(lambda m: m.group(1), text))
    builder.close()
    lines = _tidy(_lines(builder.root))
    return TerminalHtml("\n".join(lines), builder.interactive)


def terminal_text(text: str) -> str:
    """``terminal_html(text).text``: the laid-out text only."""
    return terminal_html(text).text


def _tidy(lines: list[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        line = line.rstrip()
        if line or (out and out[-1]):
            out.append(line)
    while out and not out[-1]:
        out.pop()
    return out


def _inline(node: _Node | str) -> str:
    """The text of an inline run, whitespace collapsed (``<br>`` is a newline)."""
    if isinstance(node, str):
        return _SPACES.sub(" ", node)
    if node.tag in _HIDDEN or node.tag in _INTERACTIVE:
        return ""
    if node.tag == "br":
        return "\n"
    return "".join(_inline(child) for child in node.children)


def _lines(node: _Node) -> list[str]:
    """The lines of a block element's content."""
    lines: list[str] = []
    run: list[str] = []

    def flush() -> None:
        text = "".join(run)
        run.clear()
        lines.extend(part.strip() for part in text.split("\n") if part.strip())

    for child in node.children:
        if isinstance(child, str) or (child.tag not in _BLOCK and not _has_block(child)):
            run.append(_inline(child))
            continue
        flush()
        lines.extend(_block(child))
    flush()
    return lines


def _has_block(node: _Node) -> bool:
    return any(isinstance(c, _Node) and (c.tag in _BLOCK or _has_block(c)) for c in node.children)


def _block(node: _Node) -> list[str]:
    if node.tag in _HIDDEN:
        return []
    if node.tag == "hr":
        return ["─" * 24]
    if node.tag in ("ul", "ol"):
        return _list(node)
    if node.tag == "table":
        return _table(node)
    if node.tag == "details":
        return _details(node)
    pair = _label_pair(node)
    if pair is not None:
        return [pair]
    return _lines(node)


def _elements(node: _Node) -> list[_Node]:
    """Child elements that show something (hidden ones and blank text left out)."""
    return [c for c in node.children if isinstance(c, _Node) and c.tag not in _HIDDEN]


def _label_pair(node: _Node) -> str | None:
    """``label：value`` when a block holds just a label element and a one-line value."""
    if any(isinstance(c, str) and c.strip() for c in node.children):
        return None
    kids = _elements(node)
    if len(kids) != 2 or any(_has_block(k) for k in kids):
        return None
    label, value = (_SPACES.sub(" ", _inline(k)).strip() for k in kids)
    is_label = kids[0].tag in ("b", "strong", "dt", "th", "label") or _LABEL_HINT.search(
        kids[0].attrs.get("class", "")
    )
    if not (label and value and is_label) or cell_len(label) > 24:
        return None
    colon = "" if label.endswith((":", "：")) else ("：" if _wide(label) else ": ")
    return f"{label}{colon}{value}"


def _wide(text: str) -> bool:
    return cell_len(text) > len(text)


def _list(node: _Node) -> list[str]:
    lines: list[str] = []
    items = [k for k in _elements(node) if k.tag == "li"]
    for number, item in enumerate(items, 1):
        mark = f"{number}. " if node.tag == "ol" else "• "
        body = _lines(item) or [""]
        lines.append(mark + body[0])
        lines.extend(" " * len(mark) + line for line in body[1:])
    return lines


def _details(node: _Node) -> list[str]:
    summary = next((k for k in _elements(node) if k.tag == "summary"), None)
    rest = _Node("div", children=[c for c in node.children if c is not summary])
    head = ["▸ " + " ".join(_lines(summary))] if summary is not None else []
    return head + ["  " + line for line in _lines(rest)]


def _rows(node: _Node) -> list[_Node]:
    rows: list[_Node] = []
    for kid in _elements(node):
        if kid.tag == "tr":
            rows.append(kid)
        elif kid.tag in ("thead", "tbody", "tfoot"):
            rows.extend(_rows(kid))
    return rows


def _table(node: _Node) -> list[str]:
    grid: list[list[str]] = []
    header_rows = 0
    for row in _rows(node):
        cells = [k for k in _elements(row) if k.tag in ("td", "th")]
        grid.append([" ".join(_lines(_Node("div", children=c.children))) for c in cells])
        if cells and all(c.tag == "th" for c in cells) and len(grid) == header_rows + 1:
            header_rows += 1
    if not grid:
        return []
    widths = [0] * max(len(r) for r in grid)
    for texts in grid:
        for i, cell in enumerate(texts):
            widths[i] = max(widths[i], cell_len(cell))
    lines = ["  ".join(c + " " * (widths[i] - cell_len(c)) for i, c in enumerate(r)) for r in grid]
    if header_rows:
        lines.insert(header_rows, "  ".join("─" * w for w in widths))
    return lines
