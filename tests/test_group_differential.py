"""Our speaker choice against SillyTavern's own code (#19), on seeded random group scenes.

``tests/group_oracle.mjs`` runs SillyTavern 1.18's ``activateNaturalOrder``,
``activateListOrder``, ``activatePooledOrder`` and manual order, cut at run time out of a
SillyTavern checkout (``ST_CHECKOUT``, else the git mirror this project's machines keep next
to the work folders), with ``Math.random`` replaced by each case's list of numbers; our
``choose_speakers`` draws from the same list. Both must choose the same members, in the same
order, drawing the same count of numbers. Skipped when node or SillyTavern's source is absent.
Names are ASCII here: for a name with no ASCII word we deliberately differ (group/speakers.py).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.domain import Card
from narrative_cli.domain_chat import ChatMessage
from narrative_cli.group.model import STRATEGY_CODES, Group, GroupMember
from narrative_cli.group.speakers import choose_speakers, turn_from_chat
from tests.st_diff import ROOT, node_executable

ST_RELEASE = "51ad27fb86d39a3daca3adaa970375c9670c12df"  # 1.18.0
MIRROR = ROOT.parent / ".mirror" / "jaidaken+SillyTavern" / "repo"
ORACLE = Path(__file__).with_name("group_oracle.mjs")
FILES = ("public/scripts/group-chats.js", "public/scripts/utils.js")
NAMES = ("Alice", "Bob", "Carol Ann", "Ann Lee", "Dave", "Eve-Marie", "Mr. Smith", "John Smith",
         "Zoë", "Bob Two")
WORDS = ("tea", "rain", "and", "the", "door", "?", "smith", "ann", "john", "lee")
CASES = 600


def st_sources(folder: Path) -> list[Path] | None:
    """SillyTavern's two files, from ``ST_CHECKOUT`` or the mirror (None: not on this machine)."""
    checkout = os.environ.get("ST_CHECKOUT")
    if checkout:
        paths = [Path(checkout) / name for name in FILES]
        return paths if all(p.is_file() for p in paths) else None
    if not MIRROR.is_dir():
        return None
    paths = []
    for name in FILES:
        shown = subprocess.run(["git", f"--git-dir={MIRROR}", "show", f"{ST_RELEASE}:{name}"],
                               capture_output=True, timeout=60)
        if shown.returncode != 0:
            return None
        path = folder / Path(name).name
        path.write_bytes(shown.stdout)
        paths.append(path)
    return paths


class Numbers(random.Random):
    """A ``random.Random`` that hands out a fixed list of numbers and counts them."""

    def __init__(self, numbers: list[float]) -> None:
        super().__init__(0)
        self.numbers = numbers
        self.drawn = 0

    def random(self) -> float:
        value = self.numbers[self.drawn]
        self.drawn += 1
        return value


def sentence(rng: random.Random, names: list[str]) -> str:
    parts = [rng.choice(WORDS) for _ in range(rng.randint(0, 4))]
    for name in rng.sample(names, rng.randint(0, min(2, len(names)))):
        parts.insert(rng.randint(0, len(parts)), rng.choice([name, name.lower(), name + "'s"]))
    return " ".join(parts)


def make_case(number: int) -> dict[str, Any]:
    rng = random.Random(number)
    names = rng.sample(NAMES, rng.randint(1, 5))
    characters = [{"avatar": f"c{i}.png", "name": name,
                   "talkativeness": rng.choice([0, 1, 0.5, round(rng.random(), 2)])}
                  for i, name in enumerate(names)]
    members = [c["avatar"] for c in characters]
    chat: list[dict[str, Any]] = []
    for _ in range(rng.randint(0, 6)):
        kind = rng.random()
        if kind < 0.3:
            chat.append({"name": "You", "is_user": True, "is_system": False,
                         "mes": sentence(rng, names)})
        elif kind < 0.35:
            chat.append({"name": "System", "is_user": False, "is_system": True, "mes": "note"})
        else:
            speaker = rng.choice(characters)
            chat.append({"name": speaker["name"], "is_user": False, "is_system": False,
                         "original_avatar": speaker["avatar"], "mes": sentence(rng, names)})
    return {
        "id": number, "characters": characters, "members": members,
        "disabled": [m for m in members if rng.random() < 0.2],
        "strategy": rng.choice(list(STRATEGY_CODES)), "allow_self": rng.random() < 0.3,
        "chat": chat, "user_text": sentence(rng, names) if rng.random() < 0.6 else "",
        "randoms": [random.Random(number * 7919).random() for _ in range(1)]
        + [rng.random() for _ in range(40)],
    }


def ours(case: dict[str, Any]) -> tuple[list[str], int]:
    members = tuple(GroupMember(key=c["avatar"], card=Card(name=c["name"]),
                                talkativeness=float(c["talkativeness"]))
                    for c in case["characters"])
    group = Group(name="g", members=members, muted=frozenset(case["disabled"]),
                  strategy=STRATEGY_CODES[case["strategy"]],
                  allow_self_responses=case["allow_self"])
    messages = [ChatMessage(name=m["name"], is_user=m["is_user"], mes=m["mes"],
                            is_system=m["is_system"],
                            raw={k: v for k, v in m.items() if k == "original_avatar"})
                for m in case["chat"]]
    rng = Numbers(case["randoms"])
    chosen = choose_speakers(group, turn_from_chat(group, messages, case["user_text"]), rng)
    return [m.key for m in chosen], rng.drawn


def test_speakers_agree_with_sillytavern(tmp_path: Path) -> None:
    node = node_executable()
    sources = st_sources(tmp_path) if node else None
    if node is None or sources is None:
        pytest.skip("node >= 20.6 or SillyTavern's source (ST_CHECKOUT) missing")
    cases = [make_case(n) for n in range(CASES)]
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(cases), encoding="utf-8")
    done = subprocess.run([node, str(ORACLE), *map(str, sources), str(path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    theirs = {r["id"]: (r["speakers"], r["draws"]) for r in json.loads(done.stdout)}
    differ = [(c["id"], ours(c), theirs[c["id"]]) for c in cases if ours(c) != theirs[c["id"]]]
    assert differ == []
    strategies = {c["strategy"] for c in cases}
    assert strategies == set(STRATEGY_CODES)  # every strategy was compared
    assert sum(1 for c in cases if len(theirs[c["id"]][0]) > 1) > 50  # and multi-speaker turns
