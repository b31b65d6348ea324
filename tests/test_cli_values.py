"""What an option accepts and what a user reads when a value is wrong (cli/types.py, issue 12).

The CLI moved from Typer (whose values went through Pydantic) to Click. The tables below are
what Typer 0.29 accepted and said, recorded from it before the move, so that a script which
worked still works and every message reads as before: `` 3``, ``+7``, ``1_000`` and ``1.0``
are whole numbers, ``1.5``, ``٣`` and ``0x10`` are not; ``inf`` and ``1e3`` are decimals.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from narrative_cli.cli.app import build_app
from narrative_cli.cli.help import NarrativeArgument, NarrativeOption
from narrative_cli.cli.types import DECIMAL, PATH, WHOLE_NUMBER, AnyPath, Decimal, OneOf, Whole

ROOT = Path(__file__).resolve().parents[1]
CARD = str(ROOT / "sample_cards" / "lantern-keeper.png")

WHOLE_OK = [("3", 3), ("-2", -2), ("+7", 7), ("007", 7), (" 3", 3), ("3 ", 3), ("1_000", 1000),
            ("1.0", 1), ("99999999999999999999999", 99999999999999999999999), ("-0", 0),
            ("\t4\n", 4)]  # fmt: skip
WHOLE_BAD = ["1.5", ".5", "1e3", "abc", "", "٣", "0x10", "inf", "nan", "-inf", "1e400", "3.",
             "1,5", "１２", "true", " ", "5_", "_5", "1__0", "0b1", "1.0e2", "1e-2", "+.5", "NaN",
             "Infinity", "-", "2.50", "json"]  # fmt: skip
DECIMAL_OK = [("3", 3.0), ("-2", -2.0), ("+7", 7.0), ("007", 7.0), ("1.5", 1.5), (".5", 0.5),
              ("1e3", 1000.0), (" 3", 3.0), ("1_000", 1000.0), ("inf", math.inf),
              ("-inf", -math.inf), ("1e400", math.inf), ("99999999999999999999999", 1e23),
              ("3.", 3.0), ("\t4\n", 4.0), ("1e-2", 0.01), ("+.5", 0.5), ("Infinity", math.inf),
              ("2.50", 2.5)]  # fmt: skip
DECIMAL_BAD = ["abc", "", "٣", "0x10", "1,5", "１２", "true", " ", "5_", "_5", "1__0", "0b1", "-",
               "json"]  # fmt: skip
NOT_WHOLE = "Input should be a valid integer, unable to parse string as an integer"
NOT_DECIMAL = "Input should be a valid number, unable to parse string as a number"


def error_of(kind: click.ParamType, value: Any) -> str:
    with pytest.raises(click.BadParameter) as raised:
        kind.convert(value, None, None)
    return raised.value.message


@pytest.mark.parametrize(("text", "number"), WHOLE_OK)
def test_whole_numbers_typer_accepted_are_accepted(text: str, number: int) -> None:
    assert WHOLE_NUMBER.convert(text, None, None) == number


@pytest.mark.parametrize("text", WHOLE_BAD)
def test_what_is_not_a_whole_number_gets_the_same_message(text: str) -> None:
    assert error_of(WHOLE_NUMBER, text) == NOT_WHOLE


@pytest.mark.parametrize(("text", "number"), DECIMAL_OK)
def test_decimals_typer_accepted_are_accepted(text: str, number: float) -> None:
    assert DECIMAL.convert(text, None, None) == number


def test_nan_is_a_decimal_as_it_was() -> None:
    assert math.isnan(DECIMAL.convert("nan", None, None))
    assert math.isnan(DECIMAL.convert("NaN", None, None))


@pytest.mark.parametrize("text", DECIMAL_BAD)
def test_what_is_not_a_decimal_gets_the_same_message(text: str) -> None:
    assert error_of(DECIMAL, text) == NOT_DECIMAL


def test_a_bound_is_checked_after_the_number() -> None:
    jobs = Whole(min=1)
    assert jobs.convert("2", None, None) == 2 and jobs.convert(1, None, None) == 1
    assert error_of(jobs, "0") == "Input should be greater than or equal to 1"
    assert error_of(jobs, "-0") == "Input should be greater than or equal to 1"
    assert error_of(jobs, "x") == NOT_WHOLE


def test_paths_are_taken_as_typed_an_empty_one_is_the_current_folder(tmp_path: Path) -> None:
    assert PATH.convert(" 3", None, None) == Path(" 3")
    assert PATH.convert("", None, None) == Path(".")
    assert PATH.convert(str(tmp_path / "missing.json"), None, None) == tmp_path / "missing.json"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_a_path_that_exists_but_cannot_be_read_is_refused(tmp_path: Path) -> None:
    locked = tmp_path / "locked.json"
    locked.write_text("{}")
    locked.chmod(0)
    assert error_of(AnyPath(), str(locked)) == f"path {str(locked)!r} is not readable."


def invoke(*args: str) -> Any:
    return CliRunner().invoke(build_app(), list(args), prog_name="narrative")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", CARD, "--seed", "abc"], f"Error: Invalid value for '--seed': {NOT_WHOLE}"),
        (["run", CARD, "--greeting", "1.5"], f"Error: Invalid value for '--greeting': {NOT_WHOLE}"),
        (["replay", "a.jsonl", "--rpm", "x"], f"Error: Invalid value for '--rpm': {NOT_DECIMAL}"),
        (["replay", "a.jsonl", "--jobs", "0"],
         "Error: Invalid value for '--jobs' / '-j': Input should be greater than or equal to 1"),
        (["sessions", "export", "3", "x.txt", "--format", "JSON"],
         "Error: Invalid value for '--format': Value error, 'JSON' is not one of 'jsonl', 'json'."),
        (["replay", "--diff", "a"], "Error: Option '--diff' requires 2 arguments."),
        (["inspect", CARD, "--lorebook"], "Error: Option '--lorebook' requires an argument."),
        (["inspect"], "Error: Missing argument 'CARD'."),
        (["sessions", "export", "3"], "Error: Missing argument 'FILE'."),
        (["cards"], "Error: Missing option '--st-data'."),
        (["inspect", CARD, "--lorebok", "x"],
         "Error: No such option: --lorebok (Possible options: --lorebook)"),
        (["run", "--bogus"], "Error: No such option: --bogus"),
        (["sesions"], "Error: No such command 'sesions'. Did you mean 'sessions'?"),
        (["config", "init", "extra", "\x1b[2J"],
         "Error: Got unexpected extra argument(s) (extra \\x1b[2J)"),
        (["roll", "1d6", "--lang", "fr"],
         "Error: Invalid value: --lang must be auto, zh or en, not 'fr'"),
        (["run"], "Error: Invalid value for CARD: give a CARD to play, --resume ID, or -c for "
                  "the last session"),
        (["-v"], "Error: Missing command."),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else "",
)
def test_a_usage_error_reads_as_it_did_and_exits_2(args: list[str], message: str) -> None:
    done = invoke(*args)
    assert done.exit_code == 2, done.output
    assert done.stdout == ""
    assert done.stderr.endswith(message + "\n"), done.stderr
    assert "Traceback" not in done.stderr


def test_a_usage_error_starts_with_the_usage_and_the_way_to_help() -> None:
    done = invoke("lore", "test", CARD, "lamp", "--seed", "x")
    assert done.stderr.splitlines()[:3] == [
        "Usage: narrative lore test [OPTIONS] {CARD} [TEXT]",
        "Try 'narrative lore test --help' for help.",
        "",
    ]


def every_param() -> list[tuple[str, click.Parameter]]:
    found: list[tuple[str, click.Parameter]] = []

    def walk(command: click.Command, path: str) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{path} {name}")
        found.extend((path, param) for param in command.params)

    walk(build_app(), "narrative")
    return found


def test_every_value_goes_through_our_types_so_every_message_reads_the_same() -> None:
    """A new option declared with ``type=int`` would get Click's own wording: declare it with
    cli/types.py's (WHOLE_NUMBER, DECIMAL, PATH, OneOf) instead."""
    ours = (Whole, Decimal, AnyPath, OneOf)
    odd = []
    for path, param in every_param():
        kinds = getattr(param.type, "types", [param.type])  # --diff A B: a tuple of two
        if isinstance(param, click.Option) and (param.is_flag or param.count):
            continue
        if param.name == "help" or param.expose_value is False:
            continue
        for kind in kinds:
            if not isinstance(kind, ours) and kind is not click.STRING:
                odd.append(f"{path} {param.name}: {kind!r}")
        if not isinstance(param, (NarrativeOption, NarrativeArgument)):
            odd.append(f"{path} {param.name}: {type(param).__name__}")
    assert odd == []
    assert len(every_param()) > 100  # every command's, not a handful


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
