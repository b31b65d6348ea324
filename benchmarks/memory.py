"""Long-story memory (issue #17 items 1 and 2): flat prompts at length, and planted facts.

f. Prompt tokens per turn at turn 100 against turn ``--turns`` (2,000), scripted replies (the
   compaction agent's too) from the zero-latency scripted server. ``--card harbor`` (default):
   a Chinese card in merged mode (writer, analysis, compaction); ``--card lantern``: the sample
   card ``lantern-keeper.png`` in serial mode (planning, dice and code tool, writing, analysis,
   llm log tool, mvu_extract), several times slower to play. Turns run with ``run_turn`` on a
   story holding a session database's text index (the automatic search is on). Tokens are the
   project's estimate over every message of every request a turn sends, averaged over the five
   turns ending at each point (one cut cycle of the 3+4 window). Baseline, same run: the same
   story with chapter memory and the automatic search off (``summary_budget: 0``,
   ``auto_recall: false``), the behaviour before #17, to ``--baseline-turns``.
g. Planted facts: a scripted Chinese story of ``--fact-turns`` (600) turns in which 20 facts
   (who hid which thing where) are told at seeded random turns, each once, in the story text
   only (the scripted analysis writes a generic summary entry, so no summary carries them);
   then 20 turns each ask about one fact by the person and the thing. A fact reaches the
   prompt when the place it names is in the writer's request of the turn that asks.

    python benchmarks/memory.py [--parts fg] [--turns 2000] [--baseline-turns 500]
                                [--fact-turns 600] [--seed 17] [--card harbor|lantern]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.servers import RecordedRequest, ScriptedServer  # noqa: E402
from tests.story_replies import folded  # noqa: E402

from narrative_cli.config import PipelineSettings, Settings  # noqa: E402
from narrative_cli.pipeline.backendset import BackendSet  # noqa: E402
from narrative_cli.pipeline.orchestrator import run_turn  # noqa: E402
from narrative_cli.pipeline.story import open_story  # noqa: E402
from narrative_cli.play.controller import PlaySession  # noqa: E402
from narrative_cli.store.sessions import SessionStore  # noqa: E402
from narrative_cli.tokens import estimate_tokens  # noqa: E402

LANTERN = ROOT / "sample_cards" / "lantern-keeper.png"
INPUTS = [
    "I trim the wick and watch the flame.",
    "I ask Edda about the drowned bell.",
    "I crank the fog horn twice.",
    "I look for the supply boat through the glass.",
    "I write the weather into the logbook.",
    "I polish the lens until it shines.",
    "I listen to the wind on the gallery.",
    "I make tea and sit by the stove.",
]


@dataclass
class Lantern:
    """Deterministic replies per agent for the lantern-keeper card (benchmarks/pipeline.py's)."""

    calls: dict[str, int] = field(default_factory=dict)

    def __call__(self, body: Any, request: RecordedRequest) -> str:
        agent = request.agent
        n = self.calls[agent] = self.calls.get(agent, 0) + 1
        if agent == "planning":
            tools = [{"tool": "roll_dice", "params": {"expr": "1d20+2", "dc": 12}},
                     {"tool": "tide_clock", "params": {"hour": n % 24}}]
            return json.dumps({"narrative_direction": f"Turn {n}: Edda teaches one more task.",
                               "key_points": ["the lamp"], "tool_calls": tools,
                               "text_recall": []})
        if agent in ("writing", "merged_writing"):
            return (f"Night {n}. You climb the iron stairs behind Edda. The lamp hisses, the lens "
                    "turns, and the beam sweeps the grey water. Edda points at the logbook: "
                    "another hour of fog, another line in her square hand. Somewhere north the "
                    f"drowned bell rings once. You note the time, {n % 24}:00.")
        if agent == "analysis":
            return json.dumps({"events": [{"type": "pass_time",
                                           "params": {"amount": 1, "unit": "hours"}}],
                               "summary_entries": [f"Night {n}: another lesson in the fog."]})
        if agent == "mvu_extract":
            return json.dumps({"patches": [{"op": "delta", "path": "/keeper/lamp_oil",
                                            "value": -1}]})
        if agent == "compaction":
            return folded(request)
        return f"<keeper_log>Hour {n % 24}: fog, lamp steady, entry {n}.</keeper_log>"


def settings_for(server: ScriptedServer, **pipeline: Any) -> Settings:
    settings = Settings(pipeline=PipelineSettings(**pipeline))
    settings.profiles["scripted"] = server.profile(read_timeout=60.0)
    settings.default_profile = "scripted"
    return settings


def request_tokens(request: RecordedRequest) -> int:
    return sum(estimate_tokens(str(m.get("content") or "")) for m in request.messages)


def play_story(
    card: Path, replies: Callable[[Any, RecordedRequest], str], inputs: Callable[[int], str],
    turns: int, *, store_turns: bool = True, **pipeline: Any,
) -> tuple[list[list[RecordedRequest]], float]:
    """Play ``turns`` turns on a fresh session database; the requests of each turn, and the
    seconds it took. ``store_turns``: through a PlaySession (every turn committed); otherwise
    ``run_turn`` on the story with the session's text index attached (the prompts are the same;
    the commits, which do not change them, are left out to save time on a loaded machine)."""
    with ScriptedServer() as server, tempfile.TemporaryDirectory() as folder:
        server.reply_with(replies)
        settings = settings_for(server, **pipeline)
        story = open_story(card, settings=settings, seed=2024)
        store = SessionStore(Path(folder) / "sessions.db")
        backends = BackendSet.from_settings(settings)
        play = PlaySession.start(store, story, backends) if store_turns else None
        if play is None:
            sid = store.create_session("bench", card_path=str(card), card_hash="",
                                       snapshot=story.snapshot.to_dict())
            story.text_index = store.text_index(sid)
        per_turn: list[list[RecordedRequest]] = []
        started = time.perf_counter()
        try:
            for number in range(1, turns + 1):
                before = len(server.requests)
                if play is not None:
                    play.play(inputs(number))
                else:
                    story.advance(run_turn(story, inputs(number), backends))
                per_turn.append(server.requests[before:])
                if number % 250 == 0:
                    print(f"    … turn {number}, {time.perf_counter() - started:.0f} s",
                          flush=True)
        finally:
            if play is not None:
                play.close()
            else:
                backends.close()
            store.close()
        return per_turn, time.perf_counter() - started


def tokens_at(per_turn: list[list[RecordedRequest]], turn: int) -> float:
    """Mean prompt tokens per turn over the five turns ending at ``turn``."""
    window = per_turn[max(turn - 5, 0) : turn]
    return sum(sum(request_tokens(r) for r in requests) for requests in window) / len(window)


def part_f(args: argparse.Namespace) -> None:
    if args.card == "lantern":
        card, replies = LANTERN, Lantern
        inputs: Callable[[int], str] = lambda number: INPUTS[number % len(INPUTS)]  # noqa: E731
        title = "lantern-keeper (serial: planning, tools, writing, analysis, post tools)"
    else:
        folder = tempfile.mkdtemp()
        card, replies = harbor_card(Path(folder)), Harbor.empty
        inputs = lambda number: WALKS[number % len(WALKS)]  # noqa: E731
        title = "a Chinese harbour card (merged: writer and analysis)"
    print(f"f. prompt tokens per turn, {title}, {args.turns} turns")
    points = [p for p in (10, 100, 500, 1000, 2000) if p <= args.turns]
    ours, seconds = play_story(card, replies(), inputs, args.turns, store_turns=False)
    folds = sum(1 for requests in ours for r in requests if r.agent == "compaction")
    print(f"  chapter memory on: {seconds:.0f} s, {folds} compaction calls")
    for point in points:
        print(f"    turn {point:>5}: {tokens_at(ours, point):>8.0f} tokens")
    if args.turns >= 100:
        ratio = tokens_at(ours, args.turns) / tokens_at(ours, 100)
        print(f"    turn {args.turns} / turn 100: {ratio:.2f}x (target <= 1.5x)")
    if args.baseline_turns:
        base, seconds = play_story(card, replies(), inputs, args.baseline_turns,
                                   store_turns=False, summary_budget=0, auto_recall=False)
        print(f"  baseline (no chapters, no automatic search): {seconds:.0f} s")
        for point in (p for p in points if p <= args.baseline_turns):
            print(f"    turn {point:>5}: {tokens_at(base, point):>8.0f} tokens")
        if args.baseline_turns >= 100:
            ratio = tokens_at(base, args.baseline_turns) / tokens_at(base, 100)
            print(f"    turn {args.baseline_turns} / turn 100: {ratio:.2f}x")


# --- g. planted facts -------------------------------------------------------------------------

PEOPLE = ["老周", "阿满", "林小雨", "秦伯", "苏娘", "韩七", "白鹭", "陆掌柜", "小石头", "温婆婆",
          "梁二", "宋先生", "阿蛮", "柳青", "程船长", "许大夫", "杜鹃", "孟三娘", "罗铁匠", "叶舟"]
THINGS = ["铜钥匙", "旧怀表", "羊皮地图", "玉扳指", "船契", "银哨子", "半块虎符", "药方", "木匣",
          "铁罗盘", "绣花荷包", "家书", "琉璃灯", "账本", "短刀", "贝壳项链", "铜铃", "画卷",
          "金叶子", "海图"]
PLACES = ["灯塔第三级台阶下", "茶馆后院的井里", "渡口第七根木桩里", "祠堂供桌夹层", "盐仓北墙砖缝",
          "老槐树的树洞", "鱼市棚顶的瓦下", "码头酒肆的酒坛底", "城隍庙香炉灰里",
          "渔网仓库的横梁上",
          "药铺柜台暗格", "石桥第二个桥洞", "钟楼的铜钟里", "船坞废弃的龙骨旁", "学堂讲台下",
          "晒盐场的草垛", "客栈二楼的床板下", "灯笼铺的纸堆里", "海神庙的神像背后", "断崖边的石缝"]
FILLER = [
    "雾从海面漫上来，渡船在码头边轻轻摇晃，灯塔的光一圈圈扫过水面。你沿着石板路慢慢走，"
    "听见远处有人收网的号子。",
    "潮水退得很远，滩涂上留下一道道水痕。你在渡口坐了一会儿，看守夜人挑着灯笼走过。",
    "雨丝细密，街上的人都躲进了屋檐下。你替船夫把缆绳系紧，又帮他把几只竹筐搬上岸。",
    "夜深了，茶馆里只剩两三个客人，说书人早已收了醒木。你喝完最后一口茶，推门走进雾里。",
]
WALKS = ["我去码头走走。", "我在渡口等船。", "我去街上转一圈。", "我回住处歇一会儿。",
         "我帮船夫搬东西。", "我去海边看潮水。"]


@dataclass
class Harbor:
    """The fog-harbour story: filler turns, a fact told at each planted turn."""

    facts: dict[int, int]  # turn → fact index
    turn: int = 0

    @classmethod
    def empty(cls) -> Harbor:
        """The same story without planted facts."""
        return cls({})

    def __call__(self, body: Any, request: RecordedRequest) -> str:
        agent = request.agent
        if agent in ("writing", "merged_writing"):
            self.turn += 1
            text = FILLER[self.turn % len(FILLER)]
            fact = self.facts.get(self.turn)
            if fact is not None:
                text += (f"{PEOPLE[fact]}把你拉到一边，压低声音说，{THINGS[fact]}被藏在了"
                         f"{PLACES[fact]}，千万别声张。")
            return text
        if agent == "analysis":
            return json.dumps({"events": [], "summary_entries": [f"第{self.turn}夜，雾港无事。"]},
                              ensure_ascii=False)
        if agent == "compaction":
            return folded(request)
        return "{}"


def harbor_card(folder: Path) -> Path:
    data = {"name": "阿澄", "description": "{{char}}是雾港渡船的船夫，熟悉港里每一个人。",
            "personality": "寡言，可靠", "scenario": "{{user}}在雾港住了下来。",
            "first_mes": "渡船的铃响了，阿澄朝你点点头。", "mes_example": "",
            "alternate_greetings": [], "tags": [], "extensions": {}}
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": data}
    path = folder / "harbor.json"
    path.write_text(json.dumps(card, ensure_ascii=False), encoding="utf-8")
    return path


def part_g(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    told = sorted(rng.sample(range(3, args.fact_turns - 10), len(PEOPLE)))
    order = list(range(len(PEOPLE)))
    rng.shuffle(order)
    facts = dict(zip(told, order, strict=True))
    asks = list(range(len(PEOPLE)))
    rng.shuffle(asks)
    total = args.fact_turns + len(asks)

    def inputs(number: int) -> str:
        if number <= args.fact_turns:
            return WALKS[number % len(WALKS)]
        fact = asks[number - args.fact_turns - 1]
        return f"我去找{PEOPLE[fact]}，问{THINGS[fact]}的下落。"

    print(f"g. planted facts: {len(PEOPLE)} facts in {args.fact_turns} turns (seed {args.seed}),"
          f" told at turns {told[0]}..{told[-1]}")
    with tempfile.TemporaryDirectory() as folder:
        card = harbor_card(Path(folder))
        per_turn, seconds = play_story(card, Harbor(facts), inputs, total)
    reached, how = 0, {"text_recall": 0, "story_summary": 0, "recent_turns": 0}
    missed = []
    for offset, fact in enumerate(asks):
        requests = per_turn[args.fact_turns + offset]
        writer = next(r for r in requests if r.agent in ("writing", "merged_writing"))
        text = "\n".join(str(m["content"]) for m in writer.messages)
        if PLACES[fact] in text:
            reached += 1
            for tag in how:
                inside = text.split(f"<{tag}>", 1)[-1].split(f"</{tag}>", 1)[0]
                if f"<{tag}>" in text and PLACES[fact] in inside:
                    how[tag] += 1
                    break
        else:
            missed.append(f"{PEOPLE[fact]} (told at turn {told[order.index(fact)]})")
    print(f"  {seconds:.0f} s; facts that reached the asking turn's prompt: {reached}/"
          f"{len(asks)} = {reached / len(asks):.0%} (target >= 90%)")
    print(f"  by block: {how}")
    if missed:
        print(f"  missed: {', '.join(missed)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", default="fg")
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--baseline-turns", type=int, default=500)
    parser.add_argument("--fact-turns", type=int, default=600)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--card", choices=("harbor", "lantern"), default="harbor",
                        help="part f's card (lantern: the sample card, slower)")
    args = parser.parse_args()
    if "g" in args.parts:
        part_g(args)
    if "f" in args.parts:
        part_f(args)


if __name__ == "__main__":
    main()
