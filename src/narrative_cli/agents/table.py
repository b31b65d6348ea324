"""The one table of agents: everything the rest of the program knows about each agent.

An agent is a row of :data:`AGENTS`: its trace name, the templates it uses, the context blocks
its prompt is made of (``context.router`` assembles them in this order), its reply schema and
parser, its default reply limits, its slot on the local server, whether its reply streams, and
the pipeline stage it runs in (whose label the status line shows). The router, config
validation, replay keys and reports, status labels, local slots and listener events all read
this table; no other module lists agent names (``tests/test_agent_table.py`` checks it).

Adding an agent is its row here, its templates in ``templates/{zh,en}/`` and the stage that
calls it (``docs/internals.md`` walks through one). A *family* row (``tool``) stands for every
agent named ``tool:<name>``.

This module imports nothing above ``agents/`` so that ``config`` and ``backends`` can read it,
and nothing heavy at import time: ``config`` loads it on every start, so a row names its parser
and ``AgentSpec.parse`` imports ``agents.parsing`` when a reply is first parsed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from narrative_cli.agents.parsing import ParseResult

Parser = Callable[[str | None, str, str | None], "ParseResult"]


@dataclass(frozen=True)
class StageSpec:
    """One pipeline stage as the listener and the status line name it."""

    name: str
    labels: dict[str, str]  # by prompt language: zh, en

    def label(self, lang: str) -> str:
        return self.labels["zh" if lang == "zh" else "en"]


# The stages in pipeline order; an agent runs inside one of them.
STAGES: tuple[StageSpec, ...] = (
    StageSpec("lore", {"zh": "世界书", "en": "Lore"}),
    StageSpec("templates", {"zh": "模板", "en": "Templates"}),
    StageSpec("planning", {"zh": "规划", "en": "Planning"}),
    StageSpec("tools", {"zh": "工具", "en": "Tools"}),
    StageSpec("recall", {"zh": "回忆", "en": "Recall"}),
    StageSpec("writing", {"zh": "写作", "en": "Writing"}),
    StageSpec("analysis", {"zh": "分析", "en": "Analysis"}),
    StageSpec("state", {"zh": "状态", "en": "State"}),
    StageSpec("post", {"zh": "后处理", "en": "Post-processing"}),
)

# The n+m windows of recent turns (pipeline.recent_turns_for_<window>); snapshots keep each
# window's first turn under these names.
WINDOWS: tuple[str, ...] = ("planning", "writing")


@dataclass(frozen=True)
class AgentSpec:
    """One agent. Block names are ``context.router.BLOCKS`` keys; ``system_rules`` is the
    agent's ``<name>_system`` template and ``closing`` its ``<name>_closing`` template."""

    name: str  # the trace name (X-Narrative-Agent, calls.jsonl); a family: the prefix
    stage: str  # the STAGES entry it runs in
    max_tokens: int  # default reply limit for any model but the bundled one
    small_max_tokens: int  # default reply limit for the bundled 135M model (short, it loops)
    slot_family: str  # agents of one family share a slot on the local server
    templates: tuple[str, ...] = ()  # files in templates/{zh,en}/ (without .txt)
    system: tuple[str, ...] = ()  # context blocks of the system message, in order
    user: tuple[str, ...] = ()  # context blocks of the user message, in order
    # A writer shaped by a given preset (issue #15, ``context.preset_prompt``): the agent's own
    # rules, placed after the preset's ``main`` prompt, and this turn's blocks, placed with the
    # chat; the preset's order supplies the rest. Empty: the preset does not shape this agent.
    preset_rules: tuple[str, ...] = ()
    preset_turn: tuple[str, ...] = ()
    window: str | None = None  # the WINDOWS entry its <recent_turns> come from
    schema: str | None = None  # agents.schemas.SCHEMAS key: a JSON reply; None: free text
    parser: str | None = None  # the agents.parsing function that reads a JSON reply
    streams: bool = False  # its reply is the story text, streamed to the listener
    pinned_slot: bool = False  # its family gets one of the first local slots, in table order
    once_per_turn: bool = True  # at most one call per turn (corrective retries aside)
    settings_from: str = ""  # the `agents:` config entry it falls back to ("": its own name)
    family: bool = False  # the row stands for every ``<name>:<suffix>`` agent

    @property
    def settings_key(self) -> str:
        return self.settings_from or self.name

    @property
    def parse(self) -> Parser:
        """The reply parser (``parser`` looked up in ``agents.parsing``)."""
        from narrative_cli.agents import parsing

        if self.parser is None:
            raise ValueError(f"agent {self.name!r} does not reply in JSON")
        found: Parser = getattr(parsing, self.parser)
        return found

    def label(self, lang: str) -> str:
        """The status line's name of the stage this agent runs in."""
        return stage(self.stage).label(lang)


