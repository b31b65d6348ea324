"""The one table of agents (issue 12): consistent, and the only place that lists agent names."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from narrative_cli.agents import table
from narrative_cli.agents.schemas import SCHEMAS
from narrative_cli.agents.templates import LANGS, template
from narrative_cli.backends.local import LocalServer
from narrative_cli.config import (
    Profile,
    Settings,
    default_max_tokens,
    settings_from_dict,
)
from narrative_cli.context.router import BLOCKS, Source, build_prompt
from narrative_cli.errors import ConfigError
from narrative_cli.pipeline.events import STAGES
from narrative_cli.ui.status import stage_label

from .conftest import ROOT
from .test_prompts import make_inputs

SRC = ROOT / "src" / "narrative_cli"
NAMES = set(table.agent_names())


def _strings(nodes: list[ast.expr | None]) -> list[str]:
    return [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def name_lists(source: str, where: str) -> list[str]:
    """Where ``source`` spells two or more agent names as one list, tuple, set, dict or
    if-chain (``agent == "planning"`` … ``agent == "writing"`` in one function)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            spelled = set(_strings(list(node.elts))) & NAMES
        elif isinstance(node, ast.Dict):
            spelled = set(_strings(list(node.keys))) & NAMES
        elif isinstance(node, ast.FunctionDef):
            compared = [c for c in ast.walk(node) if isinstance(c, ast.Compare) and len(c.ops) == 1]
            spelled = {
                s
                for c in compared
                if isinstance(c.ops[0], ast.Eq | ast.NotEq)
                for s in _strings([c.left, *c.comparators])
            } & NAMES
        else:
            continue
        if len(spelled) >= 2:
            found.append(f"{where}:{node.lineno} {sorted(spelled)}")
    return found


