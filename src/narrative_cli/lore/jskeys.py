"""What a lore key written as ``/body/flags`` is, before any regex is compiled.

Every key of every scan asks ``split_key`` whether it is a regex; only a card with regex keys
needs ``lore.jsregex`` (the JavaScript-to-``regex`` translator, a dozen patterns of its own
compiled at import), which imports these names from here. ``js_syntax_error`` (JavaScript's
own verdict on a pattern) lives here too, so that checking a regex script's pattern
(``regex.patterns``) does not load the translator.
"""

from __future__ import annotations

import re
import threading

from narrative_cli.lore.jsplain import plainly_valid

__all__ = ["JS_TRIM_CHARS", "JS_WHITESPACE", "JsSyntaxError", "RegexKeyError", "RegexTimeout",
           "js_syntax_error", "split_key"]  # fmt: skip

JS_WHITESPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
JS_TRIM_CHARS = (
    "\t\n\v\f\r \u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff"
    + "".join(chr(code) for code in range(0x2000, 0x200B))
)
_KEY_FORM = re.compile(r"\A/([\s\S]+?)/([gimsuy]*)\Z")
_UNESCAPED_SLASH = re.compile(r"(^|[^\\])/")


class RegexKeyError(ValueError):
    """A ``/…/`` key that cannot be used; the message says why."""


class JsSyntaxError(RegexKeyError):
    """JavaScript would not compile the pattern (SillyTavern then treats the key as text)."""


class RegexTimeout(RuntimeError):
    """A pattern ran out of time; it is skipped from now on."""


def split_key(key: str) -> tuple[str, str] | None:
    """``(body, flags)`` when ``key`` is a SillyTavern regex key, else None (a plain key)."""
    if not key.startswith("/"):
        return None
    match = _KEY_FORM.match(key)
    if match is None or _UNESCAPED_SLASH.search(match.group(1)):
        return None
    return match.group(1).replace("\\/", "/", 1), match.group(2)


_LOCAL = threading.local()


def js_syntax_error(body: str, flags: str) -> str | None:
    """JavaScript's complaint about ``new RegExp(body, flags)``, or None when it compiles.

    Compiling never runs the pattern, so it cannot hang; QuickJS contexts are per thread.
    A pattern in the plain part of the syntax (``lore.jsplain``) is valid without asking."""
    if plainly_valid(body, flags):
        return None
    check = getattr(_LOCAL, "check", None)
    if check is None:
        import quickjs

        context = quickjs.Context()
        context.eval(
            "function check(b, f) { try { new RegExp(b, f); return ''; }"
            " catch (e) { return String(e.message || e); } }"
        )
        check = _LOCAL.check = context.get("check")
    message = str(check(body, flags))
    return message or None
