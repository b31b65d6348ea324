"""MVU in a turn: the writer's ``<UpdateVariable>`` block, and the ``mvu_extract`` agent.

Real MVU cards ask the writer to end its reply with an ``<UpdateVariable>`` block of
``_.set('path', old, new);//reason`` commands (or a ``<JSONPatch>`` array). ``apply_reply``
applies every command of the reply to the variables (``state.mvu_update``), keeps the block
for the stored message (``TurnResult.mvu_block``) and returns the story text without it, which
is what the player sees and what later prompts read back as history.

``run_mvu_extract`` asks the ``mvu_extract`` agent for the same native block when the writer
gave none (a card whose writer prompt does not ask for one); when the writer's reply already
carried commands, it is not called, so no change is applied twice. ``apply_input`` applies
commands the player typed, before any prompt is built (MVU handles sent messages too).
"""

from __future__ import annotations

from narrative_cli.context.blocks import Prompt
from narrative_cli.context.inputs import PromptInputs
from narrative_cli.context.router import build_mvu_extract
from narrative_cli.dataclass_copy import replaced
from narrative_cli.errors import BackendError
from narrative_cli.pipeline.fitting import fit_prompt
from narrative_cli.pipeline.turn import TurnState
from narrative_cli.state.mvu import mvu_summary
from narrative_cli.state.mvu_commands import has_update, strip_update_blocks, update_blocks
from narrative_cli.state.mvu_update import MvuData, update_variables

__all__ = ["apply_input", "apply_reply", "run_mvu_extract"]


def apply_input(state: TurnState) -> None:
    """Commands in the player's own message are applied first, as MVU does for a sent message
    (the text itself is left as typed)."""
    if state.story.uses_mvu and has_update(state.user_input):
        _apply(state, state.user_input)


def apply_reply(state: TurnState, text: str) -> str:
    """Apply the MVU commands in the writer's reply ``text``; return the story text to show."""
    shown = strip_update_blocks(text)
    state.mvu_block = update_blocks(text)
    if not state.story.uses_mvu or not has_update(text):
        return shown
    if _apply(state, text):
        state.mvu_from_writer = True
    return shown


def _apply(state: TurnState, text: str) -> bool:
    """Apply ``text``'s commands to the turn's variables; whether it held any command."""
    user, char = state.story.names
    data = MvuData.viewing(state.mvu, state.mvu_data)  # update_variables changes a copy
    result = update_variables(text, data, lang=state.lang, user=user, char=char)
    state.mvu = result.data.stat_data
    state.mvu_data = result.data.to_dict()
    state.mvu_applied.extend(result.applied)
    state.mvu_rejected.extend(result.rejected)
    return bool(result.applied or result.rejected)


def run_mvu_extract(state: TurnState) -> None:
    """mvu_extract: an ``<UpdateVariable>`` block for this turn, applied like the writer's."""
    if state.mvu_from_writer:
        return
    with state.stage("post"):
        summary = mvu_summary(state.mvu or {}, state.lang)

        def build(inputs: PromptInputs) -> Prompt:
            # ``replaced``: dataclasses.replace on the 40 fields of the inputs was a tenth of
            # this stage's own cost (#17, session nine)
            return build_mvu_extract(replaced(inputs, state_summary=summary),
                                     state.prompt_narrative)

        prompt = fit_prompt(state, build, "mvu_extract")
        try:
            reply = state.calls.complete(
                "mvu_extract", prompt.messages, cache_breakpoints=prompt.cache_breakpoints
            )
        except BackendError as error:
            state.warn("mvu_extract", f"mvu_extract failed ({error.message}); variables unchanged")
            return
        if not has_update(reply.text):
            state.warn(
                "mvu_extract", "mvu_extract gave no <UpdateVariable> block; variables unchanged"
            )
            return
        _apply(state, reply.text)
