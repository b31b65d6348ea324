"""Issue #13 items 15 and 16: odd paths are refused in one line, never hang or crash.

A FIFO, a directory or a character device given as a card, lorebook, preset, persona or chat
file is refused (exit 2) before it is opened; an unusable ``NARRATIVE_HOME`` (a file, a path
under a file, a read-only mount) names the folder and the reason (exit 2).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, SAMPLES

CARD = str(SAMPLES / "lantern-keeper.png")


def narrative(*args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if home is not None:
        env["NARRATIVE_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "narrative_cli", *args], input="",
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=30)


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "card.png"
    os.mkfifo(path)
    return path


def one_line_refusal(done: subprocess.CompletedProcess[str], path: Path | str, what: str) -> None:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith(f"error: {path}: is {what}"), done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr


def test_a_fifo_card_is_refused_by_inspect_instead_of_hanging(fifo: Path) -> None:
    one_line_refusal(narrative("inspect", str(fifo)), fifo, "a FIFO (named pipe)")


def test_a_character_device_card_is_refused() -> None:
    one_line_refusal(narrative("inspect", "/dev/zero"), "/dev/zero", "a device")


def test_a_directory_card_is_refused(tmp_path: Path) -> None:
    one_line_refusal(narrative("inspect", str(tmp_path)), tmp_path, "a directory")


@pytest.mark.parametrize("option", ["--lorebook", "--preset"])
def test_a_fifo_lorebook_or_preset_is_refused(fifo: Path, option: str) -> None:
    one_line_refusal(narrative("inspect", CARD, option, str(fifo)), fifo, "a FIFO")


def test_a_fifo_persona_and_chat_are_refused(tmp_path: Path) -> None:
    persona = tmp_path / "persona.txt"
    os.mkfifo(persona)
    done = narrative("run", CARD, "--persona", str(persona), "--provider", "openai",
                     "--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    one_line_refusal(done, persona, "a FIFO")
    chat = tmp_path / "chat.jsonl"
    os.mkfifo(chat)
    one_line_refusal(narrative("sessions", "import", str(chat), "--card", CARD), chat, "a FIFO")


# --- NARRATIVE_HOME ---------------------------------------------------------------------------
def assert_home_refused(done: subprocess.CompletedProcess[str], folder: Path, why: str) -> None:
    assert done.returncode == 2, done.stderr
    first = done.stderr.splitlines()[0]
    assert f"{folder} (from NARRATIVE_HOME): {why}" in first, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr


def test_a_file_as_narrative_home_is_named_with_the_reason(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.write_text("not a folder")
    for args in (("sessions", "list"), ("config", "init"),
                 ("run", CARD, "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1",
                  "--model", "m")):
        assert_home_refused(narrative(*args, home=home), home, "it is a file, not a folder")


def test_a_home_under_a_file_names_the_file(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    home = blocker / "home"
    assert_home_refused(narrative("sessions", "list", home=home), home,
                        f"{blocker} is a file, not a folder")


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """A read-only bind mount (root can write through chmod, not through a ro mount)."""
    source, target = tmp_path / "rw", tmp_path / "ro"
    source.mkdir()
    target.mkdir()
    mounted = subprocess.run(["mount", "--bind", str(source), str(target)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot bind-mount here (not root or no mount permission)")
    try:
        remount = ["mount", "-o", "remount,bind,ro", str(target)]
        if subprocess.run(remount, capture_output=True).returncode != 0:
            pytest.skip("cannot remount read-only here")
        yield target
    finally:
        subprocess.run(["umount", str(target)], capture_output=True)


def test_a_read_only_home_says_so(read_only_dir: Path) -> None:
    assert_home_refused(narrative("sessions", "list", home=read_only_dir), read_only_dir,
                        "it is on a read-only file system")
