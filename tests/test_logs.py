"""Logging is set up when something first logs (``logs.py``), and the console script starts
with the garbage collector off until the command line is parsed (``cli/entry.py``): a command
that never logs loads neither ``logging`` nor the key scrub, and a log line still comes out
in our format, at the level ``-v`` chose, with keys scrubbed. Each case is a fresh process, as a
user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.test_cli_help import PROBE, heavy, plain_card

KEY = "sk-abcdefghijklmnopqrstuvwx"


def narrative(home: Path, *args: str, probe: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NARRATIVE_", "XDG_"))}
    env.update(HOME=str(home), NO_COLOR="1", COLUMNS="100")
    command = [sys.executable, "-c", probe, *args] if probe else [
        sys.executable, "-m", "narrative_cli", *args]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=60, check=False)  # fmt: skip


def card_with_a_broken_script(folder: Path) -> Path:
    """The plain card, saved under a name that holds a key, with a regex script that is not an
    object: the loader skips it with a logged warning naming the file."""
    data = json.loads(plain_card(folder).read_text())
    data["data"]["extensions"] = {"regex_scripts": ["not a script"]}
    path = folder / f"{KEY}.json"
    path.write_text(json.dumps(data))
    return path


def test_a_command_that_logs_nothing_loads_neither_logging_nor_the_scrub(tmp_path: Path) -> None:
    card = str(plain_card(tmp_path))
    for args in (("lore", "test", card, "I trim the lamp"), ("inspect", card)):
        done = narrative(tmp_path, *args, probe=PROBE)
        assert done.returncode == 0, done.stderr
        modules = set(done.stderr.rsplit("MODULES ", 1)[1].split())
        assert "rich.table" in modules  # it drew its report
        assert heavy(modules, ("logging", "narrative_cli.credentials")) == [], args


def test_a_warning_is_logged_in_our_format_with_the_key_scrubbed(tmp_path: Path) -> None:
    card = card_with_a_broken_script(tmp_path)
    done = narrative(tmp_path, "inspect", str(card))
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stderr.splitlines() if "skipped" in line)
    assert line.startswith("WARNING narrative_cli.load.regex: ")  # our handler, our format
    assert KEY not in done.stderr and "***" in line  # through the scrub filter
    assert "Keeper" in done.stdout  # and the report is drawn


def test_verbose_flags_choose_the_level_of_a_command_that_logs_late(tmp_path: Path) -> None:
    """``-vv`` reaches a logger asked for after the command started: a debug line from the
    loader's logger shows only with it."""
    probe = PROBE.replace(
        "    main()",
        "    main()\n"
        "    from narrative_cli.logs import logger\n"
        f"    logger('narrative_cli.probe').debug('late debug line %s', {KEY!r})",
    )
    card = str(plain_card(tmp_path))
    quiet = narrative(tmp_path, "inspect", card, probe=probe)
    loud = narrative(tmp_path, "-vv", "inspect", card, probe=probe)
    assert "late debug line" not in quiet.stderr
    assert "DEBUG narrative_cli.probe: late debug line ***" in loud.stderr


def test_the_console_script_turns_the_collector_back_on_for_the_command(tmp_path: Path) -> None:
    """Off while the modules load, on (with start-up's objects frozen) once the command runs:
    a long story is collected as usual."""
    probe = (
        "import gc, sys\n"
        "from narrative_cli.cli.entry import main\n"
        "sys.stderr.write('LOADING %s\\n' % gc.isenabled())\n"
        "import narrative_cli.play.inspect as report\n"
        "real = report.inspect_report\n"
        "def watched(*args, **kwargs):\n"
        "    sys.stderr.write('RUNNING %s %s\\n' % (gc.isenabled(), gc.get_freeze_count() > 0))\n"
        "    return real(*args, **kwargs)\n"
        "report.inspect_report = watched\n"
        "sys.argv = ['narrative', *sys.argv[1:]]\n"
        "main()\n"
    )
    done = narrative(tmp_path, "inspect", str(plain_card(tmp_path)), probe=probe)
    assert "LOADING False" in done.stderr and "RUNNING True True" in done.stderr, done.stderr


def test_importing_the_cli_leaves_the_collector_alone() -> None:
    """Tests and programs that import ``cli.app`` (``CliRunner``) keep their collector."""
    code = (
        "import gc, sys\n"
        "from click.testing import CliRunner\n"
        "from narrative_cli.cli.app import app\n"
        "CliRunner().invoke(app, ['roll', '1d6', '--seed', '1'])\n"
        "sys.stdout.write('%s %s' % (gc.isenabled(), gc.get_freeze_count()))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, check=True)  # fmt: skip
    assert done.stdout == "True 0"
