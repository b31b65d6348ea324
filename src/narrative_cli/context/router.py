"""Each agent's request, assembled in the design's order (各 Agent 的 Prompt 构成).

Every builder takes the turn's :class:`PromptInputs` and returns a :class:`Prompt`: a system
and a user message, the named blocks they were made of, and where the stable prefix ends.
Beyond the design: a ``<character>`` block (the card itself) sits in the stable head before
``<worldinfo2>``; the card's system prompt follows the preset head; its depth prompt follows
the recent turns; its post-history instructions come after ``<user_input>``; and
``<story_summary>`` covers only the turns before the window, so it changes only at a cut.
Macros are applied first unless the pipeline already did (``expand.apply_macros``).
"""

from __future__ import annotations

from narrative_cli.agents.templates import analysis_system, fill, mvu_extract_system, template
from narrative_cli.context import parts
from narrative_cli.context.blocks import Block, Prompt, make_prompt, plain, tagged
from narrative_cli.context.expand import apply_macros
from narrative_cli.context.inputs import (
    HistoryTurn,
    PromptInputs,
    SummaryEntry,
    WindowSettings,
)
from narrative_cli.context.preset_prompt import build_preset_writing

__all__ = [
    "AGENTS",
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

AGENTS = ("planning", "writing", "merged_writing", "analysis", "mvu_extract")


def build_planning(inputs: PromptInputs) -> Prompt:
    """The planner: setting and history in, a JSON writing guide out."""
    inputs = apply_macros(inputs)
    lang = inputs.lang
    turns = parts.window(inputs, inputs.planning_window)
    system = [
        parts.preset_system(inputs),
        parts.worldinfo(1, inputs.worldinfo1, stable=True),
        plain("planning_system", template(lang, "planning_system"), stable=True),
        plain("tool_list", inputs.tool_list_text.strip(), stable=True),
        plain("dice_rule", template(lang, "planning_dice_rule") if inputs.dice_rules else "",
              stable=True),
    ]
    user = [
        parts.character(inputs, examples=False),
        parts.worldinfo(2, inputs.worldinfo2, stable=True),
        parts.story_summary(inputs, turns),
        parts.persona(inputs),
        parts.recent_turns(turns, lang),
        parts.worldinfo(3, inputs.worldinfo3, stable=False),
        parts.state_summary(inputs),
        parts.user_input(inputs),
        plain("closing", template(lang, "planning_closing")),
    ]
    return make_prompt("planning", [("system", system), ("user", user)])


def build_writing(inputs: PromptInputs) -> Prompt:
    """The writer of the serial pipeline: the plan's guide and tool results in, prose out."""
    inputs = apply_macros(inputs)
    lang = inputs.lang
    turns = parts.window(inputs, inputs.writing_window)
    results = parts.tool_results(inputs)
    rule = template(lang, "writing_tool_rule") if not results.empty else ""
    if _preset_shaped(inputs):
        rules = [parts.worldinfo(1, inputs.worldinfo1, stable=True),
                 plain("writing_system", template(lang, "writing_system"), stable=True),
                 plain("tool_rule", rule, stable=True), _dice_rule(inputs)]
        now = [parts.text_recall(inputs), parts.writing_guide(inputs), results]
        return build_preset_writing(inputs, "writing", rules, now)
    # Fixed text that is only present on turns with tool results: part of the cached head.
    system = [
        *_writer_head(inputs, "writing_system"),
        plain("tool_rule", rule, stable=True),
        _dice_rule(inputs),
    ]
    user = [
        parts.user_preset(inputs),
        parts.character(inputs, examples=True),
        parts.worldinfo(2, inputs.worldinfo2, stable=True),
        parts.persona(inputs),
        parts.recent_turns(turns, lang),
        parts.authors_note(inputs),
        parts.character_note(inputs),
        parts.worldinfo(3, inputs.worldinfo3, stable=False),
        parts.text_recall(inputs),
        parts.writing_guide(inputs),
        results,
        parts.user_input(inputs),
        parts.post_history_instructions(inputs),
    ]
    return make_prompt("writing", [("system", system), ("user", user)])


def build_merged_writing(inputs: PromptInputs) -> Prompt:
    """Planning and writing in one call (merged mode): the union of both prompts."""
    inputs = apply_macros(inputs)
    lang = inputs.lang
    turns = parts.window(inputs, inputs.writing_window)
    if _preset_shaped(inputs):
        rules = [parts.worldinfo(1, inputs.worldinfo1, stable=True),
                 plain("merged_writing_system", template(lang, "merged_writing_system"),
                       stable=True), _dice_rule(inputs, merged=True)]
        now = [parts.story_summary(inputs, turns), parts.text_recall(inputs),
               parts.state_summary(inputs),
               plain("closing", template(lang, "merged_writing_closing"))]
        return build_preset_writing(inputs, "merged_writing", rules, now)
    user = [
        parts.user_preset(inputs),
        parts.character(inputs, examples=True),
        parts.worldinfo(2, inputs.worldinfo2, stable=True),
        parts.persona(inputs),
        parts.story_summary(inputs, turns),
        parts.recent_turns(turns, lang),
        parts.authors_note(inputs),
        parts.character_note(inputs),
        parts.worldinfo(3, inputs.worldinfo3, stable=False),
        parts.text_recall(inputs),
        parts.state_summary(inputs),
        parts.user_input(inputs),
        parts.post_history_instructions(inputs),
        plain("closing", template(lang, "merged_writing_closing")),
    ]
    system = [*_writer_head(inputs, "merged_writing_system"), _dice_rule(inputs, merged=True)]
    return make_prompt("merged_writing", [("system", system), ("user", user)])


def build_analysis(inputs: PromptInputs, narrative: str) -> Prompt:
    """The merged analysis: existing summaries first (cached), then this turn's text."""
    inputs = apply_macros(inputs)
    lang = inputs.lang
    system = [plain("analysis_system", analysis_system(lang), stable=True)]
    user = [
        parts.story_summary(inputs, None),
        parts.state_summary(inputs),
        plain("turn_header", fill(lang, "analysis_turn", turn=inputs.turn)),
        parts.user_input(inputs),
        tagged("narrative_output", narrative.strip()),
        plain("closing", template(lang, "analysis_closing")),
    ]
    return make_prompt("analysis", [("system", system), ("user", user)])


def build_mvu_extract(inputs: PromptInputs, narrative: str) -> Prompt:
    """mvu_extract: this turn's text and the variable state in, JSON Patch operations out.

    ``inputs.state_summary`` should hold the MVU variables' summary (``state.mvu``).
    """
    inputs = apply_macros(inputs)
    lang = inputs.lang
    system = [plain("mvu_extract_system", mvu_extract_system(lang, inputs.mvu_rules), stable=True)]
    user = [
        tagged("narrative_text", narrative.strip()),
        parts.state_summary(inputs),
        plain("closing", template(lang, "mvu_extract_closing")),
    ]
    return make_prompt("mvu_extract", [("system", system), ("user", user)])


def build_prompt(agent: str, inputs: PromptInputs, narrative: str = "") -> Prompt:
    """The prompt of ``agent`` (one of :data:`AGENTS`)."""
    if agent == "planning":
        return build_planning(inputs)
    if agent == "writing":
        return build_writing(inputs)
    if agent == "merged_writing":
        return build_merged_writing(inputs)
    if agent == "analysis":
        return build_analysis(inputs, narrative)
    if agent == "mvu_extract":
        return build_mvu_extract(inputs, narrative)
    raise ValueError(f"unknown agent {agent!r}; expected one of {', '.join(AGENTS)}")


def _preset_shaped(inputs: PromptInputs) -> bool:
    """A given preset shapes the writer's request (``split``: the pipeline's mode whenever the
    user gave a preset); ``none`` means no preset."""
    parts.preset_text(inputs)  # checks the mode
    return inputs.preset is not None and inputs.preset_mode == "split"


def _dice_rule(inputs: PromptInputs, *, merged: bool = False) -> Block:
    """The writer's rule against invented rolls: on turns with dice, and always for a card
    whose lore describes checks (issue #20). The merged writer runs no tools."""
    wanted = inputs.dice_rules or (inputs.dice_in_results and not merged)
    return plain("dice_rule", template(inputs.lang, "writing_dice_rule") if wanted else "",
                 stable=True)  # fmt: skip


def _writer_head(inputs: PromptInputs, suffix: str) -> list[Block]:
    """Preset system text, the card's system prompt, ``<worldinfo1>``, the writer's rules."""
    return [
        parts.preset_system(inputs),
        parts.card_system_prompt(inputs),
        parts.worldinfo(1, inputs.worldinfo1, stable=True),
        plain(suffix, template(inputs.lang, suffix), stable=True),
    ]
