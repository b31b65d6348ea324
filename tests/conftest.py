"""Shared test fixtures: a private NARRATIVE_HOME, a clean environment, shared data paths."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from .servers import local_model, scripted_server  # noqa: F401  (shared fixtures)

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_cards"
DATA = Path(__file__).resolve().parent / "data"
SHARED = ROOT.parent / "shared"
FIXTURES = SHARED / "fixtures"

# A shell starts a background job (``cmd &`` without job control) with Ctrl-C ignored, and the
# programs it starts inherit that: then every Ctrl-C test, here and in the ``narrative`` processes
# the tests start, fails for a reason that is not ours. Take Ctrl-C back, as a terminal gives it.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite the golden prompt files under tests/golden/ instead of comparing",
    )
    parser.addoption(
        "--fuzz-examples",
        type=int,
        default=0,
        help="run the property tests of tests/test_fuzz.py with this many examples each "
        "(same as NARRATIVE_FUZZ_EXAMPLES)",
    )


def pytest_configure(config: pytest.Config) -> None:
    examples = config.getoption("--fuzz-examples", default=0)
    if examples:
        os.environ["NARRATIVE_FUZZ_EXAMPLES"] = str(examples)


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


_CLEARED_PREFIXES = ("NARRATIVE_", "OPENAI_", "ANTHROPIC_", "DEEPSEEK_", "OPENROUTER_")


@pytest.fixture(autouse=True)
def clean_environ(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own NARRATIVE_HOME, no provider keys or NARRATIVE_* settings, and
    a neutral locale."""
    for name in list(os.environ):
        if name.startswith(_CLEARED_PREFIXES):
            monkeypatch.delenv(name, raising=False)
    for name in ("EDITOR", "VISUAL"):  # /edit without text opens the user's editor
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "narrative-home"
    home.mkdir()
    monkeypatch.setenv("NARRATIVE_HOME", str(home))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("LANG", "C.UTF-8")  # the locale picks the UI language (i18n): English
    for name in ("LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    return home


def fixture_file(relative: str) -> Path:
    """A file of ../shared/fixtures; the calling test is skipped when it is absent."""
    path = FIXTURES / relative
    if not path.exists():
        pytest.skip(f"../shared/fixtures/{relative} is not available")
    return path
