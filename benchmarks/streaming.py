"""Streaming benchmark: time to show a streamed reply of 0.5, 1, 2 and 5 MB (issue #13 item 19).

The writer's text goes through ``ui.status.TurnView`` exactly as in a turn: ``TextDelta``
events of a few characters each (like SSE deltas), once in line mode (no live region: text is
written as it arrives) and once with a live status line (a redrawing terminal, emulated by a
forced-terminal console writing to memory, refreshed by hand every 100 chunks the way its
10-per-second timer would). The reply is Chinese and English prose with a newline every 60
to 400 characters, plus one 200 KB paragraph with no newline at all (the live region's worst
case). Printed: seconds per size and seconds per MB; linear work shows a flat s/MB, quadratic
work a s/MB that grows with the size (the baseline is the smallest size, same run).

    python benchmarks/streaming.py [--sizes 0.5,1,2,5] [--chunk 8] [--modes line,live]
"""

from __future__ import annotations

import argparse
import io
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from narrative_cli.pipeline.events import TextDelta  # noqa: E402
from narrative_cli.ui.console import THEME, Consoles  # noqa: E402
from narrative_cli.ui.status import TurnView  # noqa: E402

try:  # the console every view uses since issue #13; plain Rich before it (baseline runs)
    from narrative_cli.ui.console import SafeConsole as ViewConsole
except ImportError:  # pragma: no cover - an older checkout
    from rich.console import Console as ViewConsole  # type: ignore[assignment]

WORDS = "灯塔的光扫过海面 雾气在礁石间缓缓散开 Mara lifts the lantern and waits".split()


def reply_text(megabytes: float, seed: int = 7) -> str:
    """Prose of about ``megabytes`` MB (UTF-8 counted as characters) with one long paragraph."""
    rng = random.Random(seed)
    target = int(megabytes * 1_000_000)
    parts: list[str] = []
    size = 0
    long_done = False
    while size < target:
        if not long_done and size > target // 2:
            piece = " ".join(rng.choice(WORDS) for _ in range(20_000))[:200_000] + "\n"
            long_done = True
        else:
            line_len = rng.randint(60, 400)
            piece = " ".join(rng.choice(WORDS) for _ in range(line_len // 5))[:line_len] + "\n"
        parts.append(piece)
        size += len(piece)
    return "".join(parts)


def consoles(live: bool) -> Consoles:
    """Consoles writing to memory; ``live`` makes the out console a redrawing terminal."""

    def make() -> ViewConsole:
        return ViewConsole(
            file=io.StringIO(), theme=THEME, force_terminal=live, width=100, color_system=None
        )

    return Consoles(out=make(), err=make(), color=False, live=live)


def stream(text: str, chunk: int, live: bool) -> float:
    """Seconds to push ``text`` through a TurnView in ``chunk``-character deltas."""
    started = time.perf_counter()
    with TurnView(consoles(live), "en") as view:
        live_region = view._live  # noqa: SLF001 - the benchmark drives the refresh by hand
        if live_region is not None:
            live_region.auto_refresh = False
        for index in range(0, len(text), chunk):
            view(TextDelta("writing", text[index : index + chunk]))
            if live_region is not None and index // chunk % 100 == 0:
                live_region.refresh()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="0.5,1,2,5", help="reply sizes in MB")
    parser.add_argument("--chunk", type=int, default=8, help="characters per streamed delta")
    parser.add_argument("--modes", default="line,live", help="line, live or both")
    args = parser.parse_args()
    sizes = [float(size) for size in args.sizes.split(",")]
    print(f"{'mode':<10}{'MB':>6}{'seconds':>10}{'s/MB':>8}{'vs smallest':>13}")
    for live in [mode == "live" for mode in args.modes.split(",")]:
        base = None
        for size in sizes:
            seconds = stream(reply_text(size), args.chunk, live)
            per_mb = seconds / size
            base = base or per_mb
            mode = "live" if live else "line"
            print(f"{mode:<10}{size:>6.1f}{seconds:>10.2f}{per_mb:>8.2f}{per_mb / base:>12.2f}×")


if __name__ == "__main__":
    main()
