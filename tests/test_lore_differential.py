"""The lore engine against SillyTavern 1.18's own world-info.js (issue #16).

Seeded cases over every feature family plus hand-picked edge cases run through the st-oracle
(one node process per batch) and through our engine; activated sets, prompt order and prompt
positions must agree. SillyTavern's own bugs are cases that must *differ* (docs/lore-fidelity.md).
Skips cleanly without node >= 20.6 or ../shared. ``NARRATIVE_DIFF_CASES=N`` runs N cases per
family instead of the CI's 40.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from narrative_cli.cli.app import app
from narrative_cli.lore.engine import activate
from narrative_cli.lore.settings import LoreSettings

from . import st_diff

pytestmark = pytest.mark.skipif(
    not st_diff.oracle_available(), reason="node >= 20.6 or ../shared/tools/st-oracle missing"
)
PER_FAMILY = int(os.environ.get("NARRATIVE_DIFF_CASES", "40"))


@pytest.fixture(scope="module")
def generated() -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    cases = st_diff.generate_cases(16, PER_FAMILY) + st_diff.edge_cases() + st_diff.st_bug_cases()
    cases += st_diff.real_cases(max(1, PER_FAMILY // 10))
    return cases, st_diff.run_oracle(cases)


def test_every_family_agrees_with_sillytavern(
    generated: tuple[list[dict[str, Any]], dict[str, dict[str, Any]]],
) -> None:
    cases, oracle = generated
    compared = [case for case in cases if case["family"] != "st_bug"]
    report = st_diff.agreement(compared, oracle)
    assert set(report["table"]) >= {*st_diff.FAMILIES, "edge"}
    shown = "\n".join(f"{cid}: {'; '.join(diff)}" for cid, diff in report["failures"][:10])
    assert not report["failures"], shown


def test_sillytavern_bugs_are_not_copied(
    generated: tuple[list[dict[str, Any]], dict[str, dict[str, Any]]],
) -> None:
    cases, oracle = generated
    for case in (case for case in cases if case["family"] == "st_bug"):
        ours = st_diff.run_ours(case)
        assert st_diff.compare(ours, oracle[case["id"]]), f"{case['id']} no longer differs"
    by_id = {case["id"]: case for case in cases}
    whitespace = st_diff.run_ours(by_id["bug-whitespace-key"])["turns"][0]["activated"]
    assert whitespace == []  # a key of spaces matches nothing here


@pytest.mark.parametrize(("key", "text"), st_diff.REDOS)
def test_catastrophic_patterns_end_the_turn_and_are_reported(key: str, text: str) -> None:
    case = {"id": "redos", "family": "edge", "settings": {},
            "world": st_diff._world([st_diff._one(0, key=[key], comment="慢")]),
            "chat": st_diff._chat_of("hi", text)}
    from narrative_cli.load.lorebooks import parse_lorebook

    entries = parse_lorebook(case["world"], "w", "w").entries
    result = activate(entries, history=[text * 3], settings=LoreSettings())
    assert result.activated == []  # it returned: no match, or stopped at the time limit
    for problem in result.problems:
        assert "entry 0 (慢): regex" in problem and "skipped from now on" in problem


def _chat_file(tmp_path: Path, messages: list[dict[str, Any]]) -> Path:
    path = tmp_path / "chat.jsonl"
    header = {"user_name": "User", "character_name": "Mara", "chat_metadata": {}}
    lines = [header] + [{"name": m["name"], "is_user": m["is_user"], "mes": m["mes"],
                         "send_date": "2026-01-01"} for m in messages]
    path.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n")
    return path


def test_lore_test_cli_on_a_chat_agrees_with_sillytavern(
    tmp_path: Path, clean_environ: Path
) -> None:
    """``narrative lore test CARD TEXT --chat`` against the oracle fed the same chat turns."""
    import random

    from narrative_cli.domain_chat import ChatMessage
    from narrative_cli.lore.report import generation_points

    card = {"spec": "chara_card_v2", "spec_version": "2.0",
            "data": {"name": "Mara", "description": "", "first_mes": "hi"}}
    card_path = tmp_path / "card.json"
    card_path.write_text(json.dumps(card))
    (clean_environ / "config.yaml").write_text("lore:\n  depth: 2\n  max_context: 8192\n")
    cases, expected = [], []
    for n in range(12):
        rng = random.Random(f"cli:{n}")
        generated = rng.choice([st_diff._timed, st_diff._recursion, st_diff._plain,
                                st_diff._secondary])(rng, n)
        generated["settings"] = {}
        text = rng.choice(["the king", "灯塔 and fog", "nothing here", "dragon, castle"])
        chat = generated["chat"] + [{"name": "User", "is_user": True, "mes": text}]
        messages = [ChatMessage(name=m["name"], is_user=m["is_user"], mes=m["mes"]) for m in chat]
        cases.append({**generated, "id": f"cli-{n}", "chat": chat,
                      "turns": generation_points(messages)})
        expected.append((generated, text))
    oracle = st_diff.run_oracle(cases)
    for case, (generated, text) in zip(cases, expected, strict=True):
        world = tmp_path / f"{case['id']}.json"
        world.write_text(json.dumps(generated["world"], ensure_ascii=False))
        chat = _chat_file(tmp_path, generated["chat"])
        result = CliRunner().invoke(app, ["lore", "test", str(card_path), text, "--chat",
                                          str(chat), "--lorebook", str(world), "--json"])
        assert result.exit_code == 0, result.output
        ours = [item["uid"] for item in json.loads(result.stdout)["activated"]]
        st = oracle[case["id"]]["turns"][-1]
        assert ours == st["prompt_order"], case["id"]
