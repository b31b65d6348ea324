"""Option values converted without Pydantic, so that a command starts fast (issue 12).

Typer 0.26+ converts every non-bool option through a Pydantic ``TypeAdapter``; importing
Pydantic and building the adapters is most of what ``narrative run --help``, ``lore test`` and
``inspect`` spend before doing any work (benchmarks/startup.py). Our options are plain: flags, text,
whole numbers, decimals, paths and lists of those. For those, :class:`PlainCoercion` does the
conversion itself; anything else, and every value it cannot convert at a glance (``--seed
abc``, ``--jobs 0``, a path that exists but cannot be read), goes to Typer's own conversion, so
the accepted values and the error messages stay exactly Typer's (tests/test_cli_params.py checks
both against Typer, for every option of every command).

The seam is the converter a Typer parameter builds on first use (its ``_runtime_param``, built
by the public ``get_runtime_param()``); nothing private is imported. If a later Typer drops the
attribute, :func:`install` does nothing and the commands only start slower.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, get_args, get_origin

WHOLE = re.compile(r"[+-]?[0-9]+")
DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
LEAVES = (str, bool, int, float, Path)
# Typer's path settings under which a path needs no check but "readable if it exists"
PLAIN_PATH = {"exists": False, "file_okay": True, "dir_okay": True, "writable": False,
              "readable": True, "resolve_path": False, "allow_dash": False, "path_type": None}


class _Unhandled(Exception):
    """A value for Typer's own conversion."""


def plain(descriptor: Any) -> bool:
    """Whether the parameter typed by ``descriptor`` (Typer's ``TypeDescriptor``) is one that
    :class:`PlainCoercion` converts: a leaf type, or a list or tuple of them, with no parser,
    bounds, choices, file opening or custom path type."""
    info = descriptor.parameter_info
    if descriptor.file_annotation is not None or descriptor.is_choice:
        return False
    if getattr(info, "parser", None) is not None or getattr(info, "click_type", None) is not None:
        return False
    if getattr(info, "min", None) is not None or getattr(info, "max", None) is not None:
        return False
    if any(getattr(info, name, plain) != plain for name, plain in PLAIN_PATH.items()):
        return False
    annotation = descriptor.annotation
    if get_origin(annotation) in (list, tuple):
        members = get_args(annotation)
        return bool(members) and all(member in LEAVES for member in members)
    return annotation in LEAVES


class PlainCoercion:
    """Typer's runtime conversion for one plain parameter (see the module's text)."""

    def __init__(self, descriptor: Any) -> None:
        self.descriptor = descriptor
        self.typers: Any = None  # Typer's own converter, built on the first value we pass on

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        multi = param.multiple or param.nargs == -1
        if value is None:
            return () if multi else None
        try:
            return self._convert(value, param, ctx)
        except _Unhandled:
            if self.typers is None:
                param._runtime_param = None  # let Typer build its own, once
                self.typers = param.get_runtime_param()
                param._runtime_param = self
            return self.typers.coerce(value, param=param, ctx=ctx)

    def _convert(self, value: Any, param: Any, ctx: Any) -> Any:
        annotation = self.descriptor.annotation
        origin = get_origin(annotation)
        if origin is None:
            return self._leaf(annotation, value, param, ctx)
        if not isinstance(value, (list, tuple)):
            raise _Unhandled
        members = get_args(annotation)
        if origin is list:
            return [self._leaf(members[0], item, param, ctx) for item in value]
        if len(members) != len(value) or Ellipsis in members:
            raise _Unhandled
        pairs = zip(members, value, strict=True)
        return tuple(self._leaf(kind, item, param, ctx) for kind, item in pairs)

    def _leaf(self, kind: type, value: Any, param: Any, ctx: Any) -> Any:
        if kind is str and isinstance(value, str):
            return value
        if kind is bool and isinstance(value, bool):
            return value
        if kind is int:
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            if isinstance(value, str) and WHOLE.fullmatch(value):
                return int(value)
        if kind is float:
            if isinstance(value, float):
                return value
            if isinstance(value, str) and DECIMAL.fullmatch(value):
                return float(value)
        if kind is Path and isinstance(value, (str, Path)) and str(value):
            # Typer stats the path and, when it exists, wants it readable; else any path goes
            if not os.path.exists(value) or os.access(value, os.R_OK):
                return Path(value)
        raise _Unhandled


def install(params: list[Any]) -> None:
    """Give each plain parameter of ``params`` (a Click command's) the fast conversion, where
    Typer has not built its own yet."""
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or getattr(param, "_runtime_param", False) is not None:
            continue
        if plain(descriptor):
            param._runtime_param = PlainCoercion(descriptor)
