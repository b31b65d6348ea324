"""The store's JSON bytes: compact UTF-8, no NaN, CPython's C encoder built once; and the
digest that names a blob (BLAKE2b, ``zsplit.hasher``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from narrative_cli.errors import StoreError
from narrative_cli.store.zsplit import hasher

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _fast_encoder() -> Callable[[Any], str] | None:
    """CPython's C encoder built once (``json.dumps`` rebuilds it per call), if available."""
    try:
        from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]

        build = c_make_encoder(
            None, _ENCODER.default, encode_basestring, None, ":", ",", False, False, False
        )
    except (ImportError, TypeError):
        return None
    return lambda value: "".join(build(value, 0))


_encode_text: Callable[[Any], str] = _fast_encoder() or _ENCODER.encode


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON; raises StoreError for values JSON cannot hold."""
    try:
        text = _encode_text(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise StoreError(f"cannot store a value that is not plain JSON: {exc}") from exc
    return text.encode("utf-8")


def digest(data: bytes) -> bytes:
    return hasher(data).digest()
