"""What a secret is, and the one scrub that keeps secrets out of everything we write or show.

A secret is any of:

- the value under a credential-named key or header (``api_key``, ``Authorization``,
  ``x-api-key``, ``password``, ``token`` …, compared case-blind with ``_`` read as ``-``);
  ``api_key_env`` and ``api_key_file`` are not: they name where a key lives;
- the user information of a URL (``http://user:KEY@host``) and the value of a key-like query
  parameter (``?key=KEY``, ``&api_key=``, ``&token=`` …);
- a token after ``Bearer``/``Basic``, and an ``sk-…`` key, wherever it stands in a text;
- every key this process has read (``remember``): the value from ``api_key_env`` or
  ``api_key_file``, a base URL's password (or its user name when it has no password) and its
  key-like query values, and the user information base64-encoded as HTTP Basic auth sends it
  (a proxy may echo it back in an error). Values under 8 characters are not remembered, so
  that ordinary words of a story are never blanked.

``scrub`` serves every output path: traces (``pipeline/trace.py``), stored rows and exports
(``store/``), error messages (``NarrativeError`` scrubs its own text), model error bodies
(``backends/``) and log lines (``ScrubFilter``, installed by the CLI). It is named
``credentials`` rather than ``secrets`` so that it never shadows the standard library module.
"""

from __future__ import annotations

import base64
import functools
import re
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    import logging

REDACTED = "***"

_SECRET_NAMES = frozenset(
    {
        "access-token",
        "api-key",
        "api-secret",
        "api-token",
        "apikey",
        "auth-token",
        "authorization",
        "bearer",
        "client-secret",
        "id-token",
        "ocp-apim-subscription-key",
        "passwd",
        "password",
        "private-key",
        "proxy-authorization",
        "refresh-token",
        "secret",
        "secret-key",
        "session-token",
        "token",
        "x-api-key",
        "x-auth-token",
        "x-goog-api-key",
    }
)
_SECRET_SUFFIXES = ("-api-key", "-apikey", "-secret", "-secret-key", "-password")
# Query parameters that carry keys besides the names above (Gemini's ``?key=``, signatures).
_QUERY_NAMES = frozenset({"auth", "key", "sig", "signature"})
_NOT_SECRET = frozenset({"api-key-env", "api-key-file"})  # where a key lives, not the key

_QUERY_PARAM = re.compile(r"([?&;])([A-Za-z0-9_.\-]+)=([^&;#\s\"'<>]*)")
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@?#\"'<>]+@")
_TOKEN_CHARS = r"[A-Za-z0-9._~+/=\-]"  # what keys, JWTs and base64 are made of
_AUTH_TOKEN = re.compile(  # a token with a digit, or a long one: "the bearer of news" stays
    rf"(?i)\b(bearer|basic)(\s+)(?:(?={_TOKEN_CHARS}*\d){_TOKEN_CHARS}{{8,}}|{_TOKEN_CHARS}{{20,}})"
)
_SK_KEY = re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}")
_MIN_REMEMBERED = 8  # shorter values would blank ordinary words of a story
_MIN_GIVEN = 4

_known: set[str] = set()
_known_lock = threading.Lock()
_longest_first: list[str] = []  # _known, longest first (a longer secret may hold a shorter)
_scrubbed: dict[str, str] = {}  # text -> scrub_text(text), for the secrets known now
# The generation before: when ``_scrubbed`` is full it becomes this one (and the one before
# goes), and a text found here moves back. A turn's texts asked again next turn stay; one
# asked once is forgotten two generations on. Cleared when full (4,096 texts, up to 2,000
# characters each), the memory held every text of the last thousand turns (#17: 0.5 MB at
# 2,000 replayed turns of short story texts, several MB with long ones).
_scrubbed_before: dict[str, str] = {}
_SCRUBBED_KEPT = 1024  # texts per generation
_SCRUBBED_LENGTH = 2048  # longer texts (prompts, stories) are seldom scrubbed twice


@functools.lru_cache(maxsize=1024)
def is_secret_name(name: str) -> bool:
    """Whether the value under a mapping key or header called ``name`` is a credential
    (remembered by name: a record's keys are the same few every turn)."""
    normal = name.strip().lower().replace("_", "-")
    if normal in _NOT_SECRET:
        return False
    return normal in _SECRET_NAMES or normal.endswith(_SECRET_SUFFIXES)


def is_secret_query_name(name: str) -> bool:
    """Whether a URL query parameter called ``name`` carries a credential."""
    return is_secret_name(name) or name.lower() in _QUERY_NAMES


