"""Loading speed: the largest fixture card and a generated 5,000-entry world.

Run: ``python benchmarks/load.py [--repeats N]``. Each number is the median of N runs, next to a
baseline measured in the same run on the same bytes (``json.loads`` of the card's JSON payload,
or of the world file's text), so the ratio says what our parsing, checks and conversion cost on
top of plain JSON decoding. The card part is skipped with a message when ../shared is absent.
"""

from __future__ import annotations

import argparse
import base64
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from narrative_cli.load import load_card, load_lorebook  # noqa: E402
from narrative_cli.load.cards import card_chunks  # noqa: E402
from narrative_cli.load.png import is_png, text_chunks  # noqa: E402

FIXTURES = ROOT.parent / "shared" / "fixtures"
CARD_SUFFIXES = (".png", ".json", ".charx")


def median_ms(action: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``action`` in milliseconds (one warm-up run first)."""
    action()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def fixture_cards() -> list[Path]:
    """Every card file among the fixtures (lorebooks, presets and chats excluded)."""
    if not FIXTURES.is_dir():
        return []
    cards = []
    for path in FIXTURES.rglob("*"):
        if path.suffix in CARD_SUFFIXES and path.is_file():
            try:
                load_card(path)
            except Exception:  # noqa: BLE001 - not a card (world, preset, no-card.png)
                continue
            cards.append(path)
    return cards


def card_payload(path: Path) -> str:
    """The card JSON text the loader ends up decoding."""
    data = path.read_bytes()
    if is_png(data):
        return base64.b64decode(card_chunks(text_chunks(data))[0].text).decode("utf-8")
    return data.decode("utf-8")


def world_file(folder: Path, count: int) -> Path:
    """A SillyTavern world file with ``count`` entries carrying the full 1.18 field set."""
    entries = {}
    for uid in range(count):
        entries[str(uid)] = {
            "uid": uid, "key": [f"place{uid}", f"地点{uid}"], "keysecondary": [f"clue{uid}"],
            "comment": f"Entry {uid}", "content": f"Lore text number {uid}. " * 8,
            "constant": uid % 10 == 0, "vectorized": False, "selective": True,
            "selectiveLogic": uid % 4, "addMemo": True, "order": 100 + uid % 50,
            "position": uid % 5, "disable": False, "ignoreBudget": False,
            "excludeRecursion": False, "preventRecursion": False, "delayUntilRecursion": False,
            "probability": 100, "useProbability": True, "depth": 4, "group": "", "role": None,
            "groupOverride": False, "groupWeight": 100, "scanDepth": None,
            "caseSensitive": None, "matchWholeWords": None, "useGroupScoring": None,
            "automationId": "", "sticky": 0, "cooldown": 0, "delay": 0, "triggers": [],
            "characterFilter": {"isExclude": False, "names": [], "tags": []},
            "displayIndex": uid, "outletName": "", "matchScenario": False,
        }
    path = folder / "big-world.json"
    path.write_text(json.dumps({"entries": entries}, ensure_ascii=False), encoding="utf-8")
    return path


def report(label: str, ours: float, baseline: float, baseline_label: str) -> None:
    print(f"  {label}: {ours:8.2f} ms median; {baseline_label}: {baseline:8.2f} ms; "
          f"ratio {ours / baseline:5.1f}x")


def bench_card(card: Path, why: str, repeats: int) -> None:
    text = card_payload(card)
    print(f"card ({why}): {card.relative_to(FIXTURES)} ({card.stat().st_size:,} bytes, "
          f"{len(text):,} chars of JSON)")
    ours = median_ms(lambda: load_card(card), repeats)
    report("load_card", ours, median_ms(lambda: json.loads(text), repeats),
           "json.loads of its JSON")
    report("load_card", ours, median_ms(lambda: card.read_bytes(), repeats),
           "reading the file")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    repeats = parser.parse_args().repeats
    cards = fixture_cards()
    if not cards:
        print(f"card: skipped ({FIXTURES} is absent)")
    else:
        biggest = max(cards, key=lambda p: p.stat().st_size)
        richest = max(cards, key=lambda p: len(card_payload(p)))
        bench_card(biggest, "largest file", repeats)
        if richest != biggest:
            bench_card(richest, "largest card JSON", repeats)
    with tempfile.TemporaryDirectory() as folder:
        world = world_file(Path(folder), 5000)
        text = world.read_text(encoding="utf-8")
        print(f"world: 5,000 entries ({world.stat().st_size:,} bytes)")
        ours = median_ms(lambda: load_lorebook(world), max(5, repeats // 3))
        baseline = median_ms(lambda: json.loads(text), max(5, repeats // 3))
        report("load_lorebook", ours, baseline, "json.loads of the file")


if __name__ == "__main__":
    main()
