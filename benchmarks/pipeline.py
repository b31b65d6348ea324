"""Pipeline benchmark (issue 5, item 13): overhead, prefix reuse, real cache use, parallel mode.

a. Overhead per turn: whole turns of the sample cards against the scripted loopback server
   with zero latency. Each turn's wall time is split into time inside ``Backend.complete``
   (HTTP on loopback) and everything else (lore, prompts, tools, parsing, state, accounting),
   which is our overhead. Baseline, same run: the same request bodies posted with raw httpx.
b. Prefix reuse over a 40-turn session: for every agent, the share of each prompt (characters
   of all messages) that repeats the start of the same agent's previous prompt, i.e. what a
   provider's prefix cache could serve. Three window policies run in this process on the same
   scripted session: ours (the n+m window, the summary holding only the turns before the
   window), a SillyTavern-style sliding window of n+m turns (the oldest dropped every turn),
   and the design's original formula (n+m window, but ``<story_summary>`` holds every summary
   and grows every turn, placed before the window).
c. The same session's prompts on the embedded llama.cpp model (SmolLM2-135M, one server slot
   per agent): the real ``cached_tokens / prompt_tokens`` it reports, ours against sliding.
   The story replies are the scripted ones; the model only answers 4 tokens per prompt, as
   only the prompt side matters for caching.
d. Parallel against serial wall time with 200 ms of latency injected into every call.
e. Overhead at length (issue 17): the story fast-forwarded to turn 10 and to turn
   ``--long-turn`` (a played turn's snapshot, then that many turns of history, one summary
   entry each), then ``--long-samples`` whole turns played at each point; the median overhead
   per turn (CPU time of the turn's thread outside ``Backend.complete``) at the long point
   over the short one.
f. Issue 17: llama.cpp's per-slot prefix cache replayed without a model (``prefix_cache.py``):
   the share of prompt tokens (the bundled model's own tokenizer, else characters) its slots
   would serve over ``--turns`` turns of the serial session, all agents, ours against the
   sliding window, in one run. ``--tools-every N``: the planner calls its tools on every Nth
   turn only (a real planner does not roll every turn).
w. Where part f's evaluated tokens go (``cache_parts.py``): the same session (ours, chunk
   reuse as ``--cache-reuse``), each agent's tokens the slots evaluate again every turn,
   summed per prompt part (message role and ``<tag>`` block), in prompt order.
v. The rule of part f checked against the real server: ``--local-turns`` turns on the
   embedded model, each call recorded to ``--record`` as it comes, then the rule replayed on
   the very prompts the server got, call by call (``--compare-only`` reads an earlier file).

    python benchmarks/pipeline.py [--turns 40] [--overhead-turns 20] [--local-turns 40]
                                  [--parallel-turns 6] [--skip-local] [--parts abcde]
                                  [--long-turn 2000] [--long-samples 10]
                                  [--chars] [--tools-every N] [--record FILE] [--compare-only]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from tests.servers import ScriptedServer  # noqa: E402

from narrative_cli.backends import Backend, ChatReply, ChatRequest, open_backend  # noqa: E402
from narrative_cli.config import AgentSettings, PipelineSettings, Profile, Settings  # noqa: E402
from narrative_cli.context import parts  # noqa: E402
from narrative_cli.pipeline.backendset import BackendSet  # noqa: E402
from narrative_cli.pipeline.orchestrator import run_turn  # noqa: E402
from narrative_cli.pipeline.story import PlayedTurn, Story, open_story  # noqa: E402

LANTERN = ROOT / "sample_cards" / "lantern-keeper.png"
FOG_HARBOR = ROOT / "sample_cards" / "fog-harbor-zh.json"
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
ZH_INPUTS = ["我去码头等渡船。", "我问老周雾钟的事。", "我去茶馆坐一会儿。", "我登上灯塔看海。"]


# --- the scripted session -------------------------------------------------------------------


@dataclass
class Session:
    """Deterministic replies per agent; the turn number comes from the analysis calls."""

    lang: str = "en"
    calls: dict[str, int] = field(default_factory=dict)
    mvu_every_turn: bool = False  # mvu_extract changes a variable each turn (part d)
    lantern: bool = True  # the sample card's variables; another card's extraction finds none
    tools_every: int = 1  # the planner calls its tools on every Nth turn only (part f)

    def answer(self, agent: str) -> str:
        n = self.calls[agent] = self.calls.get(agent, 0) + 1
        if agent == "planning":
            plan = self.plan(n)
            if n % self.tools_every:
                plan["tool_calls"] = []
            return json.dumps(plan)
        if agent in ("writing", "merged_writing"):
            return self.story(n)
        if agent == "analysis":
            return json.dumps(self.analysis(n), ensure_ascii=False)
        if agent == "compaction":  # a fold (issue 17): one line standing for the turns folded
            return json.dumps({"summary": f"Fold {n}: weeks of fog, lessons and logbook hours."})
        if agent == "mvu_extract" and not self.lantern:
            return json.dumps({"patches": []})
        if agent == "mvu_extract" and self.mvu_every_turn:
            command = "_.add('keeper.lamp_oil', -1);//a night's oil"
            return f"<UpdateVariable>\n{command}\n</UpdateVariable>"
        if agent == "mvu_extract":
            patch = {"op": "delta", "path": "/keeper/lamp_oil", "value": -1}
            return json.dumps({"patches": [patch]})
        return f"<keeper_log>Hour {n % 24}: fog, lamp steady, entry {n}.</keeper_log>"

    def plan(self, n: int) -> dict[str, Any]:
        return {
            "narrative_direction": f"Turn {n}: Edda teaches one more keeper's task; the fog holds.",
            "scene_setting": "The lamp room, night.",
            "key_points": ["the lamp", "the fog"],
            "tone": "calm",
            "pacing": "slow",
            "continuity_notes": [],
            "tool_calls": [
                {"tool": "roll_dice", "params": {"expr": "1d20+2", "dc": 12}},
                {"tool": "tide_clock", "params": {"hour": n % 24}},
            ],
            "text_recall": [],
        }

    def story(self, n: int) -> str:
        if self.lang == "zh":
            line = (
                f"第{n}夜，雾气漫过码头，灯塔的光一圈圈扫过海面。老周收起缆绳，说明天或许能开船。"
            )
            return line * 2
        return (
            f"Night {n}. You climb the iron stairs behind Edda. The lamp hisses, the lens turns, "
            "and the beam sweeps the grey water. Edda points at the logbook: another hour of "
            "fog, another line in her square hand. Somewhere north the drowned bell rings once. "
            f"You note the time, {n % 24}:00, and the tide running out over the causeway."
        )

    def analysis(self, n: int) -> dict[str, Any]:
        entry = f"Night {n}: another lesson in the fog."
        if self.lang == "zh":
            entry = f"第{n}夜雾未散。"
        return {
            "events": [{"type": "pass_time", "params": {"amount": 1, "unit": "hours"}}],
            "summary_entries": [entry],
        }


def scripted_settings(server: ScriptedServer, **pipeline: Any) -> Settings:
    settings = Settings(pipeline=PipelineSettings(**pipeline))
    settings.profiles["scripted"] = server.profile(read_timeout=30.0)
    settings.default_profile = "scripted"
    return settings


def install(server: ScriptedServer, session: Session) -> None:
    server.reply_with(lambda body, request: session.answer(request.agent))


def new_story(card: Path, settings: Settings) -> Story:
    story = open_story(card, settings=settings, seed=2024)
    story.clock = lambda: datetime.datetime(2025, 1, 1, 20, 0)
    return story


def play(story: Story, backends: BackendSet, turns: int, inputs: list[str]) -> list[float]:
    """Play ``turns`` turns; the wall time of each, in seconds."""
    times = []
    for index in range(turns):
        started = time.perf_counter()
        result = run_turn(story, inputs[index % len(inputs)], backends)
        times.append(time.perf_counter() - started)
        story.advance(result)
    return times


def ms(seconds: float) -> float:
    return seconds * 1000


# --- a. overhead ----------------------------------------------------------------------------


class TimedBackend:
    """A real backend whose time inside ``complete`` is added up."""

    def __init__(self, inner: Backend) -> None:
        self.inner, self.name, self.spent, self.cpu = inner, inner.name, 0.0, 0.0

    def complete(self, request: ChatRequest, on_text: Any = None) -> ChatReply:
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            return self.inner.complete(request, on_text)
        finally:
            self.spent += time.perf_counter() - started
            self.cpu += time.thread_time() - cpu

    def close(self) -> None:
        self.inner.close()


def overhead(card: Path, inputs: list[str], turns: int, lang: str) -> dict[str, float]:
    with ScriptedServer() as server:
        install(server, Session(lang))
        settings = scripted_settings(server)
        timed: list[TimedBackend] = []

        def opener(profile: Profile, agent: AgentSettings) -> Backend:
            timed.append(TimedBackend(open_backend(profile, agent)))
            return timed[-1]

        backends = BackendSet.from_settings(settings, opener)
        story = new_story(card, settings)
        play(story, backends, 1, inputs)  # warm up: connections, imports, caches
        totals, inside = [], []
        for index in range(1, turns + 1):
            before = sum(t.spent for t in timed)
            started = time.perf_counter()
            story.advance(run_turn(story, inputs[index % len(inputs)], backends))
            totals.append(time.perf_counter() - started)
            inside.append(sum(t.spent for t in timed) - before)
        bodies = [(r.agent, r.body) for r in server.requests]
        calls_per_turn = len(bodies) / (turns + 1)
        raw = raw_posts(server.base_url + "/chat/completions", bodies, turns + 1)
        backends.close()
    ours = [t - i for t, i in zip(totals, inside, strict=True)]
    return {
        "calls/turn": calls_per_turn,
        "turn ms": ms(statistics.median(totals)),
        "in backend ms": ms(statistics.median(inside)),
        "overhead ms": ms(statistics.median(ours)),
        "raw httpx ms": ms(statistics.median(raw)),
        "turn / raw": statistics.median(totals) / statistics.median(raw),
    }


def raw_posts(url: str, bodies: list[tuple[str, bytes]], turns: int) -> list[float]:
    """Per-turn time of posting the same bodies with raw httpx (streams read to the end)."""
    per_turn = max(1, len(bodies) // turns)
    times = []
    with httpx.Client(timeout=30) as client:
        for start in range(0, len(bodies) - per_turn + 1, per_turn):
            began = time.perf_counter()
            for agent, body in bodies[start : start + per_turn]:
                headers = {"content-type": "application/json", "x-narrative-agent": agent}
                with client.stream("POST", url, content=body, headers=headers) as response:
                    for _ in response.iter_bytes():
                        pass
            times.append(time.perf_counter() - began)
    return times


# --- e. overhead at length -----------------------------------------------------------------


def fast_forward(story: Story, turn: int, session: Session) -> None:
    """Give a story with one played turn ``turn`` turns of history and summary (as if played):
    the scripted story text per turn, its log tool output, one summary entry per turn."""
    played = story.history[-1]
    history = [t for t in story.history if t.number == 0]
    for number in range(1, turn + 1):
        history.append(
            PlayedTurn(
                number, INPUTS[number % len(INPUTS)], session.story(number), played.post_outputs
            )
        )
    entries = [
        {"turn": n, "text": f"Night {n}: another lesson in the fog; Edda logs the hour."}
        for n in range(1, turn + 1)
    ]
    summaries = {"lang": story.lang, "entries": entries}
    story.history = history
    story.snapshot = replace(story.snapshot, turn=turn, summaries=summaries)


def overhead_at(turn: int, samples: int) -> list[float]:
    """Overhead per turn of ``samples`` turns played after the lantern-keeper story was
    fast-forwarded to ``turn``: CPU seconds of the turn's thread outside ``Backend.complete``
    (CPU time, not wall time: the shared machine's load would drown the ratio otherwise)."""
    with ScriptedServer() as server:
        session = Session("en")
        install(server, session)
        settings = scripted_settings(server)
        timed: list[TimedBackend] = []

        def opener(profile: Profile, agent: AgentSettings) -> Backend:
            timed.append(TimedBackend(open_backend(profile, agent)))
            return timed[-1]

        backends = BackendSet.from_settings(settings, opener)
        story = new_story(LANTERN, settings)
        play(story, backends, 1, INPUTS)  # a real snapshot; warms connections and caches
        fast_forward(story, turn, session)
        ours = []
        for index in range(samples):
            before = sum(t.cpu for t in timed)
            started = time.thread_time()
            story.advance(run_turn(story, INPUTS[index % len(INPUTS)], backends))
            ours.append(time.thread_time() - started - (sum(t.cpu for t in timed) - before))
        backends.close()
    return ours


def part_e(args: argparse.Namespace) -> None:
    print(
        f"\ne. overhead per turn at length (lantern-keeper, serial), {args.long_samples} turns each"
    )
    short = statistics.median(overhead_at(10, args.long_samples))
    long = statistics.median(overhead_at(args.long_turn, args.long_samples))
    show(
        "  fast-forwarded story",
        {
            "turn 10 overhead cpu ms": ms(short),
            f"turn {args.long_turn} overhead cpu ms": ms(long),
            f"turn {args.long_turn} / turn 10": long / short,
        },
    )


# --- b. prefix reuse ------------------------------------------------------------------------

POLICIES = ("ours", "sliding", "design")


@contextmanager
def policy(name: str, settings: Settings) -> Iterator[Settings]:
    """Settings (and, for the design's formula, a summary block holding every entry)."""
    pipeline = settings.pipeline
    if name == "sliding":
        planning = pipeline.recent_turns_for_planning + pipeline.planning_growth_margin
        writing = pipeline.recent_turns_for_writing + pipeline.writing_growth_margin
        settings = replace(
            settings,
            pipeline=replace(
                pipeline,
                recent_turns_for_planning=planning,
                planning_growth_margin=0,
                recent_turns_for_writing=writing,
                writing_growth_margin=0,
            ),
        )
    original = parts.story_summary
    if name == "design":
        parts.story_summary = lambda inputs, turns, settings=None: original(inputs, None)  # type: ignore[assignment]
    try:
        yield settings
    finally:
        parts.story_summary = original  # type: ignore[assignment]


def flat(messages: list[dict[str, Any]]) -> str:
    return "".join(f"<|{m['role']}|>{m['content']}" for m in messages)


def prefix_shares(requests: list[Any]) -> dict[str, tuple[float, float]]:
    """Per agent: (character-weighted share, mean per-call share) repeated from the last call."""
    previous: dict[str, str] = {}
    shared: dict[str, list[tuple[int, int]]] = {}
    for request in requests:
        text = flat(request.messages)
        last = previous.get(request.agent)
        if last is not None:
            common = len(os.path.commonprefix([last, text]))
            shared.setdefault(request.agent, []).append((common, len(text)))
        previous[request.agent] = text
    return {
        agent: (
            sum(c for c, _ in pairs) / sum(t for _, t in pairs),
            statistics.mean(c / t for c, t in pairs),
        )
        for agent, pairs in shared.items()
    }


def prefix_reuse(card: Path, turns: int, mode: str, inputs: list[str], lang: str) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name in POLICIES:
        with ScriptedServer() as server:
            install(server, Session(lang))
            with policy(name, scripted_settings(server, mode=mode)) as settings:
                backends = BackendSet.from_settings(settings)
                play(new_story(card, settings), backends, turns, inputs)
                backends.close()
            results[name] = prefix_shares(server.requests)
    return results


def design_formula(n: int, m: int) -> float:
    """The design's claimed history-part hit rate H = 1 - 2(2(n+m)-1) / ((2n+m)(m+1))."""
    return 1 - 2 * (2 * (n + m) - 1) / ((2 * n + m) * (m + 1))


# --- c. the local model ---------------------------------------------------------------------


class CacheProbe:
    """Sends each prompt to the local model for its real usage; answers with the session."""

    def __init__(self, local: Backend, session: Session) -> None:
        self.local, self.session, self.name = local, session, "probe"
        self.usage: list[tuple[str, int, int]] = []
        self.sent: list[tuple[str, list[dict[str, Any]]]] = []  # what the model was asked

    def complete(self, request: ChatRequest, on_text: Any = None) -> ChatReply:
        probe = replace(request, max_tokens=4, json_schema=None, stream=False)
        real = self.local.complete(probe)
        text = self.session.answer(request.agent)
        self.usage.append((request.agent, real.usage.prompt_tokens, real.usage.cached_tokens))
        self.sent.append((request.agent, [m.to_dict() for m in request.messages]))
        if on_text is not None:
            on_text(text)
        return ChatReply(text=text, finish_reason="stop", usage=real.usage, model=real.model)

    def close(self) -> None:
        self.local.close()


def local_settings(cache_reuse: int | None = None) -> Settings:
    """The built-in local profile with a fifth slot, so mvu_extract and the log tool do not
    share (and evict) one slot; ``cache_reuse`` (llama.cpp's chunk reuse) as given, else the
    profile's default."""
    settings = Settings()
    local = settings.profiles["local"]
    reuse = local.cache_reuse if cache_reuse is None else cache_reuse
    settings.profiles["local"] = replace(local, slots=5, cache_reuse=reuse)
    return settings


def local_cache(name: str, turns: int, record: Path | None = None,
                cache_reuse: int | None = None) -> dict[str, float]:
    """cached / prompt tokens per agent for one window policy, from cold caches. With
    ``record``, each call (agent, messages, prompt and cached tokens, the server's chunk
    reuse) is appended to that JSON-lines file as it comes, so a run stopped early still
    leaves its calls."""
    from narrative_cli.backends.local import shared_server, shutdown_all

    shutdown_all()
    with policy(name, local_settings(cache_reuse)) as settings:
        reuse = shared_server(settings.profiles["local"]).cache_reuse  # 0 when not in force
        local = open_backend(settings.profile_for("planning"), AgentSettings())
        probe = CacheProbe(local, Session("en"))
        backends = BackendSet.single(probe)
        story = new_story(LANTERN, settings)
        for index in range(turns):
            done = len(probe.usage)
            story.advance(run_turn(story, INPUTS[index % len(INPUTS)], backends))
            if record is not None:
                with record.open("a", encoding="utf-8") as out:
                    for (agent, prompt, cached), (_, messages) in zip(
                        probe.usage[done:], probe.sent[done:], strict=True
                    ):
                        line = {"turn": index + 1, "agent": agent, "prompt": prompt,
                                "cached": cached, "cache_reuse": reuse, "messages": messages}
                        out.write(json.dumps(line, ensure_ascii=False) + "\n")
            print(f"    {name}: turn {index + 1}/{turns}", file=sys.stderr, flush=True)
        backends.close()
    calls_per_turn = len(probe.usage) // turns
    return cache_shares(probe.usage[calls_per_turn:])


def cache_shares(usage: list[tuple[str, int, int]]) -> dict[str, float]:
    """cached / prompt tokens per agent (first turn left out: every cache starts cold)."""
    totals: dict[str, list[int]] = {}
    for agent, prompt, cached in usage:
        pair = totals.setdefault(agent, [0, 0])
        pair[0] += prompt
        pair[1] += cached
    shares = {agent: cached / prompt for agent, (prompt, cached) in totals.items() if prompt}
    all_prompt = sum(p for p, _ in totals.values())
    shares["all agents"] = sum(c for _, c in totals.values()) / all_prompt if all_prompt else 0
    return shares


# --- f. the slot-cache measure, no model needed; v. checked against the real server ------


def scripted_requests(
    name: str, turns: int, mvu_every_turn: bool = False, card: Path = LANTERN,
    tools_every: int = 1,
) -> list[tuple[str, list[dict[str, Any]]]]:
    """(agent, messages) of every call of a serial ``turns``-turn session on the scripted
    server, under window policy ``name`` (the same session as part c; with
    ``mvu_every_turn``, mvu_extract lowers a variable every turn, so the state changes).
    ``card``: lantern-keeper by default; another card (``--card``, such as a real one from
    the fixtures) gets the same scripted replies in its own language, with no variable
    changes and no tools of its own. ``tools_every``: the planner calls its tools on every
    Nth turn only (2: on even turns), as a real planner does not roll every turn."""
    session = Session(mvu_every_turn=mvu_every_turn, lantern=card == LANTERN,
                      tools_every=tools_every)
    with ScriptedServer() as server:
        install(server, session)
        with policy(name, scripted_settings(server, mode="serial")) as settings:
            backends = BackendSet.from_settings(settings)
            story = new_story(card, settings)
            session.lang = story.lang
            play(story, backends, turns, ZH_INPUTS if story.lang == "zh" else INPUTS)
            backends.close()
        return [(r.agent, r.messages) for r in server.requests]


def part_f(args: argparse.Namespace) -> None:
    import prefix_cache

    tokens, server = (
        (prefix_cache.CharTokens(), None) if args.chars else prefix_cache.local_tokens()
    )
    reuse = args.cache_reuse
    print(
        f"\nf. per-slot prefix cache (llama.cpp's rule, {prefix_cache.SLOTS} slots), "
        f"{args.turns} turns of {args.card.name}, serial, all agents; counted in {tokens.name}; "
        f"cached / prompt after the first turn; chunk reuse off, then n_cache_reuse {reuse}"
    )
    results, evaluated = {}, {}  # shares per agent; tokens evaluated per turn, all agents
    for name, policy_name, changing in (
        ("ours", "ours", False),
        ("sliding", "sliding", False),
        ("ours moves", "ours", True),
        ("sliding moves", "sliding", True),
    ):
        if changing and args.card != LANTERN:  # no variable of the script's on another card
            continue
        requests = scripted_requests(policy_name, args.turns, changing, args.card,
                                     args.tools_every)
        per_turn = len(requests) // args.turns
        ids = [(agent, tokens(messages)) for agent, messages in requests]  # tokenized once
        for least in (0, reuse) if not changing else (reuse,):
            calls = prefix_cache.replay_ids(ids, reuse=least)
            column = f"{name}, {least or 'off'}"
            results[column] = prefix_cache.shares(calls, per_turn)
            evaluated[column] = sum(c.prompt - c.cached for c in calls[per_turn:]) / (
                args.turns - 1
            )
    print("  (moves: mvu_extract lowers lamp_oil every turn; otherwise the scripted "
          f"session's variables never change; off / {reuse}: n_cache_reuse)")
    print(f"  {'agent':<18}" + "".join(f"{name:>19}" for name in results))
    for agent in results[f"ours, {reuse}"]:
        print(f"  {agent:<18}" + "".join(f"{r.get(agent, 0.0):>19.3f}" for r in results.values()))
    print(f"  {'evaluated/turn':<18}" + "".join(f"{e:>19.0f}" for e in evaluated.values()))
    del server


def part_w(args: argparse.Namespace) -> None:
    import cache_parts
    import prefix_cache

    tokens, server = (
        (prefix_cache.CharTokens(), None) if args.chars else prefix_cache.local_tokens()
    )
    print(f"\nw. evaluated tokens per agent and prompt part, ours, {args.turns} turns, "
          f"n_cache_reuse {args.cache_reuse}, counted in {tokens.name}, after the first turn")
    requests = scripted_requests("ours", args.turns, card=args.card)
    per_turn = len(requests) // args.turns
    cache_parts.show(
        cache_parts.evaluated_parts(requests, tokens, args.cache_reuse, per_turn), args.turns
    )
    del server


def part_v(args: argparse.Namespace) -> None:
    """The real server on ``--local-turns`` turns (ours), each call recorded, then the slot
    rule replayed on the very prompts the server got, call by call."""
    import prefix_cache

    record = Path(args.record)
    if not args.compare_only:
        record.unlink(missing_ok=True)
        print(f"\nv. real llama.cpp, {args.local_turns} turns (ours), n_cache_reuse "
              f"{args.cache_reuse}, calls recorded in {record}")
        local_cache("ours", args.local_turns, record, args.cache_reuse)
    compare_recorded(record, prefix_cache)


def compare_recorded(record: Path, prefix_cache: Any) -> None:
    lines = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    tokens, server = prefix_cache.local_tokens()
    reuse = lines[0].get("cache_reuse", 0) if lines else 0  # files from before #17: none
    print(f"  the rule with n_cache_reuse {reuse}, as the recorded server ran")
    predicted = prefix_cache.replay(
        [(x["agent"], x["messages"]) for x in lines], tokens, reuse=reuse
    )
    real = [prefix_cache.Call(x["agent"], x["prompt"], x["cached"]) for x in lines]
    first = sum(1 for x in lines if x["turn"] == 1)
    turns = max((x["turn"] for x in lines), default=0)
    same_len = sum(p.prompt == r.prompt for p, r in zip(predicted, real, strict=True))
    same = sum(p.cached == r.cached for p, r in zip(predicted, real, strict=True))
    print(f"\n  {len(lines)} calls over {turns} turns; prompt length equal in {same_len}, "
          f"cached tokens equal in {same} (counted in {tokens.name})")
    want, got = prefix_cache.shares(predicted, first), prefix_cache.shares(real, first)
    print(f"  {'agent':<18}{'slot rule':>10}{'real':>10}")
    for agent in got:
        print(f"  {agent:<18}{want.get(agent, 0.0):>10.3f}{got[agent]:>10.3f}")
    for p, r, x in zip(predicted, real, lines, strict=True):
        if p.cached != r.cached or p.prompt != r.prompt:
            print(f"    turn {x['turn']} {x['agent']}: rule {p.cached}/{p.prompt}, "
                  f"real {r.cached}/{r.prompt}")
    del server


# --- d. parallel against serial -------------------------------------------------------------


def parallel_card(folder: Path) -> Path:
    """A card with two independent post tools and one that needs the updated state."""

    def tool(uid: int, name: str, context: list[str]) -> dict[str, Any]:
        definition = {
            "type": "llm",
            "trigger": "post_pipeline",
            "context": context,
            "function": {"name": name, "description": name},
            "system_prompt": f"You are {name}.",
        }
        return {
            "id": uid,
            "keys": [],
            "comment": f"[TOOL:{name}]",
            "constant": True,
            "content": json.dumps(definition),
            "enabled": True,
            "insertion_order": uid,
            "position": "after_char",
            "extensions": {"position": 1},
        }

    entries = [
        tool(1, "weather", ["narrative_text"]),
        tool(2, "gossip", ["narrative_text"]),
        tool(3, "panel", ["state_summary"]),
    ]
    data = {
        "name": "Mira",
        "description": "A ferry keeper.",
        "first_mes": "The bell rings.",
        "character_book": {"entries": entries},
    }
    path = folder / "parallel-card.json"
    path.write_text(json.dumps({"spec": "chara_card_v2", "spec_version": "2.0", "data": data}))
    return path


def parallel_vs_serial(
    card: Path, turns: int, latency: float, mvu_every_turn: bool = False
) -> dict[str, float]:
    medians = {}
    for mode in ("serial", "parallel"):
        with ScriptedServer(latency=latency) as server:
            install(server, Session("en", mvu_every_turn=mvu_every_turn))
            settings = scripted_settings(server, mode=mode)
            backends = BackendSet.from_settings(settings)
            times = play(new_story(card, settings), backends, turns, INPUTS)
            backends.close()
            medians[f"{mode} ms"] = ms(statistics.median(times))
            medians[f"{mode} calls/turn"] = len(server.requests) / turns
    medians["parallel / serial"] = medians["parallel ms"] / medians["serial ms"]
    return medians


# --- report ---------------------------------------------------------------------------------


def show(title: str, rows: dict[str, Any]) -> None:
    print(f"\n{title}")
    for key, value in rows.items():
        text = f"{value:.3f}" if isinstance(value, float) else str(value)
        print(f"  {key:<22} {text}")


def show_shares(title: str, results: dict[str, Any]) -> None:
    print(f"\n{title}")
    agents = sorted({a for shares in results.values() for a in shares})
    print(f"  {'agent':<18}" + "".join(f"{name:>18}" for name in results))
    for agent in agents:
        cells = [results[name].get(agent) for name in results]
        row = "".join(f"{c[0]:>11.1%} ({c[1]:.0%})" if c else f"{'-':>18}" for c in cells)
        print(f"  {agent:<18}{row}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--overhead-turns", type=int, default=20)
    parser.add_argument("--local-turns", type=int, default=40)
    parser.add_argument("--parallel-turns", type=int, default=6)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--skip-local", action="store_true", help="same as --parts abd")
    parser.add_argument("--long-turn", type=int, default=2000)
    parser.add_argument("--long-samples", type=int, default=10)
    parser.add_argument("--parts", default="abcde",
                        help="which parts to run (default abcde; also f, v, w)")
    parser.add_argument("--chars", action="store_true", help="part f in characters")
    parser.add_argument("--tools-every", type=int, default=1, metavar="N",
                        help="part f: the planner calls its tools on every Nth turn only")
    parser.add_argument("--card", type=Path, default=LANTERN,
                        help="parts f, w: the card played (default: the sample card)")
    parser.add_argument("--record", default="local-cache-calls.jsonl",
                        help="part v: where the real run's calls go")
    parser.add_argument("--cache-reuse", type=int, default=Profile().cache_reuse,
                        help="parts c, f, v: llama.cpp's n_cache_reuse (0: off; default: the "
                        "local profile's)")
    parser.add_argument("--compare-only", action="store_true",
                        help="part v: compare an existing --record file, run nothing")
    args = parser.parse_args()
    wanted = set(args.parts) - ({"c"} if args.skip_local else set())
    if "a" in wanted:
        part_a(args)
    if "b" in wanted:
        part_b(args)
    if "c" in wanted:
        part_c(args)
    if "d" in wanted:
        part_d(args)
    if "e" in wanted:
        part_e(args)
    if "f" in wanted:
        part_f(args)
    if "w" in wanted:
        part_w(args)
    if "v" in wanted:
        part_v(args)


def part_a(args: argparse.Namespace) -> None:
    print("a. overhead per turn, zero-latency scripted server (medians)")
    show(
        "  lantern-keeper.png (serial: planning, dice + code tool, writing, analysis, "
        "log tool, mvu_extract)",
        overhead(LANTERN, INPUTS, args.overhead_turns, "en"),
    )
    show(
        "  fog-harbor-zh.json (merged + mvu_extract)",
        overhead(FOG_HARBOR, ZH_INPUTS, args.overhead_turns, "zh"),
    )


def part_b(args: argparse.Namespace) -> None:
    print(
        f"\nb. prefix reuse over {args.turns} turns: share of each prompt's characters that "
        "repeat the start of the same agent's previous prompt, weighted (mean per call)"
    )
    serial = prefix_reuse(LANTERN, args.turns, "serial", INPUTS, "en")
    show_shares("  serial (lantern-keeper)", serial)
    show_shares(
        "  merged (lantern-keeper, --mode merged)",
        prefix_reuse(LANTERN, args.turns, "merged", INPUTS, "en"),
    )
    print(
        f"  design's own claim for the history part: planning 4/4 H={design_formula(4, 4):.1%}, "
        f"writing 3/4 H={design_formula(3, 4):.1%}"
    )


def part_c(args: argparse.Namespace) -> None:
    print(
        f"\nc. local model (SmolLM2-135M, llama.cpp), {args.local_turns} turns: "
        "cached_tokens / prompt_tokens after the first turn"
    )
    for name in ("ours", "sliding"):
        started = time.perf_counter()
        show(f"  {name}", local_cache(name, args.local_turns, cache_reuse=args.cache_reuse))
        print(f"  ({time.perf_counter() - started:.0f} s)", flush=True)


def part_d(args: argparse.Namespace) -> None:
    print(
        f"\nd. parallel against serial, {int(args.latency * 1000)} ms per call, "
        f"{args.parallel_turns} turns (medians)"
    )
    show(
        "  lantern-keeper.png (mvu_extract overlaps the analysis; keeper_log is sent beside "
        "them and kept: the state it reads did not change)",
        parallel_vs_serial(LANTERN, args.parallel_turns, args.latency),
    )
    show(
        "  lantern-keeper.png, mvu_extract lowering lamp_oil every turn (keeper_log's guess "
        "is dropped and asked again every turn)",
        parallel_vs_serial(LANTERN, args.parallel_turns, args.latency, mvu_every_turn=True),
    )
    with tempfile.TemporaryDirectory() as folder:
        show(
            "  card with 2 independent + 1 dependent post tools",
            parallel_vs_serial(parallel_card(Path(folder)), args.parallel_turns, args.latency),
        )


if __name__ == "__main__":
    main()
