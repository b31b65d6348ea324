"""The request a replay is about to send, as the trace writes it, and its comparison with a
recorded line byte for byte (``recorded.CallRef.read``).

A replay rebuilds every prompt and checks it against the recording. Decoding each recorded
line's request (30 KB of JSON) to compare it was most of a recorded call's cost; instead the
request being sent is encoded as the trace would write it (``Sent``: each message's JSON is
remembered by its texts, and texts are escaped at memory speed) and, when the recorded line
holds exactly those bytes, the line is taken without decoding its request at all. Any other
line is decoded and compared as before (``replay.drift`` names the first difference).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from narrative_cli.backends.base import ChatRequest
from narrative_cli.pipeline.trace import request_params

RESPONSE_KEY = b', "response": {'  # the top level's last key in a trace line


@dataclass(frozen=True)
class Sent:
    """The request a replay is about to send: its messages as dicts, its parameters, and
    ``{"messages": …, **params}`` as the trace writes it (UTF-8 JSON, ``ensure_ascii`` off;
    None when JSON cannot encode it). The model is left out: a replay may send none and take
    the recorded one, and drift never compares it. ``body`` is that JSON without its ``{``
    (what a trace line holds after the model), ``encoded`` the whole; ``listed`` the
    messages' JSON inside their list's brackets (None when they cannot be encoded)."""

    messages: list[dict[str, str]]
    params: dict[str, Any]
    body: bytes | None
    listed: bytes | None = None

    @property
    def encoded(self) -> bytes | None:
        return None if self.body is None else b"{" + self.body

    @classmethod
    def of(cls, request: ChatRequest) -> Sent:
        return cls.made([m.to_dict() for m in request.messages], request_params(request))

    @classmethod
    def made(cls, messages: list[dict[str, str]], params: dict[str, Any]) -> Sent:
        listed: bytes | None = None
        try:
            listed = b", ".join([_message_json(m) for m in messages])
            rest = _ENCODER.encode(params).encode("utf-8")[1:] if params else b"}"
            body: bytes | None = b"".join(
                (b'"messages": [', listed, b"], " + rest if params else b"]}")
            )
        except (UnicodeEncodeError, ValueError, TypeError):
            body = None
        return cls(messages, params, body, listed)


# A message's JSON by its keys and texts: most of an agent's messages (its system message, the
# stable head, the older turns of the writer's chat) are the same turn to turn, and encoding
# them again was 2% of a replayed turn (#17, session seven). Hashing a text is several times
# cheaper than encoding it. The least recently used go first (a turn sends 20-30 messages).
_ENCODER = json.JSONEncoder(ensure_ascii=False)  # json.dumps(…, ensure_ascii=False), made once


def _message_json(message: dict[str, str]) -> bytes:
    """``json.dumps(message, ensure_ascii=False)`` in UTF-8, remembered for string values."""
    items = tuple(message.items())
    if not all(type(value) is str for _, value in items):
        return _ENCODER.encode(message).encode("utf-8")
    return _items_json(items)


@lru_cache(maxsize=128)
def _items_json(items: tuple[tuple[str, str], ...]) -> bytes:
    return b"{" + b", ".join([_text_json(k) + b": " + _text_json(v) for k, v in items]) + b"}"


# What ``json.dumps(text, ensure_ascii=False)`` escapes, as UTF-8 bytes (a character above
# ASCII is written as it is, and its UTF-8 bytes are all above 0x7F, so no ASCII byte below is
# part of one): the backslash first. Python's C encoder walks the text one character at a
# time (60 µs for a 7.6 KB message, half of a recorded call's own cost; #17, session eight);
# ``bytes.replace`` and ``translate`` run at memory speed.
_ESCAPES = (
    (b"\\", b"\\\\"), (b'"', b'\\"'), (b"\n", b"\\n"), (b"\r", b"\\r"), (b"\t", b"\\t"),
    (b"\x08", b"\\b"), (b"\x0c", b"\\f"),
)
_OTHER_CONTROLS = bytes(c for c in range(0x20) if c not in b"\x08\t\n\x0c\r")  # \u00XX


def _text_json(text: str) -> bytes:
    """``json.dumps(text, ensure_ascii=False)`` in UTF-8 (UnicodeEncodeError for a lone
    surrogate, as encoding that JSON gives); a text with a control character JSON writes as
    ``\\u00XX`` goes through the C encoder."""
    data = text.encode("utf-8")
    if len(data.translate(None, _OTHER_CONTROLS)) != len(data):
        return _ENCODER.encode(text).encode("utf-8")
    for plain, escaped in _ESCAPES:
        if plain in data:
            data = data.replace(plain, escaped)
    return b'"' + data + b'"'


_REQUEST_MODEL, _MESSAGES_KEY = b'"request": {"model": ', b', "messages": '
_MODEL_HEAD = b", " + _REQUEST_MODEL


def same_request(raw: bytes, sent: Sent) -> dict[str, Any] | None:
    """The line's object, its request rebuilt from ``sent`` and the recorded model, when the
    line's request is ``{"model": M`` followed by ``sent.encoded`` without its ``{``, byte for
    byte; else None. Equal JSON text is an equal value, so such a request is the one being
    sent (its model aside, which drift never compares). The line is laid out as the trace
    writes it (``pipeline.trace``): the request after the attempt, the response after the
    request. A quote inside a JSON string is always escaped, so ``, "`` never occurs in one:
    the first model head is the request's, the model's end is the first messages key after
    it, and the last response key is the top level's."""
    if sent.body is None:
        return None
    head = raw.find(_MODEL_HEAD)
    if head < 0:
        return None
    key = raw.find(_MESSAGES_KEY, head + len(_MODEL_HEAD))
    end = raw.rfind(RESPONSE_KEY)
    body = sent.body  # '"messages": [...], ...}'
    begin = key + 2  # the messages key's quote
    if key < 0 or begin + len(body) != end or not raw.startswith(body, begin):
        return None
    model = json.loads(raw[head + len(_MODEL_HEAD) : key])
    rest = json.loads(raw[:head] + b', "request": {}' + raw[end:])
    if not isinstance(model, str) or not isinstance(rest, dict) or rest.get("request") != {}:
        return None
    rest["request"] = {"model": model, "messages": sent.messages, **sent.params}
    found: dict[str, Any] = rest
    return found


def without_messages(raw: bytes, sent: Sent) -> dict[str, Any] | None:
    """The line's object with ``sent.messages`` put back in, when the line holds exactly their
    JSON (``sent.listed``, made once) as its request's messages; else None. A JSON key is
    found only as a key (a quote inside a string is escaped), and the request's own key comes
    first in its object."""
    if sent.listed is None:
        return None
    data = b"[" + sent.listed + b"]"
    start = raw.find(_REQUEST_MODEL)
    if start < 0:
        return None
    key = raw.find(_MESSAGES_KEY, start + len(_REQUEST_MODEL))
    if key < 0:
        return None
    begin = key + len(_MESSAGES_KEY)
    if raw[begin : begin + len(data)] != data:
        return None
    rest = json.loads((raw[:begin] + b"[]" + raw[begin + len(data) :]).decode("utf-8"))
    if not isinstance(rest, dict):
        return None
    request = rest.get("request")
    if not isinstance(request, dict) or request.get("messages") != []:
        return None
    request["messages"] = sent.messages
    found: dict[str, Any] = rest
    return found
