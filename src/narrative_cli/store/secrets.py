"""Keep API keys out of the database and out of exports, whatever a caller hands us."""

from __future__ import annotations

import re
from typing import Any

REDACTED = "[redacted]"

# Keys whose *values* are secrets. ``api_key_env`` (the name of a variable) is not one.
_SECRET_KEY = re.compile(
    r"^(api[_-]?key|x-api-key|authorization|proxy-authorization|secret|client[_-]?secret"
    r"|password|access[_-]?token|bearer|.*[_-]api[_-]?key)$",
    re.IGNORECASE,
)
# Values that look like credentials wherever they appear.
_SECRET_VALUE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{16,}|Bearer\s+[A-Za-z0-9._\-]{16,})")


def is_secret_key(key: str) -> bool:
    return bool(_SECRET_KEY.match(key))


def scrub(value: Any) -> Any:
    """A copy of a JSON value with secret-named keys and key-shaped strings redacted."""
    if isinstance(value, dict):
        return {
            key: (REDACTED if isinstance(key, str) and is_secret_key(key) and item else scrub(item))
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [scrub(item) for item in value]
    if isinstance(value, str) and ("sk-" in value or "Bearer" in value):
        return _SECRET_VALUE.sub(REDACTED, value)
    return value