AGENTS: tuple[AgentSpec, ...] = (
    AgentSpec(
        name="planning",
        stage="planning",
        templates=(
            "planning_system", "planning_closing", "planning_dice_rule", "planning_recall_rule",
            "planning_group", "planning_format",
        ),
        system=(
            "preset_system",
            "worldinfo1",
            "system_rules",
            "tool_list",
            "planning_dice_rule",
            "planning_format",  # the reply's JSON shape: fixed text, in the cached head (#17)
            "planning_recall_rule",
        ),
        user=(
            "character",
            "worldinfo2",
            "user_persona",  # fixed for the story: before the summary, which changes at cuts
            "story_summary",
            "recent_turns",
            "worldinfo3",
            "state_summary",
            "user_input",
            "group_scene",
            "closing",
        ),
        window="planning",
        schema="plan",
        parser="parse_plan",
        max_tokens=1024,
        small_max_tokens=256,
        slot_family="planning",
        pinned_slot=True,
    ),
    AgentSpec(
        name="writing",
        stage="writing",
        templates=("writing_system", "writing_tool_rule", "writing_dice_rule", "writing_group"),
        system=(
            "preset_system",
            "card_system_prompt",
            "worldinfo1",
            "system_rules",
            "tool_rule",
            "writing_dice_rule",
        ),
        user=(
            "user_preset",
            "character_with_examples",
            "worldinfo2",
            "user_persona",
            "recent_turns",
            "authors_note",
            "character_note",
            "worldinfo3",
            "text_recall",
            "writing_guide",
            "tool_results",
            "speaker_note",
            "user_input",
            "scene_so_far",
            "post_history_instructions",
        ),
        preset_rules=("worldinfo1", "system_rules", "tool_rule", "writing_dice_rule"),
        preset_turn=("text_recall", "writing_guide", "tool_results", "speaker_note",
                     "scene_so_far"),
        window="writing",
        max_tokens=2048,
        small_max_tokens=256,
        slot_family="writing",
        streams=True,
        pinned_slot=True,
    ),
    AgentSpec(
        name="merged_writing",
        stage="writing",
        templates=("merged_writing_system", "merged_writing_closing", "writing_dice_rule"),
        system=(
            "preset_system",
            "card_system_prompt",
            "worldinfo1",
            "system_rules",
            "writing_dice_rule",
        ),
        user=(
            "user_preset",
            "character_with_examples",
            "worldinfo2",
            "user_persona",
            "story_summary",
            "recent_turns",
            "authors_note",
            "character_note",
            "worldinfo3",
            "text_recall",
            "state_summary",
            "user_input",
            "post_history_instructions",
            "closing",
        ),
        preset_rules=("worldinfo1", "system_rules", "writing_dice_rule"),
        preset_turn=("story_summary", "text_recall", "state_summary", "closing"),
        window="writing",
        max_tokens=2048,
        small_max_tokens=256,
        slot_family="writing",
        streams=True,
        settings_from="writing",
    ),
    AgentSpec(
        name="analysis",
        stage="analysis",
        templates=("analysis_prefix", "analysis_system", "analysis_turn", "analysis_closing",
                   "analysis_group"),
        system=("analysis_system",),
        user=(
            "story_summary",
            "state_summary",
            "turn_header",
            "user_input",
            "narrative_output",
            "analysis_group",
            "closing",
        ),
        schema="analysis",
        parser="parse_analysis",
        max_tokens=1024,
        small_max_tokens=256,
        slot_family="analysis",
        pinned_slot=True,
    ),
    AgentSpec(
        name="mvu_extract",
        stage="post",
        templates=("analysis_prefix", "mvu_extract_system", "mvu_rules", "mvu_extract_closing"),
        system=("mvu_extract_system",),
        # stable first (#17): the fixed instruction, then the variables, then this turn's text
        user=("closing", "state_summary", "narrative_text"),
        max_tokens=1024,
        small_max_tokens=192,
        slot_family="mvu_extract",
    ),
    AgentSpec(  # issue #17: folds old summary entries into chapters, chapters into arcs
        name="compaction",
        stage="post",
        templates=("compaction_system", "compaction_closing"),
        system=("system_rules",),
        user=("fold_source", "fold_request"),
        schema="compaction",
        parser="parse_compaction",
        max_tokens=1024,
        small_max_tokens=192,
        slot_family="compaction",
        once_per_turn=False,  # a cut may fold entries, then chapters, then arcs
    ),
    AgentSpec(  # issue #17: an imported chat's old turns, a batch at a time (play.catch_up)
        name="catch_up",
        stage="analysis",
        templates=("analysis_prefix", "catch_up_system", "catch_up_closing"),
        system=("catch_up_system",),
        user=("character", "story_summary", "state_summary", "past_turns", "closing"),
        schema="catch_up",
        parser="parse_catch_up",
        max_tokens=4096,
        small_max_tokens=512,
        slot_family="analysis",
    ),
    AgentSpec(  # /impersonate (#18): the writer's prompt closed by SillyTavern's impersonation
        # prompt (play.impersonate); the draft goes to the player's input, never the story
        name="impersonation",
        stage="writing",
        system=("preset_system", "card_system_prompt", "worldinfo1"),
        user=(
            "user_preset",
            "character_with_examples",
            "worldinfo2",
            "user_persona",
            "recent_turns",
            "authors_note",
            "character_note",
            "worldinfo3",
            "post_history_instructions",
        ),
        window="writing",
        max_tokens=512,
        small_max_tokens=128,
        slot_family="writing",
        settings_from="writing",
        once_per_turn=False,
    ),
    AgentSpec(  # llm tools: each builds its own messages (tools.llm_tools)
        name="tool",
        stage="tools",
        max_tokens=768,
        small_max_tokens=160,
        slot_family="tool",
        once_per_turn=False,
        family=True,
    ),
)

