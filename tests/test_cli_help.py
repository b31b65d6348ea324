"""``--help`` that helps and starts fast: grouped commands, readable metavars, an example per
command, shell completion, and no heavy module loaded just to print help."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

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
# Typer (0.26+) validated every non-flag parameter with pydantic; on Click no command loads it.
PYDANTIC = ("pydantic", "pydantic_core", "annotated_types", "typing_inspection")


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
    assert "narrative_cli.cli.app" in modules and "click" in modules  # the reading works
    assert heavy(modules, HEAVY + PYDANTIC + ("typer",)) == []


@pytest.mark.parametrize("args", [["run"], ["lore", "test"], ["sessions", "export"], ["replay"]])
def test_command_help_loads_none_of_the_application(args: list[str]) -> None:
    modules = imported_by(*args, "--help")
    assert f"narrative_cli.cli.{args[0]}" in modules
    assert heavy(modules, HEAVY + PYDANTIC) == []


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
    assert script.exit_code == 0 and "_NARRATIVE_COMPLETE=bash_complete" in script.output
    env = {"_NARRATIVE_COMPLETE": "bash_complete", "COMP_WORDS": "narrative sessions ex",
           "COMP_CWORD": "2"}  # fmt: skip
    completed = runner.invoke(app, [], prog_name="narrative", env=env)
    assert completed.output.split() == ["plain,export"]  # Click's bash protocol: type,value


@pytest.mark.parametrize(("shell", "marker"), [("bash", "complete -o nosort -F"),
                                               ("zsh", "#compdef narrative"),
                                               ("fish", "complete --no-files --command narrative")])
def test_each_shell_gets_its_own_script(shell: str, marker: str) -> None:
    if shell == "bash" and not shutil.which("bash"):
        pytest.skip("Click checks the bash version by running bash")
    done = CliRunner().invoke(app, ["--show-completion", shell], prog_name="narrative")
    assert done.exit_code == 0 and marker in done.output
    assert f"_NARRATIVE_COMPLETE={shell}_complete" in done.output


def test_completion_offers_options_choices_and_commands() -> None:
    runner = CliRunner()

    def complete(words: str) -> list[str]:
        env = {"_NARRATIVE_COMPLETE": "bash_complete", "COMP_WORDS": words,
               "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1))}
        return runner.invoke(app, [], prog_name="narrative", env=env).output.split()

    assert "plain,--lorebook" in complete("narrative inspect card.png --lo")
    assert complete("narrative sessions export 3 x.json --format ") == ["plain,jsonl",
                                                                        "plain,json"]
    assert complete("narrative inspect ") == ["file,"]  # the shell completes the file name
    assert complete("narrative lo") == ["plain,lore"]


@pytest.mark.parametrize(("shell", "written", "rc", "line"), [
    ("bash", ".bash_completions/narrative.sh", ".bashrc", "source '{home}/.bash_completions/"
                                                         "narrative.sh'"),
    ("zsh", ".zfunc/_narrative", ".zshrc", "fpath+=~/.zfunc; autoload -Uz compinit; compinit"),
    ("fish", ".config/fish/completions/narrative.fish", None, None),
])  # fmt: skip
def test_install_completion_writes_the_script_where_the_shell_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shell: str, written: str, rc: str | None,
    line: str | None,
) -> None:
    if shell == "bash" and not shutil.which("bash"):
        pytest.skip("Click checks the bash version by running bash")
    monkeypatch.setenv("HOME", str(tmp_path))
    args = ["--install-completion", shell]
    done = CliRunner().invoke(app, args, prog_name="narrative")
    assert done.exit_code == 0, done.output
    assert done.output == (f"{shell} completion installed in {tmp_path / written}\n"
                           "Completion will take effect once you restart the terminal\n")
    assert f"_NARRATIVE_COMPLETE={shell}_complete" in (tmp_path / written).read_text()
    if rc and line:
        again = CliRunner().invoke(app, args, prog_name="narrative")  # twice: one line, once
        assert again.exit_code == 0
        assert (tmp_path / rc).read_text().count(line.format(home=tmp_path)) == 1


def test_a_shell_we_cannot_complete_for_is_named() -> None:
    done = CliRunner().invoke(app, ["--install-completion", "tcsh"], prog_name="narrative")
    assert done.exit_code == 1 and done.output == "Shell tcsh is not supported.\n"
    shown = CliRunner().invoke(app, ["--show-completion", "tcsh"], prog_name="narrative")
    assert shown.exit_code == 1 and shown.stderr == "Shell tcsh not supported.\n"


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


# What the start-up goals' commands (#12 item 7: run --help, lore test, inspect) must not load
# for a card that does not use the feature: the application's other stages, HTTP, the REPL,
# the JavaScript sandbox (templates, regex scripts), the ``regex`` module (regex lore keys),
# MVU and YAML (``[initvar]`` entries).
NOT_FOR_A_PLAIN_CARD = ("httpx", "prompt_toolkit", "yaml", "quickjs", "regex",
                        "narrative_cli.pipeline", "narrative_cli.store", "narrative_cli.backends",
                        "narrative_cli.state", "narrative_cli.tools", "narrative_cli.replay",
                        "narrative_cli.play.controller", "narrative_cli.regex")  # fmt: skip


def plain_card(folder: Path) -> Path:
    """A card with a lorebook (a plain key and a constant entry) and nothing else."""
    entries = [
        {"id": 0, "keys": ["lamp"], "content": "The lamp is old.", "comment": "lamp",
         "enabled": True, "insertion_order": 100, "extensions": {}},
        {"id": 1, "keys": [], "content": "Fog every night.", "comment": "fog", "constant": True,
         "enabled": True, "insertion_order": 101, "extensions": {}},
    ]  # fmt: skip
    data = {"name": "Keeper", "description": "Keeps the lamp.", "first_mes": "Hello.",
            "character_book": {"name": "Harbour", "entries": entries}}  # fmt: skip
    path = folder / "plain.json"
    path.write_text(json.dumps({"spec": "chara_card_v2", "spec_version": "2.0", "data": data}))
    return path


def test_lore_test_loads_only_the_lore_engine_and_the_renderer(tmp_path: Path) -> None:
    card = str(plain_card(tmp_path))
    modules = imported_by("lore", "test", card, "I trim the lamp")
    assert "narrative_cli.lore.engine" in modules and "rich" in modules  # it ran and drew
    assert heavy(modules, NOT_FOR_A_PLAIN_CARD) == []
    as_json = imported_by("lore", "test", card, "I trim the lamp", "--json")
    assert "narrative_cli.lore.engine" in as_json
    assert heavy(as_json, NOT_FOR_A_PLAIN_CARD + ("rich",)) == []  # JSON needs no renderer


def test_regex_keys_load_the_regex_module_only_when_a_card_has_them(tmp_path: Path) -> None:
    card = plain_card(tmp_path)
    data = json.loads(card.read_text())
    data["data"]["character_book"]["entries"][0]["keys"] = ["/la+mp/i"]
    card.write_text(json.dumps(data))
    modules = imported_by("lore", "test", str(card), "I trim the LAAMP", "--json")
    assert "regex" in modules  # the lazy import is still reached when it is needed


def test_inspect_loads_no_other_stage_and_no_sandbox_for_a_plain_card(tmp_path: Path) -> None:
    modules = imported_by("inspect", str(plain_card(tmp_path)))
    assert "narrative_cli.play.inspect" in modules and "rich" in modules
    assert heavy(modules, NOT_FOR_A_PLAIN_CARD + ("narrative_cli.lore.engine",)) == []


def test_inspect_loads_mvu_and_the_sandbox_when_the_card_uses_them() -> None:
    modules = imported_by("inspect", str(ROOT / "sample_cards" / "lantern-keeper.png"), "--json")
    assert "narrative_cli.state.mvu_init" in modules  # [initvar]
    # its regex script's pattern is plain (lore.jsplain): checked without QuickJS; a pattern
    # that is not plain loads it (tests/test_startup_imports.py)
    assert "narrative_cli.lore.jsplain" in modules and "quickjs" not in modules
    others = ("httpx", "prompt_toolkit", "rich", "narrative_cli.pipeline", "narrative_cli.store",
              "narrative_cli.play.controller")  # fmt: skip
    assert heavy(modules, others) == []
