"""The lore stage in lore/ (issue 12): one entry point, formatting keys compiled in the index,
and one place that classifies entries."""

from __future__ import annotations

import ast
import json
import random

from narrative_cli.domain import POSITION_AFTER_CHAR, LoreEntry
from narrative_cli.lore.results import ScanContext
from narrative_cli.lore.routed import routes_for
from narrative_cli.lore.settings import LoreSettings
from narrative_cli.lore.stage import LoreScan, LoreTurn, run_lore
from narrative_cli.lore.timed import TimedEffects
from narrative_cli.tools.definitions import load_tools

from .conftest import ROOT

ORACLE = json.dumps(
    {"type": "llm", "function": {"name": "oracle", "description": "Ask the oracle."}}
)


def book() -> list[LoreEntry]:
    return [
        LoreEntry(
            uid=1, keys=["lantern"], content="The lantern is old.", position=POSITION_AFTER_CHAR
        ),
        LoreEntry(uid=2, comment="[TOOL:oracle]", content=ORACLE, keys=["Oracle"]),
        LoreEntry(uid=3, comment="[mvu_update] mood", content="Track mood.", keys=["sigh"]),
        LoreEntry(uid=4, comment="[mvu_update] always", content="Track health.", constant=True),
        LoreEntry(
            uid=5, comment="[mvu_update] off", content="Never.", constant=True, disabled=True
        ),
    ]


def scan(history: list[str], user_input: str, **settings: object) -> LoreScan:
    return LoreScan(
        history=history,
        user_input=user_input,
        extra_text="",
        turn=len(history) // 2 + 1,
        settings=LoreSettings.from_dict(dict(settings)),
        context=ScanContext(user_name="Ann", char_name="Keeper"),
    )


def play(entries: list[LoreEntry], the_scan: LoreScan) -> LoreTurn:
    return run_lore(entries, the_scan, rng=random.Random(7), timed=TimedEffects())


def test_keys_typed_this_turn_switch_on_tools_and_mvu_rules() -> None:
    entries = book()
    tool = load_tools(entries).tools[0]
    quiet = play(entries, scan(["Hello.", "Welcome."], "I wait."))
    assert not quiet.switched_on(tool.keys, tool.constant)
    assert quiet.mvu_rules == ["Track health."]  # the constant one; the disabled one never
    assert quiet.routed.worldinfo3 == []

    asked = play(entries, scan(["I sigh."], "I ask the oracle about the lantern."))
    assert asked.switched_on(tool.keys, tool.constant)  # case-insensitive by default
    assert asked.mvu_rules == ["Track mood.", "Track health."]  # book order
    assert [e.uid for e in asked.routed.worldinfo3] == [1]
    assert [a.route for a in asked.result.activated] == ["keyword"]


def test_case_sensitive_settings_apply_to_tool_keys() -> None:
    entries = book()
    tool = load_tools(entries).tools[0]
    lore = play(entries, scan([], "I ask the oracle.", case_sensitive=True))
    assert not lore.switched_on(tool.keys, tool.constant)
    assert play(entries, scan([], "The Oracle.", case_sensitive=True)).switched_on(
        tool.keys, tool.constant
    )


def test_formatting_keys_are_compiled_once_in_the_cached_index() -> None:
    entries = book()
    first = play(entries, scan([], "one"))
    second = play(entries, scan([], "two"))
    assert second.index is first.index  # the same index serves every turn
    assert set(first.index.formatting_keys) == {("Oracle",), ("sigh",), ()}
    assert [e.uid for e in first.index.mvu_updates] == [3, 4]


def test_each_entry_list_is_classified_once() -> None:
    entries = book()
    routes = routes_for(entries)
    assert routes_for(entries) is routes
    assert [r.name for r in routes.routes] == ["keyword", "tool", "mvu_update", "mvu_update",
                                                 "mvu_update"]  # fmt: skip
    assert [e.uid for e in routes.enabled("mvu_update")] == [3, 4]


def test_only_the_routed_index_asks_the_routing_rules() -> None:
    callers = []
    for path in sorted((ROOT / "src").rglob("*.py")):
        if path.name in ("routing.py", "routed.py") and path.parent.name == "lore":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
            if name in ("classify", "formatting_kind"):
                callers.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}")
    assert callers == []
