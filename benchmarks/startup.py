"""Start-up time of the commands a user types first, against bare Python and ``llm --help``.

Run: ``python benchmarks/startup.py [--repeats N]``. Every round runs each command once, in
the same order, so that load from the other processes on the machine falls on all of them alike;
the figures are medians over the rounds. ``llm`` (Simon Willison's LLM CLI, built on Click too)
is the baseline a terminal user compares us with; it runs with ``LLM_LOAD_PLUGINS=`` so that
its plugins do not distort it. It is a benchmark-only dependency (``pip install llm``); without
it that row is skipped and said so.

The code measured is whatever ``import narrative_cli`` finds: set ``PYTHONPATH`` to measure a
worktree's ``src`` (the script puts this checkout's ``src`` first when ``PYTHONPATH`` is unset).
``--base SRC`` also runs each ``narrative`` command on another checkout's ``src`` in the same
rounds, so a before/after comparison shares the machine's load.
Every command runs with bytecode caches (in a temporary ``PYTHONPYCACHEPREFIX``), as an
installed package does, even where ``PYTHONDONTWRITEBYTECODE`` is set. Wall time is the goal;
CPU time is printed beside it because it barely moves when other processes load the machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CARD = str(ROOT / "sample_cards" / "lantern-keeper.png")
GOAL_HELP_RATIO = 0.3  # narrative --help against llm --help
GOAL_COMMAND_S = 0.25  # run --help, lore test, inspect
CLICK_WITH_RICH = "import click; import rich.console"


# What pip writes as the ``narrative`` console script (its template), for a checkout's entry point.
CONSOLE_SCRIPT = """import re
import sys
from {module} import {function}
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit({function}())
"""
SCRIPTS = Path(tempfile.mkdtemp(prefix="narrative-scripts-"))


def console_script(src: Path) -> Path:
    """The ``narrative`` script pip would install for the checkout whose ``src`` this is,
    from its own ``pyproject.toml``: the installed script in the venv names the entry point
    of whichever checkout was installed last, which may not be the code measured."""
    import tomllib

    project = tomllib.loads((src.parent / "pyproject.toml").read_text(encoding="utf-8"))
    module, function = project["project"]["scripts"]["narrative"].split(":")
    folder = SCRIPTS / str(len(list(SCRIPTS.iterdir())))
    folder.mkdir()
    script = folder / "narrative"
    script.write_text(CONSOLE_SCRIPT.format(module=module, function=function))
    return script


def narrative(*args: str, src: Path = ROOT / "src") -> list[str]:
    """``narrative ARGS`` through the console script of the checkout ``src`` belongs to."""
    return [sys.executable, str(console_script(src)), *args]


def llm_command() -> list[str] | None:
    """``llm --help`` when the llm package is installed in this interpreter, else None."""
    script = Path(sys.executable).with_name("llm")
    if script.exists():
        return [sys.executable, str(script), "--help"]
    found = shutil.which("llm")
    return [found, "--help"] if found else None


def commands(base: str | None = None, card: str = CARD) -> dict[str, list[str]]:
    """What is timed, in the order each round runs it; with ``base`` (another checkout's
    ``src``), each ``narrative`` command also runs on that code, as ``… (base)``. ``card`` is
    the card ``lore test`` and ``inspect`` read (the goals are stated for the sample card)."""
    here = Path((os.environ.get("PYTHONPATH") or str(ROOT / "src")).split(os.pathsep)[0])
    table = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import click": [sys.executable, "-c", "import click"],  # any Click CLI's floor
        # what a command that draws (``inspect``, ``lore test``) cannot go below
        "click + rich.console": [sys.executable, "-c", CLICK_WITH_RICH],
        "narrative --help": narrative("--help", src=here),
        "narrative run --help": narrative("run", "--help", src=here),
        "narrative lore test": narrative("lore", "test", card, "text", src=here),
        "narrative inspect": narrative("inspect", card, src=here),
    }
    if base is not None:
        for name in [name for name in table if name.startswith("narrative ")]:
            words = table[name][2:]  # after the interpreter and this checkout's script
            table[f"{name} (base)"] = [*ENV_MARK, base, *narrative(*words, src=Path(base))]
    llm = llm_command()
    if llm is not None:
        table["llm --help"] = llm
    return table


ENV_MARK = ("--pythonpath",)  # a command starting so runs with PYTHONPATH set to what follows


def split_env(command: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The command and its environment (``ENV_MARK`` PATH … runs with ``PYTHONPATH=PATH``)."""
    if command[: len(ENV_MARK)] == list(ENV_MARK):
        path = command[len(ENV_MARK)]
        return command[len(ENV_MARK) + 1 :], dict(env, PYTHONPATH=path)
    return command, env


