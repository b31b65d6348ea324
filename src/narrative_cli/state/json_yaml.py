"""YAML read with JSON's scalars, for MVU values and ``[initvar]`` text; PyYAML loads on first use.

Only ``true``/``false``, decimal numbers and ``null`` are typed: ``yes``, ``8:30`` and dates stay
text, as MagVarUpdate (JavaScript) reads them. Most cards write their variables as JSON, which
never gets here, so PyYAML (a fifth of ``inspect``'s start-up) is imported by the first text
that needs it, not by every command that touches MVU.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

__all__ = ["YamlError", "load_json_like"]


class YamlError(Exception):
    """The text is not YAML (PyYAML's ``YAMLError``, or a value JSON cannot hold)."""


@cache
def _loader() -> Any:
    """``yaml.SafeLoader`` with JSON's scalars only (built once, on first use)."""
    import yaml

    class JsonLikeLoader(yaml.SafeLoader):
        """YAML with JSON's scalars: only true/false, decimal numbers and null are typed."""

    JsonLikeLoader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in rules if tag.rsplit(":", 1)[-1] in ("null", "merge")]
        for first, rules in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    JsonLikeLoader.add_implicit_resolver(
        "tag:yaml.org,2002:bool",
        re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
        list("tTfF"),
    )
    JsonLikeLoader.add_implicit_resolver(
        "tag:yaml.org,2002:int", re.compile(r"^[-+]?[0-9]+$"), list("-+0123456789")
    )
    JsonLikeLoader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+(?=[eE]))(?:[eE][-+]?[0-9]+)?$"),
        list("-+.0123456789"),
    )
    JsonLikeLoader.add_constructor("tag:yaml.org,2002:int", lambda _, node: int(node.value))
    return JsonLikeLoader


def load_json_like(text: str) -> Any:
    """``text`` read as YAML with JSON's scalars; ``YamlError`` when it is not YAML (a
    ``RecursionError`` from a very deep text passes through, as PyYAML raises it)."""
    import yaml

    try:
        return yaml.load(text, Loader=_loader())  # a SafeLoader subclass
    except yaml.YAMLError as error:
        raise YamlError(str(error)) from None