def test_no_module_outside_agents_lists_agent_names() -> None:
    problems = []
    for path in sorted(SRC.rglob("*.py")):
        if path.parent.name == "agents":
            continue
        problems += name_lists(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert problems == []


@pytest.mark.parametrize(
    "source",
    [
        'AGENTS = ("planning", "writing", "merged_writing", "analysis", "mvu_extract")',
        'FAMILIES = ["planning", "writing"]',
        'LIMITS = {"planning": 1024, "writing": 2048, "tool": 768}',
        'def build(agent):\n    if agent == "planning":\n        return 1\n'
        '    if agent == "analysis":\n        return 2\n',
    ],
)
def test_the_scan_finds_the_lists_issue_12_found(source: str) -> None:
    assert name_lists(source, "probe") != []


def test_the_scan_leaves_single_names_alone() -> None:
    assert name_lists('TRIGGERS = ("planning", "post_pipeline")\nx = "writing"', "probe") == []


# --- the table is consistent -----------------------------------------------------------------


@pytest.mark.parametrize("spec", table.AGENTS, ids=lambda s: s.name)
def test_every_template_an_agent_uses_exists_in_both_languages(spec: table.AgentSpec) -> None:
    wanted = set(spec.templates)
    if "system_rules" in spec.system:
        wanted.add(f"{spec.name}_system")
        assert f"{spec.name}_system" in spec.templates
    if "closing" in spec.user:
        assert f"{spec.name}_closing" in spec.templates
    for lang in LANGS:
        for name in wanted:
            assert template(lang, name).strip(), f"{lang}/{name}.txt is empty"


@pytest.mark.parametrize("spec", table.AGENTS, ids=lambda s: s.name)
def test_every_row_names_known_blocks_stages_windows_and_settings(spec: table.AgentSpec) -> None:
    assert set(spec.system) | set(spec.user) <= set(BLOCKS)
    # A preset-shaped writer (#15) re-places blocks of its own row, never others.
    assert set(spec.preset_rules) <= set(spec.system)
    assert set(spec.preset_turn) <= set(spec.user)
    assert spec.stage in STAGES
    assert spec.window is None or spec.window in table.WINDOWS
    assert spec.settings_key in NAMES
    assert 0 < spec.small_max_tokens <= spec.max_tokens
    assert spec.family == (not spec.system and not spec.user)


def test_a_preset_shapes_exactly_the_writers_that_stream_the_story() -> None:
    # The preset's order and samplers (#15) go with the story text, not the planner or analysis.
    assert table.preset_agents() == table.streaming_agents()


@pytest.mark.parametrize("spec", [s for s in table.AGENTS if s.schema], ids=lambda s: s.name)
def test_json_agents_have_a_schema_and_a_parser_that_agree(spec: table.AgentSpec) -> None:
    assert spec.schema in SCHEMAS and spec.parser is not None
    parse = spec.parse
    required = SCHEMAS[spec.schema]["required"]
    minimal = {"narrative_direction": "x"} if "narrative_direction" in required else {}
    minimal |= {key: [] for key in required if key not in minimal}
    parsed = parse(json.dumps(minimal), "en", "stop")
    assert parsed.ok, parsed.errors
    assert not parse("not json at all", "en", "stop").ok


@pytest.mark.parametrize("name", table.prompt_agents())
def test_the_router_assembles_each_prompt_in_the_rows_order(name: str) -> None:
    spec = table.agent(name)
    prompt = build_prompt(name, make_inputs("en"), "The lantern flickers.")
    source = Source(spec, make_inputs("en"), "The lantern flickers.", None)
    expected = [BLOCKS[token](source).name for token in (*spec.system, *spec.user)]
    built = list(dict.fromkeys(prompt.block_names()))  # a note in the chat splits recent_turns
    assert built, name
    assert [b for b in expected if b in built] == built  # the row's blocks, in its order


def test_a_family_agent_is_found_by_its_prefix_and_unknown_agents_are_refused() -> None:
    assert table.agent("tool:dice").name == "tool"
    assert table.find_agent("planning:x") is None
    with pytest.raises(ValueError, match="unknown agent 'poet'.*tool:<name>"):
        table.agent("poet")
    with pytest.raises(ValueError, match="builds its own messages"):
        build_prompt("tool:oracle", make_inputs("en"))


# --- the readers follow the table -------------------------------------------------------------


def test_default_reply_limits_come_from_the_table() -> None:
    bundled = Profile(name="local", provider="local")
    remote = Profile(name="x", provider="openai")
    for spec in table.AGENTS:
        name = f"{spec.name}:oracle" if spec.family else spec.name
        assert default_max_tokens(name, bundled) == spec.small_max_tokens
        assert default_max_tokens(name, remote) == spec.max_tokens
    assert default_max_tokens("merged_writing", remote) == 2048


def test_config_refuses_an_agent_the_table_does_not_know(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"agents\.plannning: unknown agent \(expected one of"):
        settings_from_dict({"agents": {"plannning": {"temperature": 0.2}}}, "config.yaml")
    ok = settings_from_dict({"agents": {"tool:dice": {"max_retries": 0}}}, "config.yaml")
    assert isinstance(ok, Settings) and ok.agent("tool:dice").max_retries == 0


def test_status_labels_and_local_slots_follow_the_table() -> None:
    assert stage_label("mvu_extract", "en") == "mvu_extract"  # an agent, not a stage
    assert table.agent("mvu_extract").label("zh") == "后处理"
    server = LocalServer(
        base_url="http://127.0.0.1:1", model_path=Path("x"), slots=8, context_size=1
    )
    pinned = table.pinned_slot_families()
    assert [server.slot_for(family) for family in pinned] == list(range(len(pinned)))
    assert server.slot_for("merged_writing") == server.slot_for("writing")


def test_a_new_row_is_all_the_readers_need(monkeypatch: pytest.MonkeyPatch) -> None:
    # The worked example of docs/internals.md: a compaction agent is one row (plus templates
    # and its stage). Router, config, reply limits and local slots take it from the row.
    compaction = table.AgentSpec(
        name="compaction",
        stage="post",
        system=("analysis_system",),
        user=("story_summary", "state_summary"),
        schema="analysis",
        parser="parse_analysis",
        max_tokens=900,
        small_max_tokens=128,
        slot_family="compaction",
    )
    rows = (*table.AGENTS, compaction)
    monkeypatch.setattr(table, "AGENTS", rows)
    monkeypatch.setattr(table, "_BY_NAME", {spec.name: spec for spec in rows})
    inputs = replace(make_inputs("en"), state_summary="Day 2, the tower.")
    prompt = build_prompt("compaction", inputs)
    assert prompt.agent == "compaction"
    assert prompt.block_names() == ["analysis_system", "story_summary", "state_summary"]
    settings = settings_from_dict({"agents": {"compaction": {"temperature": 0.1}}}, "c.yaml")
    assert settings.agent("compaction").temperature == 0.1
    assert default_max_tokens("compaction", Profile(name="local", provider="local")) == 128
    assert "compaction" in table.json_agents()
    server = LocalServer(
        base_url="http://127.0.0.1:1", model_path=Path("x"), slots=8, context_size=1
    )
    others = {server.slot_for(a) for a in table.agent_names() if a != "compaction"}
    assert server.slot_for("compaction") not in others


def test_reading_the_table_loads_no_parser() -> None:
    # config reads the table on every start; the parsers load when a reply is first parsed.
    code = "import sys, narrative_cli.config; print('narrative_cli.agents.parsing' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "False", result.stderr
