"""Option values converted without Pydantic (cli/params.py, issue 12): the same values and the
same error messages as Typer's own conversion, for every plain option of every command; and
the commands a user types first never import Pydantic (it was most of their start-up)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer._click import Context
from typer._click.exceptions import BadParameter
from typer._coercion import build_runtime_param

from narrative_cli.cli.app import build_app
from narrative_cli.cli.params import PlainCoercion, plain

ROOT = Path(__file__).resolve().parents[1]
CARD = str(ROOT / "sample_cards" / "lantern-keeper.png")


def every_param() -> list[tuple[str, Any, Any]]:
    """(command path, Click command, parameter) for every parameter of the whole app."""
    found: list[tuple[str, Any, Any]] = []

    def walk(command: Any, path: str) -> None:
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, f"{path} {name}")
        found.extend((path, command, param) for param in command.params)

    walk(typer.main.get_command(build_app()), "narrative")
    return found


def outcome(runtime: Any, value: Any, param: Any, ctx: Any) -> tuple[str, Any]:
    try:
        return "value", runtime.coerce(value, param=param, ctx=ctx)
    except BadParameter as error:
        return "error", error.format_message()


def samples(tmp: Path) -> list[Any]:
    existing = tmp / "card.png"
    existing.write_bytes(b"x")
    single = ["3", "-2", "+7", "007", "1.5", ".5", "1e3", "abc", "", " 3", "3 ", "1_000", "٣"]
    single += [str(existing), str(tmp), str(tmp / "missing.json"), "-", True, False, 4, 2.5]
    return [*single, (str(existing), str(tmp)), ("1", "x"), (), ("a",)]


def test_plain_options_convert_exactly_as_typer_does(tmp_path: Path) -> None:
    checked = 0
    for path, command, param in every_param():
        descriptor = param.type_descriptor
        if not plain(descriptor):
            continue
        ctx = Context(command, info_name=path)
        ours, typers = PlainCoercion(descriptor), build_runtime_param(descriptor)
        multi = param.multiple or param.nargs == -1
        for value in samples(tmp_path):
            if multi != isinstance(value, tuple):
                continue
            where = f"{path} {param.name} <- {value!r}"
            assert outcome(ours, value, param, ctx) == outcome(typers, value, param, ctx), where
            checked += 1
    assert checked > 500  # every plain option of every command, not a handful


def test_options_with_bounds_or_choices_keep_typers_conversion() -> None:
    kinds = {(p.name, plain(p.type_descriptor)) for _, _, p in every_param()}
    assert ("jobs", False) in kinds  # --jobs has min=1
    assert ("seed", True) in kinds
    assert sum(1 for _, is_plain in kinds if is_plain) > 50


@pytest.mark.parametrize(
    "args",
    [["run", "--help"], ["inspect", CARD], ["lore", "test", CARD, "lantern"], ["roll", "2d6"]],
    ids=["run --help", "inspect", "lore test", "roll"],
)
def test_the_first_commands_never_import_pydantic(args: list[str]) -> None:
    script = (
        "import sys\n"
        f"sys.argv = ['narrative', *{args!r}]\n"
        "from narrative_cli.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write('PYDANTIC=%s' % ('pydantic' in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert "PYDANTIC=False" in done.stderr, done.stderr[-2000:]


def test_a_bad_number_still_gets_typers_message() -> None:
    from typer.testing import CliRunner

    result = CliRunner().invoke(build_app(), ["run", CARD, "--seed", "abc"])
    assert result.exit_code == 2
    assert "Invalid value for '--seed'" in result.output
    assert "unable to parse string as an integer" in result.output