def remember(value: str | None) -> None:
    """Treat ``value`` (a key just read) as a secret in everything scrubbed from now on."""
    if value and len(value) >= _MIN_REMEMBERED:
        with _known_lock:
            if value not in _known:
                _known.add(value)
                _longest_first[:] = sorted(_known, key=len, reverse=True)
                _scrubbed.clear()  # texts scrubbed before may hold it
                _scrubbed_before.clear()


def remember_url(url: str | None) -> None:
    """Remember the credentials a URL carries: its user information (also as the Basic-auth
    token HTTP clients derive from it) and its key-like query values."""
    if not url:
        return
    try:
        parts = urlsplit(url)
        username, password = parts.username, parts.password
    except ValueError:
        return
    if username or password:
        user, secret = unquote(username or ""), unquote(password or "")
        remember(secret if password is not None else user)  # ``http://KEY@host``: the key
        remember(base64.b64encode(f"{user}:{secret}".encode()).decode("ascii"))
    for match in _QUERY_PARAM.finditer("?" + parts.query):
        if is_secret_query_name(match.group(2)):
            remember(unquote(match.group(3)))


def scrub_url(url: str) -> str:
    """``url`` without its user information or the values of key-like query parameters."""
    return _scrub_urls(url)


def scrub_text(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every known or given secret, URL credential and auth token replaced.

    Without ``secrets``, a text scrubbed before gives what it gave then, until a new secret
    is remembered: a turn record holds mostly the texts of the last one (the lore, the plan's
    fields, the usage keys), and scrubbing each anew was 4% of a replayed turn (#17)."""
    given = [s for s in secrets if s and len(s) >= _MIN_GIVEN]
    remembered = not given and len(text) <= _SCRUBBED_LENGTH
    if remembered:
        done = _scrubbed.get(text)
        if done is not None:
            return done
    with _known_lock:
        known = list(_longest_first)
        generation = len(_known)
        result = _scrubbed_before.get(text) if remembered else None
    if result is None:
        result = _scrub(text, [*known, *given])
    if remembered:
        with _known_lock:
            if generation == len(_known):  # no secret remembered meanwhile
                if len(_scrubbed) >= _SCRUBBED_KEPT:
                    _scrubbed_before.clear()
                    _scrubbed_before.update(_scrubbed)
                    _scrubbed.clear()
                _scrubbed[text] = result
    return result


def _scrub(text: str, values: list[str]) -> str:
    for value in values:
        if value in text:
            text = text.replace(value, REDACTED)
    if "://" in text or "=" in text:
        text = _scrub_urls(text)
    text = _AUTH_TOKEN.sub(rf"\1\2{REDACTED}", text)
    return _SK_KEY.sub(REDACTED, text)


def _scrub_urls(text: str) -> str:
    text = _URL_USERINFO.sub(rf"\1{REDACTED}@", text)
    return _QUERY_PARAM.sub(_query_value, text)


def _query_value(match: re.Match[str]) -> str:
    if not is_secret_query_name(match.group(2)) or not match.group(3):
        return match.group(0)
    return f"{match.group(1)}{match.group(2)}={REDACTED}"


def scrub(value: Any) -> Any:
    """A copy of a JSON-like value: credential-named keys keep their name with the value
    ``***``, and every string is passed through ``scrub_text``. Tuples become lists.

    The plain types are told apart by their type first (a turn record is scrubbed whole
    before it is stored, 170 values, and the ``Mapping`` check of each was most of the
    time: #17, session six)."""
    kind = type(value)
    if kind is str:
        done = _scrubbed.get(value)  # scrub_text's own memory, asked without its call
        return scrub_text(value) if done is None else done
    if kind in _LEAVES:
        return value
    if kind is dict or isinstance(value, Mapping):
        return {
            key: _scrub_item(key, item) if type(item) is not str else _scrub_str(key, item)
            for key, item in value.items()
        }
    if kind is list or isinstance(value, list | tuple):
        return [scrub(item) for item in value]
    if isinstance(value, str):
        return scrub_text(value)
    return value


_LEAVES = frozenset({int, float, bool, type(None)})


def _scrub_str(key: Any, item: str) -> str:
    """``_scrub_item`` of a text (most of a record's values: one call fewer each)."""
    if item and isinstance(key, str) and is_secret_name(key):
        return REDACTED
    done = _scrubbed.get(item)
    return scrub_text(item) if done is None else done


def _scrub_item(key: Any, item: Any) -> Any:
    if isinstance(key, str) and is_secret_name(key) and item not in (None, ""):
        return REDACTED
    return scrub(item)


def scrub_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Headers for display: credential headers show ``***``."""
    return {name: (REDACTED if is_secret_name(name) else value) for name, value in headers}


class ScrubFilter:
    """A logging filter that scrubs each record's final message (ours and libraries' alike,
    such as httpx's request lines, which print the URL with its user information). Logging
    takes any object with this ``filter`` method, so this module need not import logging."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = scrub_text(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True
