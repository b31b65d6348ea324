"""The foundation: version, exit codes, the README/CI agreement."""

from __future__ import annotations

import re
import subprocess
import sys

from narrative_cli import __version__
from narrative_cli.errors import (
    BadInput,
    CardError,
    ContentFiltered,
    NarrativeError,
    RequestRejected,
    TurnCancelled,
)

from .conftest import ROOT


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "narrative_cli", *args], capture_output=True, text=True, timeout=60
    )


def test_version_flag_prints_the_package_version() -> None:
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"narrative-cli {__version__}"


def test_unknown_option_is_a_usage_error_without_traceback() -> None:
    result = run_cli("--no-such-flag")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "--no-such-flag" in result.stderr


def test_error_tree_exit_codes() -> None:
    assert CardError("x").exit_code == 2
    assert issubclass(CardError, BadInput)
    assert NarrativeError("x").exit_code == 1
    assert issubclass(ContentFiltered, RequestRejected)
    assert not issubclass(TurnCancelled, Exception)  # Ctrl-C unwinds past `except Exception`


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"^    (python3 -m venv .*)$", readme, flags=re.M)
    assert len(commands) >= 2, "README starts with the play command and the test command"
    assert "narrative run sample_cards/" in commands[0]
    assert "pytest" in commands[1]
    assert "sed -n" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
