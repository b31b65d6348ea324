"""``/impersonate``: the writer drafts the player's next line; the draft goes to the input.

The request is the ``impersonation`` row's prompt (``agents.table``: the writer's blocks for
the next turn, card, persona, recent turns, the Author's Note, without the writer's rules,
the plan or an input; the preset's system prompt when a preset is given; no lore scan)
closed, as SillyTavern's Chat Completion closes an ``impersonate`` generation
(``openai.js``: the ``impersonate`` control prompt, last), by a system message: the
preset's ``impersonation_prompt`` when a preset is given, SillyTavern's default otherwise,
macros expanded. The call is traced as the ``impersonation`` agent (it uses the writer's
backend and settings). Nothing is stored and the story does not move: the player edits
the draft and sends it, or not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from narrative_cli.domain_chat import Message
from narrative_cli.errors import BackendError
from narrative_cli.pipeline.events import Listener, ignore

if TYPE_CHECKING:
    from narrative_cli.play.controller import PlaySession

AGENT = "impersonation"
# SillyTavern's default_impersonation_prompt (public/scripts/openai.js)
ST_IMPERSONATION = (
    "[Write your next reply from the point of view of {{user}}, using the chat history so far"
    " as a guideline for the writing style of {{user}}. Don't write as {{char}} or system."
    " Don't describe actions of {{char}}.]"
)


def impersonation_prompt(play: PlaySession) -> str:
    """The closing instruction: the preset's ``impersonation_prompt`` or SillyTavern's."""
    from narrative_cli.context.macros import env_for, expand

    story = play.story
    given = story.preset.extra.get("impersonation_prompt") if story.preset else None
    text = given if isinstance(given, str) and given.strip() else ST_IMPERSONATION
    return expand(text, env_for(story.card, story.persona, lang=story.lang))


def impersonate(play: PlaySession, listener: Listener | None = None) -> str:
    """The writer's draft of the player's next line (BackendError, TurnCancelled)."""
    from narrative_cli.context.expand import apply_macros
    from narrative_cli.context.router import build_prompt
    from narrative_cli.pipeline.calls import CallRunner
    from narrative_cli.pipeline.fitting import fit_prompt
    from narrative_cli.pipeline.samplers import preset_samplers
    from narrative_cli.pipeline.stages import clean_narrative
    from narrative_cli.pipeline.story import ensure_mvu
    from narrative_cli.pipeline.turn import TurnState

    story = play.story
    snapshot, _ = ensure_mvu(story, story.snapshot)
    calls = CallRunner(
        play.backends,
        turn=snapshot.turn + 1,
        mode="impersonate",
        lang=story.lang,
        listener=listener or ignore,
        trace=play.trace,
        samplers=preset_samplers(story.preset),
    )
    state = TurnState.start(story, "", snapshot, calls)
    state.base_inputs = apply_macros(state.make_base_inputs(""))
    prompt = fit_prompt(state, lambda inputs: build_prompt(AGENT, inputs), AGENT)
    messages = [*prompt.messages, Message("system", impersonation_prompt(play))]
    reply = calls.complete(AGENT, messages, stream=False)
    draft = clean_narrative(reply.text).strip()
    if not draft:
        raise BackendError(f"{AGENT}: the model returned no text to draft from")
    return draft