def environment(cache: str) -> dict[str, str]:
    """As an installed package runs: with bytecode caches (kept in ``cache``, out of the tree),
    whatever PYTHONDONTWRITEBYTECODE says, else every start would compile our sources anew."""
    env = dict(os.environ, LLM_LOAD_PLUGINS="", NO_COLOR="1", COLUMNS="100")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = cache
    env.setdefault("PYTHONPATH", str(ROOT / "src"))
    return env


def time_once(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one run; a failing command stops the benchmark.
    CPU time hardly grows when other processes load the machine; wall time does."""
    command, env = split_env(command, env)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def measure(
    repeats: int, base: str | None = None, card: str = CARD
) -> tuple[dict[str, float], dict[str, float]]:
    """Median wall and CPU seconds per command, the commands alternating round by round."""
    table = commands(base, card)
    with tempfile.TemporaryDirectory(prefix="narrative-startup-") as cache:
        env = environment(cache)
        for command in table.values():  # warm the file cache and write the .pyc files
            time_once(command, env)
        return _rounds(table, env, repeats)


def _rounds(
    table: dict[str, list[str]], env: dict[str, str], repeats: int
) -> tuple[dict[str, float], dict[str, float]]:
    wall: dict[str, list[float]] = {name: [] for name in table}
    cpu: dict[str, list[float]] = {name: [] for name in table}
    for _ in range(repeats):
        for name, command in table.items():
            seconds, used = time_once(command, env)
            wall[name].append(seconds)
            cpu[name].append(used)
    return _medians(wall), _medians(cpu)


def _medians(values: dict[str, list[float]]) -> dict[str, float]:
    return {name: statistics.median(times) for name, times in values.items()}


def report(medians: dict[str, float], cpu: dict[str, float]) -> None:
    bare = medians["python -c pass"]
    llm = medians.get("llm --help")
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.2f}")
    print(f"{'command':<31} {'wall s':>7} {'x python':>9} {'x llm':>7} {'cpu s':>7}")
    for name, value in medians.items():
        versus_llm = f"{value / llm:7.2f}" if llm else f"{'-':>7}"
        print(f"{name:<31} {value:7.3f} {value / bare:9.1f} {versus_llm} {cpu[name]:7.3f}")
    if llm is None:
        print("llm --help: skipped (llm is not installed: pip install llm)")
    else:
        ratio = medians["narrative --help"] / llm
        verdict = "met" if ratio <= GOAL_HELP_RATIO else "missed"
        print(f"goal narrative --help <= {GOAL_HELP_RATIO}x llm --help: {ratio:.2f}x, {verdict}")
    for name in ("narrative run --help", "narrative lore test", "narrative inspect"):
        verdict = "met" if medians[name] <= GOAL_COMMAND_S else "missed"
        print(f"goal {name} <= {GOAL_COMMAND_S} s: {medians[name]:.3f} s, {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15, help="rounds (default 15)")
    parser.add_argument(
        "--base", metavar="SRC", help="another checkout's src: its commands run too, as (base)"
    )
    parser.add_argument(
        "--card", default=CARD, help="the card for lore test and inspect (default: the sample)"
    )
    args = parser.parse_args()
    if args.card != CARD:
        print(f"card: {args.card} (the goals are stated for {Path(CARD).name})")
    report(*measure(args.repeats, args.base, str(Path(args.card).resolve())))


if __name__ == "__main__":
    main()
