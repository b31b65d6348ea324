"""Each agent's request, assembled in the design's order (各 Agent 的 Prompt 构成).

Every builder takes the turn's :class:`PromptInputs` and returns a :class:`Prompt`: a system
and a user message, the named blocks they were made of, and where the stable prefix ends.
Beyond the design: a ``<character>`` block (the card itself) sits in the stable head before
``<worldinfo2>``; the card's system prompt follows the preset head; its depth prompt follows
the recent turns; its post-history instructions come after ``<user_input>``; and
``<story_summary>`` covers only the turns before the window, so it changes only at a cut.
Macros are applied first unless the pipeline already did (``expand.apply_macros``).

Which blocks an agent gets, and in which order, is its row in ``agents.table``; :data:`BLOCKS`
says how each named block is made. A new agent whose blocks are all here needs no change to
this module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from narrative_cli.agents.table import AgentSpec, agent
from narrative_cli.agents.templates import (
    analysis_system,
    catch_up_system,
    fill,
    mvu_extract_system,
    template,
)
from narrative_cli.context import chat_notes, parts
from narrative_cli.context.blocks import Block, Prompt, make_prompt, plain, tagged
from narrative_cli.context.expand import apply_macros
from narrative_cli.context.inputs import (
    HistoryTurn,
    PromptInputs,
    SummaryEntry,
    WindowSettings,
)
from narrative_cli.context.preset_prompt import build_preset_writing
from narrative_cli.context.window import window_first

__all__ = [
    "BLOCKS",
    "HistoryTurn",
    "PromptInputs",
    "SummaryEntry",
    "WindowSettings",
    "build_analysis",
    "build_merged_writing",
    "build_mvu_extract",
    "build_planning",
    "build_prompt",
    "build_writing",
]


@dataclass(frozen=True)
class Source:
    """What a block is made from: the agent, its inputs (macros applied), the turn's text and
    the agent's window of recent turns (None: the agent sees no window)."""

    spec: AgentSpec
    inputs: PromptInputs
    narrative: str
    turns: list[HistoryTurn] | None

    @property
    def lang(self) -> str:
        return self.inputs.lang

    @property
    def window(self) -> list[HistoryTurn]:
        return self.turns or []


def _tool_rule(src: Source) -> Block:
    """The writer's rule for tool results, part of its cached head: whenever the planner was
    offered tools this turn, whether it called any or not (or results came all the same). Were
    it there only on turns with results, the head would change each time the planner chose
    otherwise, and everything after it would be read again: the writer's whole prompt on a
    provider's prefix cache (#17; measured in docs/benchmarks.md, session nine)."""
    offered = bool(src.inputs.tool_list_text.strip())
    wanted = offered or not parts.tool_results(src.inputs).empty
    return plain("tool_rule", template(src.lang, "writing_tool_rule") if wanted else "",
                 stable=True)


def _dice_rule(src: Source, name: str, wanted: bool) -> Block:
    """The rule against invented rolls (issue #20), when ``wanted``: part of the cached head."""
    return plain("dice_rule", template(src.lang, name) if wanted else "", stable=True)


def _writer_dice_rule(src: Source) -> Block:
    # Whenever the planner was offered dice (or dice were rolled), and always for a card whose
    # lore describes checks; a writer that sees no tool results (the merged one runs no tools)
    # only for the latter. The rule itself says that no check in <tool_results> means no roll.
    inputs = src.inputs
    dice = (inputs.dice_offered or inputs.dice_in_results) and "tool_results" in src.spec.user
    return _dice_rule(src, "writing_dice_rule", inputs.dice_rules or dice)


def _recall_rule(src: Source) -> Block:
    """How to ask for search terms (issue #17), once the story has a text index and turns
    before the window to search: from the window's first cut on, in the cached head."""
    inputs, settings = src.inputs, src.inputs.window_settings(src.spec.window)
    past = window_first(len(inputs.history), settings.n, settings.m) > 0
    wanted = inputs.text_search and past
    return plain("recall_rule", template(src.lang, "planning_recall_rule") if wanted else "",
                 stable=True)


