"""Lore activation speed: one activation (recursion included) over 500 / 5,000 / 50,000 entries.

Synthetic Chinese world: 2-4 character keys, 5 % regex keys, a third of the entries with
secondary keys, contents that mention other entries' keys (so recursion runs), scanned against
20 turns of Chinese text (40 messages). The baseline is the naive per-entry loop (each key
searched in the text on its own, one pass, no recursion), timed in the same process.
Timings are medians; "cold" clears the per-text memo so the text is scanned from scratch;
"cold cpu" is the cold pass's CPU time, which a loaded machine inflates less than wall time.
To compare two versions on a noisy machine, use ``benchmarks/lore_ab.py``.

    python benchmarks/lore.py [--repeat N] [--sizes 500,5000,50000]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from narrative_cli.domain import LoreEntry
from narrative_cli.lore.engine import LoreSettings, activate
from narrative_cli.lore.index import index_for
from narrative_cli.lore.jsregex import compile_js, split_key

CHARS = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下"
    "过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两"
    "体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线"
    "内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并"
)
SURNAMES = "赵钱孙李周吴郑王冯陈褚卫蒋沈韩杨朱秦尤许何吕施张孔曹严华金魏陶姜"


def word(rng: random.Random) -> str:
    return rng.choice(SURNAMES) + "".join(rng.choice(CHARS) for _ in range(rng.randint(1, 3)))


def sentence(rng: random.Random, vocabulary: list[str], mentions: int, length: int) -> str:
    parts = [rng.choice(CHARS) for _ in range(length)]
    for _ in range(mentions):
        parts.insert(rng.randrange(len(parts) + 1), rng.choice(vocabulary))
    return "".join(parts)


def make_world(size: int, seed: int = 7) -> tuple[list[LoreEntry], list[str]]:
    rng = random.Random(seed)
    vocabulary = [word(rng) for _ in range(size * 2)]
    entries: list[LoreEntry] = []
    for uid in range(size):
        keys = rng.sample(vocabulary, rng.randint(1, 3))
        if rng.random() < 0.05:
            base = keys[0]
            keys[0] = f"/{base[0]}[{base[1]}{rng.choice(CHARS)}]{base[2:]}/"
        secondary = rng.sample(vocabulary, rng.randint(1, 2)) if rng.random() < 1 / 3 else []
        entries.append(
            LoreEntry(
                uid=uid,
                keys=keys,
                secondary_keys=secondary,
                selective=True,
                selective_logic=rng.choice((0, 0, 1, 2, 3)),
                content=sentence(rng, vocabulary, int(rng.random() < 0.4), rng.randint(60, 200)),
                order=rng.randint(0, 200),
                position=rng.choice((0, 1, 4)),
                source="bench",
            )
        )
    history = []
    for _ in range(20):
        history.append(sentence(rng, vocabulary, int(rng.random() < 0.5), 30))
        history.append(sentence(rng, vocabulary, 1, 300))
    return entries, history


def naive_pass(entries: list[LoreEntry], text: str) -> int:
    """The original extension's approach: every key of every entry searched on its own."""
    lowered = text.lower()
    hits = 0
    for entry in entries:
        for key in entry.keys + entry.secondary_keys:
            parts = split_key(key)
            if parts is not None:
                matched = compile_js(*parts).search(text)
            else:
                matched = key.lower() in lowered
            if matched:
                hits += 1
                break
    return hits


def median_ms(run: Callable[[], object], repeat: int) -> float:
    return median_wall_cpu_ms(run, repeat)[0]


def median_wall_cpu_ms(run: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Median wall and CPU (process) milliseconds: on a loaded machine the wall time grows
    with the waiting, the CPU time much less."""
    walls, cpus = [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        run()
        walls.append((time.perf_counter() - start) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    return statistics.median(walls), statistics.median(cpus)


def bench(size: int, repeat: int) -> dict[str, float]:
    entries, history = make_world(size)
    settings = LoreSettings(depth=None)  # every message of the 20 turns, as before issue #16
    user_input = history.pop()
    text = "\n".join(history + [user_input])
    start = time.perf_counter()
    index = index_for(entries, settings)
    build_ms = (time.perf_counter() - start) * 1000

    def cold() -> object:
        index.probes.clear_memo()
        return activate(index, history=history, user_input=user_input, settings=settings)

    def warm() -> object:
        return activate(index, history=history, user_input=user_input, settings=settings)

    result = activate(index, history=history, user_input=user_input, settings=settings)
    cold_ms, cold_cpu_ms = median_wall_cpu_ms(cold, repeat)
    return {
        "entries": size,
        "index_ms": build_ms,
        "cold_ms": cold_ms,
        "cold_cpu_ms": cold_cpu_ms,
        "warm_ms": median_ms(warm, repeat),
        "naive_ms": median_ms(lambda: naive_pass(entries, text), max(3, repeat // 4)),
        "activated": len(result.activated),
        "steps": result.steps,
        "text_chars": len(text),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--sizes", default="500,5000,50000")
    args = parser.parse_args()
    rows = [bench(int(size), args.repeat) for size in args.sizes.split(",")]
    print(
        f"{'entries':>8} {'index ms':>9} {'cold ms':>8} {'cold cpu':>8} {'warm ms':>8} "
        f"{'naive ms':>9} {'naive/cold':>10} {'active':>6} {'steps':>5}"
    )
    for row in rows:
        print(
            f"{row['entries']:>8} {row['index_ms']:>9.1f} {row['cold_ms']:>8.2f} "
            f"{row['cold_cpu_ms']:>8.2f} "
            f"{row['warm_ms']:>8.2f} {row['naive_ms']:>9.2f} "
            f"{row['naive_ms'] / row['cold_ms']:>9.1f}x {row['activated']:>6} {row['steps']:>5}"
        )
    print(f"text: {rows[0]['text_chars']} characters (20 turns)")
    if len(rows) > 1:
        growth = rows[-1]["cold_ms"] / rows[0]["cold_ms"]
        print(
            f"growth {rows[0]['entries']} → {rows[-1]['entries']} entries: {growth:.1f}x "
            f"(entries ×{rows[-1]['entries'] / rows[0]['entries']:.0f})"
        )


if __name__ == "__main__":
    main()
