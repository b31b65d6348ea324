"""Session store benchmark: a 2,000-turn session with realistic records and snapshots.

Prints medians (machines are noisy):
- commit time per turn around turn 10 and around turn N, and their ratio (turn 10 is the
  baseline measured in the same run);
- database bytes per turn, against the baseline of storing every record and snapshot whole
  (zlib-compressed JSON, computed in the same run);
- resume time (latest record + snapshot) at turn 10 and at turn N, and the full-history load.

Records follow ``TurnResult.to_record()`` and snapshots ``Snapshot.to_dict()``: per turn a
1,500-character Chinese narrative (compressing about 2x, like the real chats in
../shared/fixtures), plan, dice results, events, lore activations and usage; a state with a
200-event sliding log, MVU variables that change every turn, one summary per turn (all kept),
and the real Mersenne Twister state.

    python benchmarks/store.py [--turns 2000] [--window 21] [--repeat 3] [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

from narrative_cli.rng import new_rng, rng_state
from narrative_cli.store import SessionStore

PHRASES = (
    "你推开吱呀作响的房门",
    "走廊里一片昏暗",
    "应急灯闪烁着微弱的光",
    "远处传来低沉的嘶吼",
    "梅布尔紧紧抓住你的衣袖",
    "空气中弥漫着血腥和腐臭的气味",
    "你屏住呼吸侧耳倾听",
    "楼梯间的门被什么东西撞得砰砰作响",
    "手电筒的光束扫过斑驳的墙壁",
    "她的声音在颤抖",
    "“我们得离开这里。”",
    "你握紧了手中的消防斧",
    "窗外的新世界市陷入一片死寂",
    "脚步声越来越近",
    "一道黑影从拐角掠过",
    "你想起了家人的照片",
    "冰冷的汗水顺着额头流下",
    "“别出声。”你压低声音说道",
    "墙上的挂钟停在了三点十七分",
    "乔治的房门半掩着",
    "地板上拖着一道长长的暗红色痕迹",
    "她点了点头，眼里满是恐惧",
    "你数着剩下的罐头",
    "收音机里只剩下沙沙的杂音",
    "楼下传来玻璃碎裂的声音",
    "你检查了一遍门锁",
)
ITEMS = ("手电筒", "消防斧", "罐头", "绷带", "电池", "打火机", "矿泉水", "撬棍", "收音机", "钥匙")
NPCS = ("梅布尔", "乔治", "管理员", "701的老人", "送货员", "陌生女孩")


CHARACTERS = [chr(0x4E00 + i * 7 % 20000) for i in range(2500)]


def prose(rng: random.Random, chars: int) -> str:
    """Chinese-looking text that zlib compresses about 2x, like real narratives do."""
    parts: list[str] = []
    size = 0
    while size < chars:
        if rng.random() < 0.7:
            part = "".join(rng.choice(CHARACTERS) for _ in range(rng.randint(2, 8)))
        else:
            part = rng.choice(PHRASES)
        parts.append(part + rng.choice("，。！……"))
        size += len(parts[-1])
    return "".join(parts)


def make_record(n: int, rng: random.Random) -> dict[str, Any]:
    """One turn record, shaped like ``TurnResult.to_record()``."""
    return {
        "version": 1,
        "number": n,
        "user_input": prose(rng, 30),
        "narrative": prose(rng, 1500),
        "mode": "serial",
        "plan": {
            "scene_setting": prose(rng, 80),
            "beats": [prose(rng, 60) for _ in range(4)],
            "tool_calls": [{"tool": "roll_dice", "args": {"expr": "1d20+2", "dc": 12}}],
        },
        "tool_results": [
            {"tool": "roll_dice", "line": f"1d20+2 = {rng.randint(3, 22)} (DC 12)", "ok": True}
            for _ in range(2)
        ],
        "post_outputs": {"status": prose(rng, 300)},
        "events_applied": [
            {"type": "add_item", "item": rng.choice(ITEMS), "quantity": 1} for _ in range(4)
        ],
        "events_rejected": [{"type": "move", "reason": "unknown location"}],
        "summary_entries": [f"[第{n}轮] " + prose(rng, 120)],
        "mvu_applied": [{"op": "replace", "path": "/角色/体力", "value": rng.randint(0, 100)}],
        "mvu_rejected": [],
        "lore": [
            {
                "uid": rng.randint(0, 300),
                "comment": prose(rng, 12),
                "route": "keyword",
                "reason": "key matched",
            }
            for _ in range(10)
        ],
        "warnings": [],
        "budget_cuts": [],
        "state_text": prose(rng, 400),
        "usage": {
            "calls": [
                {
                    "agent": a,
                    "prompt_tokens": rng.randint(3000, 9000),
                    "completion_tokens": rng.randint(200, 1500),
                    "cached_tokens": rng.randint(0, 3000),
                    "latency_ms": 1234.5,
                }
                for a in ("planning", "writing", "analysis")
            ]
        },
    }


class World:
    """The evolving story state the snapshots are taken from."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.dice = new_rng(seed)
        self.summaries: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.mvu = {
            f"角色{i}": {"体力": 100, "理智": 80, "好感": 0, "状态": "正常"} for i in range(15)
        }

    def advance(self, n: int) -> dict[str, Any]:
        """Play turn n and return its snapshot, shaped like ``Snapshot.to_dict()``."""
        rng = self.rng
        for _ in range(rng.randint(1, 3)):
            self.dice.random()
        self.summaries.append({"turn": n, "text": f"[第{n}轮] " + prose(rng, 120)})
        self.events += [
            {
                "type": "add_item",
                "event": {"item": rng.choice(ITEMS)},
                "accepted": True,
                "time": {"day": n // 8, "hour": n % 24},
                "turn": n,
            }
            for _ in range(rng.randint(1, 4))
        ]
        del self.events[:-200]
        self.mvu[f"角色{rng.randrange(15)}"]["体力"] = rng.randint(0, 100)
        return {
            "version": 1,
            "turn": n,
            "state": {
                "time": {"day": n // 8, "hour": n % 24, "minute": 0},
                "location": rng.choice(("705公寓", "走廊", "楼梯间", "701")),
                "inventory": {item: rng.randint(0, 5) for item in ITEMS},
                "relationships": {npc: rng.randint(-100, 100) for npc in NPCS},
                "quests": {"逃离公寓": {"status": "active", "notes": prose(rng, 60)}},
                "flags": {f"flag{i}": rng.random() < 0.5 for i in range(10)},
                "event_log": list(self.events),
                "known_locations": ["705公寓", "走廊", "楼梯间", "701", "天台"],
                "known_npcs": list(NPCS),
            },
            "mvu": self.mvu,
            "summaries": {"lang": "zh", "entries": list(self.summaries)},
            "timed": {"sticky": {"12": n + 2}, "cooldown": {}},
            "rng": rng_state(self.dice),
            "windows": {"planning": max(0, n - 8), "writing": max(0, n - 6)},
            "variables": {},
        }


def whole_bytes(record: dict[str, Any], snapshot: dict[str, Any]) -> int:
    """The baseline: this turn's record and snapshot stored whole, compressed."""
    size = 0
    for value in (record, snapshot):
        size += len(zlib.compress(json.dumps(value, ensure_ascii=False).encode("utf-8"), 6))
    return size


def timed(action: Any, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def run(turns: int, window: int, seed: int, folder: Path) -> dict[str, float]:
    """One 2,000-turn session; the medians of this run."""
    path = folder / "sessions.db"
    store = SessionStore(path)
    world = World(seed)
    session = store.create_session(
        "bench",
        card_path="c.png",
        card_hash="h",
        snapshot=world.advance(0),
        greeting={"narrative": "开场"},
    )
    commits: list[float] = []
    baseline = 0
    numbers: dict[str, float] = {}
    for n in range(1, turns + 1):
        record, snapshot = make_record(n, world.rng), world.advance(n)
        baseline += whole_bytes(record, snapshot)
        start = time.perf_counter()
        store.commit_turn(session, record, snapshot)
        commits.append(time.perf_counter() - start)
        if n == 10:
            numbers["resume_early"] = timed(lambda: store.resume(session), window)
    numbers["resume_late"] = timed(lambda: store.resume(session), window)
    numbers["history"] = timed(lambda: store.turns(session), 5)
    numbers["snapshot_json"] = len(json.dumps(snapshot, ensure_ascii=False).encode("utf-8"))
    store.db.query("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    half = window // 2
    numbers["commit_early"] = statistics.median(commits[max(0, 9 - half) : 10 + half])
    numbers["commit_late"] = statistics.median(commits[-window:])
    numbers["bytes_per_turn"] = path.stat().st_size / turns
    numbers["baseline_per_turn"] = baseline / turns
    return numbers


def report(turns: int, window: int, runs: list[dict[str, float]]) -> None:
    m = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    ms = 1000
    print(
        f"turns: {turns}   runs: {len(runs)}   (medians over {window} turns / calls, "
        "then over runs)"
    )
    print(f"commit per turn at turn 10:   {m['commit_early'] * ms:8.2f} ms")
    print(
        f"commit per turn at turn {turns}: {m['commit_late'] * ms:8.2f} ms   "
        f"ratio {m['commit_late'] / m['commit_early']:.2f}x"
    )
    print(
        f"database bytes per turn:      {m['bytes_per_turn']:10,.0f}   (every turn stored "
        f"whole, compressed: {m['baseline_per_turn']:,.0f}; "
        f"{m['baseline_per_turn'] / m['bytes_per_turn']:.1f}x smaller)"
    )
    print(f"snapshot at turn {turns}:       {m['snapshot_json']:10,.0f} bytes of JSON")
    print(f"resume at turn 10:            {m['resume_early'] * ms:8.2f} ms")
    print(
        f"resume at turn {turns}:          {m['resume_late'] * ms:8.2f} ms   "
        f"ratio {m['resume_late'] / m['resume_early']:.2f}x"
    )
    print(f"load all {turns} turn records:  {m['history'] * ms:8.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--window", type=int, default=21)
    parser.add_argument("--repeat", type=int, default=1, help="independent runs")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    runs = []
    for index in range(args.repeat):
        with tempfile.TemporaryDirectory() as folder:
            runs.append(run(args.turns, args.window, args.seed + index, Path(folder)))
    report(args.turns, args.window, runs)


if __name__ == "__main__":
    main()
