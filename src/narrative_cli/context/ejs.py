"""An EJS-subset compiler: template text → the body of a JavaScript function.

ST-Prompt-Template (the SillyTavern extension real cards are written for) runs templates with
EJS: ``<% code %>`` runs code, ``<%= expr %>`` and ``<%- expr %>`` print a value (the extension's
escape function returns its input, so in a prompt both print the raw value), ``<%# … %>`` is a
comment, ``<%%`` and ``%%>`` print the delimiters themselves. Whitespace control as EJS does it:
``<%_`` removes the spaces and tabs before the tag, ``_%>`` the ones after it, and ``-%>`` and
``_%>`` both drop the one line break that follows the tag. ``print(…)`` writes from inside code.

The compiled body expects ``locals`` (the template's context, read through ``with`` as the
extension does) and returns the output text. It is an ``async`` body: templates may ``await``
helper calls, as they do under the extension. Compiling never runs anything; an unclosed tag is
a :class:`TemplateSyntaxError` naming the line, so a broken template is never sent raw.
"""

from __future__ import annotations

import json
import re

OPEN = "<%"
# Compiled when a template is first compiled (``re`` keeps them): most cards have none, and
# ``inspect`` of one loads this module only for ``has_template``.
_SLURP_BEFORE = r"[ \t]*<%_"
_SLURP_AFTER = r"_%>[ \t]*"
_TAGS = r"(<%%|%%>|<%=|<%-|<%_|<%#|<%|-%>|_%>|%>)"
_TRAILING_SEMI = r";(\s*$)"
_LEADING_BREAK = r"^(?:\r\n|\r|\n)"

# The output plumbing of a compiled template: EJS's ``__append`` skips null and undefined.
_HEAD = (
    "let __output = '';\n"
    "const __append = (s) => { if (s !== undefined && s !== null) __output += s; };\n"
    "const print = (...args) => { __append(args.join('')); };\n"
    "with (locals) {\n"
)
_TAIL = "\n}\nreturn __output;"


class TemplateSyntaxError(ValueError):
    """A template that cannot be compiled (an unclosed ``<%`` tag)."""


def has_template(text: str) -> bool:
    """Whether ``text`` holds an EJS tag (the extension's own cheap test)."""
    return OPEN in text


def compile_template(text: str) -> str:
    """The JavaScript function body that renders ``text``; raises TemplateSyntaxError."""
    text = re.sub(_SLURP_AFTER, "_%>", re.sub(_SLURP_BEFORE, "<%_", text))
    parts = re.split(_TAGS, text)
    code: list[str] = []
    mode: str | None = None  # the opening tag while inside one
    truncate = False
    line = 1
    opened_at = 1
    for part in parts:
        if not part:
            continue
        if mode is None:
            if part in ("<%", "<%_", "<%=", "<%-", "<%#"):
                mode, opened_at = part, line
            elif part == "<%%":
                code.append(f"__append({json.dumps('<%')});")
            elif part == "%%>":
                code.append(f"__append({json.dumps('%>')});")
            elif part in ("%>", "-%>", "_%>"):
                code.append(f"__append({json.dumps(part)});")  # a stray close tag is text
            else:
                if truncate:
                    part = re.sub(_LEADING_BREAK, "", part)
                    truncate = False
                if part:
                    code.append(f"__append({json.dumps(part, ensure_ascii=False)});")
        elif part in ("%>", "-%>", "_%>"):
            truncate = part != "%>"
            mode = None
        elif part in ("<%%", "%%>"):
            code.append(part[:2] if part == "<%%" else part[1:])  # literal inside code
        else:
            code.append(_code(mode, part))
        line += part.count("\n")
    if mode is not None:
        raise TemplateSyntaxError(f'could not find the matching close tag for "{mode}" '
                                  f"(line {opened_at})")
    return _HEAD + "\n".join(code) + _TAIL


def _code(mode: str, source: str) -> str:
    if mode == "<%#":
        return ""
    if mode in ("<%=", "<%-"):
        expr = re.sub(_TRAILING_SEMI, r"\1", source)
        return f"__append({expr}\n);"
    return "; " + source + "\n"  # the line break ends a trailing // comment