# How each named block is made; an agent's row lists the names it gets.
BLOCKS: dict[str, Callable[[Source], Block]] = {
    "preset_system": lambda s: parts.preset_system(s.inputs),
    "user_preset": lambda s: parts.user_preset(s.inputs),
    "card_system_prompt": lambda s: parts.card_system_prompt(s.inputs),
    "worldinfo1": lambda s: parts.worldinfo(1, s.inputs.worldinfo1, stable=True),
    "worldinfo2": lambda s: parts.worldinfo(2, s.inputs.worldinfo2, stable=True),
    "worldinfo3": lambda s: parts.worldinfo(3, s.inputs.worldinfo3, stable=False),
    "system_rules": lambda s: plain(
        f"{s.spec.name}_system", template(s.lang, f"{s.spec.name}_system"), stable=True
    ),
    "analysis_system": lambda s: plain("analysis_system", analysis_system(s.lang), stable=True),
    "catch_up_system": lambda s: plain(
        "catch_up_system", catch_up_system(s.lang, s.inputs.mvu_rules), stable=True
    ),
    "mvu_extract_system": lambda s: plain(
        "mvu_extract_system", mvu_extract_system(s.lang, s.inputs.mvu_rules), stable=True
    ),
    "tool_list": lambda s: plain("tool_list", s.inputs.tool_list_text.strip(), stable=True),
    "tool_rule": _tool_rule,
    "planning_dice_rule": lambda s: _dice_rule(s, "planning_dice_rule", s.inputs.dice_rules),
    "writing_dice_rule": _writer_dice_rule,
    "character": lambda s: (
        parts.cast(s.inputs) if s.inputs.cast else parts.character(s.inputs, examples=False)
    ),
    "group_scene": lambda s: plain("group_scene", s.inputs.scene_note.strip()),
    "speaker_note": lambda s: plain("speaker_note", s.inputs.speaker_note.strip()),
    "scene_so_far": lambda s: parts.scene_so_far(s.inputs),
    "analysis_group": lambda s: plain("analysis_group", s.inputs.analysis_note.strip()),
    "character_with_examples": lambda s: parts.character(s.inputs, examples=True),
    "story_summary": lambda s: parts.story_summary(
        s.inputs, s.turns, s.inputs.window_settings(s.spec.window) if s.spec.window else None
    ),
    "user_persona": lambda s: parts.persona(s.inputs),
    "recent_turns": lambda s: parts.recent_turns(s.window, s.lang),
    "authors_note": lambda s: parts.authors_note(s.inputs),
    "character_note": lambda s: parts.character_note(s.inputs),
    "text_recall": lambda s: parts.text_recall(s.inputs),
    "writing_guide": lambda s: parts.writing_guide(s.inputs),
    "tool_results": lambda s: parts.tool_results(s.inputs),
    "state_summary": lambda s: parts.state_summary(s.inputs),
    "turn_header": lambda s: plain(
        "turn_header", fill(s.lang, "analysis_turn", turn=s.inputs.turn)
    ),
    "user_input": lambda s: parts.user_input(s.inputs),
    "narrative_output": lambda s: tagged("narrative_output", s.narrative.strip()),
    "narrative_text": lambda s: tagged("narrative_text", s.narrative.strip()),
    "past_turns": lambda s: tagged("past_turns", s.narrative.strip()),  # catch_up's batch
    "post_history_instructions": lambda s: parts.post_history_instructions(s.inputs),
    "closing": lambda s: plain("closing", template(s.lang, f"{s.spec.name}_closing")),
    "planning_recall_rule": _recall_rule,
    "planning_format": lambda s: plain(
        "planning_format", template(s.lang, "planning_format"), stable=True
    ),
    "fold_source": lambda s: parts.fold_source(s.inputs),
    "fold_request": lambda s: parts.fold_request(s.inputs),
}


def build_prompt(name: str, inputs: PromptInputs, narrative: str = "") -> Prompt:
    """The prompt of agent ``name``: its row's blocks, in order (ValueError: no such agent)."""
    spec = agent(name)
    if spec.family:
        raise ValueError(f"agent {name!r} builds its own messages, not a prompt from blocks")
    inputs = apply_macros(inputs)
    turns = parts.window(inputs, inputs.window_settings(spec.window)) if spec.window else None
    src = Source(spec, inputs, narrative, turns)
    if spec.preset_rules and _preset_shaped(inputs):
        rules = [BLOCKS[block](src) for block in spec.preset_rules]
        now = [BLOCKS[block](src) for block in spec.preset_turn]
        return build_preset_writing(inputs, spec.name, rules, now)
    system = [BLOCKS[block](src) for block in spec.system]
    noted = None
    if "recent_turns" in spec.user and any(n in spec.user for n in chat_notes.NOTE_BLOCKS):
        noted = chat_notes.injections(inputs)
        if not any(noted):
            noted = None
    if noted is None:
        user = [BLOCKS[block](src) for block in spec.user]
        return make_prompt(spec.name, [("system", system), ("user", user)])
    # The notes at their depth and role, as SillyTavern sends them: the chat's lines are made
    # there, so the ``<recent_turns>`` block is only its place (it was made, then dropped).
    user = [_CHAT_PLACE if block == "recent_turns" else BLOCKS[block](src) for block in spec.user]
    return make_prompt(spec.name, chat_notes.with_notes(system, user, src.window, inputs, noted))


_CHAT_PLACE = Block(name="recent_turns", text="")  # where with_notes puts the chat


def _preset_shaped(inputs: PromptInputs) -> bool:
    """A given preset shapes the writer's request (``split``: the pipeline's mode whenever the
    user gave a preset); ``none`` means no preset."""
    parts.preset_text(inputs)  # checks the mode
    return inputs.preset is not None and inputs.preset_mode == "split"


def build_planning(inputs: PromptInputs) -> Prompt:
    """The planner: setting and history in, a JSON writing guide out."""
    return build_prompt("planning", inputs)


def build_writing(inputs: PromptInputs) -> Prompt:
    """The writer of the serial pipeline: the plan's guide and tool results in, prose out."""
    return build_prompt("writing", inputs)


def build_merged_writing(inputs: PromptInputs) -> Prompt:
    """Planning and writing in one call (merged mode): the union of both prompts."""
    return build_prompt("merged_writing", inputs)


def build_analysis(inputs: PromptInputs, narrative: str) -> Prompt:
    """The merged analysis: existing summaries first (cached), then this turn's text."""
    return build_prompt("analysis", inputs, narrative)


def build_mvu_extract(inputs: PromptInputs, narrative: str) -> Prompt:
    """mvu_extract: this turn's text and the variable state in, JSON Patch operations out.

    ``inputs.state_summary`` should hold the MVU variables' summary (``state.mvu``).
    """
    return build_prompt("mvu_extract", inputs, narrative)