_BY_NAME = {spec.name: spec for spec in AGENTS}


def find_agent(name: str) -> AgentSpec | None:
    """The row of ``name`` (``tool:dice`` → the ``tool`` family), None when there is none."""
    spec = _BY_NAME.get(name)
    if spec is not None:
        return spec
    prefix, colon, _ = name.partition(":")
    family = _BY_NAME.get(prefix)
    return family if colon and family is not None and family.family else None


def agent(name: str) -> AgentSpec:
    """The row of ``name``; ValueError naming the known agents when there is none."""
    spec = find_agent(name)
    if spec is None:
        raise ValueError(f"unknown agent {name!r}; expected one of {known_agents()}")
    return spec


def known_agents() -> str:
    """The names an agent may have, for messages: ``planning, …, tool, tool:<name>``."""
    names = [n for s in AGENTS for n in ((s.name, f"{s.name}:<name>") if s.family else (s.name,))]
    return ", ".join(names)


def agent_names() -> tuple[str, ...]:
    """Every row's name, in table order (a family by its prefix: ``tool``)."""
    return tuple(spec.name for spec in AGENTS)


def prompt_agents() -> tuple[str, ...]:
    """The agents whose prompt ``context.router`` assembles from blocks (not families)."""
    return tuple(spec.name for spec in AGENTS if not spec.family)


def json_agents() -> tuple[str, ...]:
    """The agents whose reply is JSON against a schema (parse failures are counted)."""
    return tuple(spec.name for spec in AGENTS if spec.schema is not None)


def streaming_agents() -> frozenset[str]:
    """The agents whose reply is the story text, streamed as it comes."""
    return frozenset(spec.name for spec in AGENTS if spec.streams)


def once_per_turn_agents() -> frozenset[str]:
    """The agents called at most once per turn (a second call means the turn was replayed)."""
    return frozenset(spec.name for spec in AGENTS if spec.once_per_turn)


def preset_agents() -> frozenset[str]:
    """The writers a given preset shapes: its prompt order and its samplers (issue #15)."""
    return frozenset(spec.name for spec in AGENTS if spec.preset_rules)


def pinned_slot_families() -> tuple[str, ...]:
    """The local server's first slots, in order: one per pinned family."""
    families = [spec.slot_family for spec in AGENTS if spec.pinned_slot]
    return tuple(dict.fromkeys(families))


def stage(name: str) -> StageSpec:
    """The stage called ``name``; KeyError when there is none."""
    for spec in STAGES:
        if spec.name == name:
            return spec
    raise KeyError(name)


def stage_names() -> tuple[str, ...]:
    return tuple(spec.name for spec in STAGES)
