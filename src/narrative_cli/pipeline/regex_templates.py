"""The renderer for templates that regex replacements write into a turn's prompt texts.

ST-Prompt-Template renders the templates of every prompt message once SillyTavern's regex
scripts have rewritten it, with the variables as they stand when the prompt is built. A turn
renders them here with the same context as its other templates (``pipeline.templating``):
the chat's and global variables, MVU's trees as message variables, the story's lore, the
names, the seed and the clock; variables a template sets stay in the turn. A failing template
is a turn warning naming the script, and its piece is left out (``regex.templated``).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from narrative_cli.pipeline.story import Story
from narrative_cli.regex.templated import Renderer
from narrative_cli.tools.templates import (
    TemplateContext,
    TemplateJob,
    lore_data,
    render_templates,
)


class _Turn(Protocol):
    """What the renderer reads of ``pipeline.turn.TurnState``."""

    @property
    def story(self) -> Story: ...

    number: int
    user_input: str
    lang: str
    rng_stream: int
    variables: dict[str, Any]
    global_variables: dict[str, Any]

    def message_variables(self) -> dict[str, Any]: ...
    def warn(self, stage: str, message: str) -> None: ...


def turn_renderer(state: _Turn) -> Renderer:
    """Render regex-written templates against the turn's variables, keeping what they set.

    The renderer refers to the turn weakly: the turn keeps it (``TurnState.regex_render``),
    and a turn in a reference cycle with it stayed, with all its prompts, until a full
    collection, whose interval grows with the story (#17)."""
    turn = weakref.ref(state)

    def render(jobs: Sequence[TemplateJob]) -> list[str | None]:
        state = turn()
        if state is None:
            raise RuntimeError("the turn these templates belong to is over")
        batch = render_templates(jobs, _context(state))
        for warning in batch.warnings:
            state.warn("templates", warning)
        state.variables.clear()
        state.variables.update(batch.local)
        state.global_variables.clear()
        state.global_variables.update(batch.global_)
        return batch.outputs

    return render


def _context(state: _Turn) -> TemplateContext:
    story = state.story
    chat: list[tuple[str, str]] = []
    for turn in story.history:
        if turn.user_input:
            chat.append(("user", turn.user_input))
        if turn.narrative:
            chat.append(("assistant", turn.narrative))
    if state.user_input:
        chat.append(("user", state.user_input))
    last_char = next((t.narrative for t in reversed(story.history) if t.narrative), "")
    return TemplateContext(
        local=dict(state.variables),
        global_=dict(state.global_variables),
        message=state.message_variables(),
        lore=[lore_data(e) for e in story.entries],
        user=story.persona.name or "User",
        char=story.card.name,
        last_user=state.user_input,
        last_char=last_char,
        chat=chat,
        seed=(story.seed * 1_000_003 + state.number) * 31 + state.rng_stream,
        now_ms=int(story.clock().timestamp() * 1000),
        lang=state.lang,
    )


def story_renderer(current: Callable[[], Story], warn: Callable[[str], None]) -> Renderer:
    """Render regex-written templates of displayed text against the story's variables as they
    stand now (ST-Prompt-Template renders a shown message with the variables of that message;
    here the screen shows the newest turn, so they are the same). Nothing is kept."""

    def render(jobs: Sequence[TemplateJob]) -> list[str | None]:
        story = current()
        snap = story.snapshot
        message = {} if snap.mvu is None else {
            "stat_data": snap.mvu,
            "display_data": snap.mvu_data.get("display_data") or {},
            "delta_data": snap.mvu_data.get("delta_data") or {},
        }
        context = TemplateContext(
            local=dict(snap.variables), global_=dict(snap.global_variables), message=message,
            lore=[lore_data(e) for e in story.entries], user=story.persona.name or "User",
            char=story.card.name, seed=story.seed * 1_000_003 + snap.turn, lang=story.lang,
        )  # fmt: skip
        batch = render_templates(jobs, context)
        for warning in batch.warnings:
            warn(warning)
        return batch.outputs

    return render
