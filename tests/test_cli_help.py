"""``--help`` that helps and starts fast: grouped commands, readable metavars, an example per
command, shell completion, and no heavy module loaded just to print help."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from narrative_cli.cli.app import app
from tests.conftest import ROOT

COMMANDS = [
    ["run"], ["replay"], ["inspect"], ["roll"], ["lore", "test"], ["trace", "show"],
    ["sessions", "list"], ["sessions", "show"], ["sessions", "export"], ["sessions", "import"],
    ["sessions", "rename"], ["sessions", "delete"], ["config", "init"], ["config", "show"],
    ["config", "path"],
]  # fmt: skip
# What printing help must not load: the renderer, HTTP, the REPL, and the application itself.
HEAVY = ("rich", "httpx", "prompt_toolkit", "yaml", "narrative_cli.pipeline",
         "narrative_cli.store", "narrative_cli.play", "narrative_cli.ui",
         "narrative_cli.backends", "narrative_cli.load", "narrative_cli.lore")  # fmt: skip
# Typer (0.26+) validates every non-flag parameter with pydantic, the root's ``-v`` count
# included, so any sub-command loads it; ``narrative --help`` alone does not.
TYPERS_OWN = ("pydantic", "pydantic_core", "annotated_types", "typing_inspection")


def help_text(*args: str) -> str:
    done = CliRunner().invoke(app, [*args, "--help"], prog_name="narrative", env={"COLUMNS": "100"})
    assert done.exit_code == 0, done.output
    return done.output


PROBE = """
import sys
from narrative_cli.cli.app import main
sys.argv = ["narrative", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
sys.stderr.write("MODULES " + " ".join(sorted(sys.modules)) + "\\n")
"""


def imported_by(*args: str) -> set[str]:
    """The modules a fresh ``narrative ARGS`` process has loaded when it is done."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True, text=True, cwd=ROOT, timeout=60, check=True,
    )  # fmt: skip
    line = done.stderr.rsplit("MODULES ", 1)[1]
    return set(line.split())


def heavy(modules: set[str], names: tuple[str, ...] = HEAVY) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


def test_root_help_loads_no_heavy_module() -> None:
    modules = imported_by("--help")
    assert "narrative_cli.cli.app" in modules and "typer" in modules  # the reading works
    assert heavy(modules, HEAVY + TYPERS_OWN) == []


@pytest.mark.parametrize("args", [["run"], ["lore", "test"], ["sessions", "export"], ["replay"]])
def test_command_help_loads_none_of_the_application(args: list[str]) -> None:
    modules = imported_by(*args, "--help")
    assert f"narrative_cli.cli.{args[0]}" in modules
    assert heavy(modules) == []


def test_a_command_loads_what_it_uses_and_not_the_rest() -> None:
    modules = imported_by("roll", "1d6", "--seed", "1", "--json")
    assert "narrative_cli.tools.dice" in modules
    assert heavy(modules) == []


def test_root_help_groups_commands_by_what_players_and_authors_do() -> None:
    text = help_text()
    sections = re.split(r"\n(?=\S[^\n]*:\n)", text)
    by_title = {s.split(":\n", 1)[0]: s for s in sections}
    assert list(by_title)[-3:] == ["Play", "Author", "Sessions & setup"]
    assert re.search(r"^  run\s", by_title["Play"], re.M) and "  roll " in by_title["Play"]
    for name in ("inspect", "lore", "trace", "replay"):
        assert re.search(rf"^  {name}\s", by_title["Author"], re.M), name
    for name in ("sessions", "config"):
        assert re.search(rf"^  {name}\s", by_title["Sessions & setup"], re.M), name
    assert "..." not in text.split("Play:")[1]  # first sentences are wrapped, never cut


def test_shell_completion_is_available() -> None:
    text = help_text()
    assert "--install-completion" in text and "--show-completion" in text
    runner = CliRunner()
    script = runner.invoke(app, ["--show-completion", "bash"], prog_name="narrative")
    assert "_NARRATIVE_COMPLETE=complete_bash" in script.output
    env = {"_NARRATIVE_COMPLETE": "complete_bash", "COMP_WORDS": "narrative sessions ex",
           "COMP_CWORD": "2"}  # fmt: skip
    completed = runner.invoke(app, [], prog_name="narrative", env=env)
    assert completed.output.split() == ["export"]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_readable_metavars_and_an_example(command: list[str]) -> None:
    text = help_text(*command)
    assert re.findall(r"<[a-z][\w\[\], |]*>", text, re.I) == []  # no <bool>, <list[Path]>
    example = text.split("Example")[1]
    lines = [line.strip() for line in example.splitlines() if line.startswith("    narrative ")]
    assert any(f"narrative {' '.join(command)} " in line + " " for line in lines), example


def test_metavars_name_what_to_type() -> None:
    text = help_text("run")
    for shown in ("CARD", "-l, --lorebook FILE", "--trace DIR", "--seed N", "--base-url URL",
                  "--api-key-env VAR", "--greeting N"):  # fmt: skip
        assert shown in text, shown
    assert "--format jsonl|json" in help_text("sessions", "export")


@pytest.mark.parametrize(("args", "shown"), [([], "Play:"), (["sessions"], "export ")])
def test_a_group_without_a_command_prints_its_help(args: list[str], shown: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "narrative_cli", *args],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and shown in done.stdout and "Usage: " in done.stdout
