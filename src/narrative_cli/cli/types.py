"""The value types of our options and arguments, converted by Click itself (issue 12).

Click converts plain values natively and fast; these types only keep the values we accept and
the messages a user reads exactly as they were under Typer, whose conversion went through
Pydantic: `` 3``, ``+7``, ``1_000`` and ``1.0`` are whole numbers, ``1.5`` and ``٣`` are not
(``Input should be a valid integer, unable to parse string as an integer``); ``inf`` and
``1e3`` are decimals; an empty path is ``.``. tests/test_cli_values.py holds the table.
"""

from __future__ import annotations

import os
import re
from enum import Enum
from pathlib import Path
from typing import Any

import click
from click.shell_completion import CompletionItem

WHOLE = re.compile(r"[+-]?[0-9](?:_?[0-9])*(?:\.0+)?")
NOT_WHOLE = "Input should be a valid integer, unable to parse string as an integer"
NOT_DECIMAL = "Input should be a valid number, unable to parse string as a number"


class Whole(click.ParamType[int]):
    """A whole number (``min``: the smallest allowed)."""

    name = "integer"

    def __init__(self, min: int | None = None) -> None:
        self.min = min

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = value if isinstance(value, int) and not isinstance(value, bool) else None
        if number is None:
            text = value.strip() if isinstance(value, str) else ""
            if not text.isascii() or not WHOLE.fullmatch(text):
                self.fail(NOT_WHOLE, param, ctx)
            number = int(text.partition(".")[0])
        if self.min is not None and number < self.min:
            self.fail(f"Input should be greater than or equal to {self.min}", param, ctx)
        return number


class Decimal(click.ParamType[float]):
    """A decimal number (``inf`` and ``nan`` included, as before)."""

    name = "float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        text = value.strip() if isinstance(value, str) else ""
        if not text.isascii():
            self.fail(NOT_DECIMAL, param, ctx)
        try:
            return float(text)
        except ValueError:
            self.fail(NOT_DECIMAL, param, ctx)


class AnyPath(click.ParamType[Path]):
    """A path that need not exist; one that exists must be readable."""

    name = "path"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        path = Path(value)
        if os.path.exists(path) and not os.access(path, os.R_OK):
            self.fail(f"path {os.fspath(value)!r} is not readable.", param, ctx)
        return path

    def shell_complete(
        self, ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[CompletionItem]:
        return [CompletionItem(incomplete, type="file")]  # the shell completes file names


class OneOf(click.ParamType[Enum]):
    """One of an Enum's values (case-sensitive), as that Enum's member."""

    name = "choice"

    def __init__(self, enum: type[Enum]) -> None:
        self.enum = enum

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, self.enum):
            return value
        values = [member.value for member in self.enum]
        if value not in values:
            listed = ", ".join(repr(choice) for choice in values)
            self.fail(f"Value error, {value!r} is not one of {listed}.", param, ctx)
        return self.enum(value)

    def shell_complete(
        self, ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[CompletionItem]:
        return [CompletionItem(m.value) for m in self.enum if m.value.startswith(incomplete)]


WHOLE_NUMBER = Whole()
DECIMAL = Decimal()
PATH = AnyPath()
