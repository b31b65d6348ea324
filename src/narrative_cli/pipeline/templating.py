"""The turn's EJS templates: every prompt text holding ``<%`` rendered in one sandbox call.

Runs after macros (as under SillyTavern, where ST-Prompt-Template sees the prompt once macros
are substituted, so ``<user>`` in a template's code is already the player's name). Card
fields, the persona, the activated lore, outlets, preset prompts and ``[mvu_update]`` rules
are rendered; a text whose template fails is left out (never sent as code) with a warning
naming it. Variables a template sets with ``setvar`` stay in the session; MVU's trees change
only through ``<UpdateVariable>`` blocks.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from narrative_cli.context.ejs import has_template
from narrative_cli.context.expand import macro_env
from narrative_cli.context.inputs import PromptInputs
from narrative_cli.context.macro_scan import entry_name
from narrative_cli.context.macros import expand
from narrative_cli.domain import LoreEntry
from narrative_cli.domain_chat import Preset
from narrative_cli.pipeline.turn import TurnState
from narrative_cli.tools.templates import (
    TemplateContext,
    TemplateJob,
    lore_data,
    render_templates,
)

_CARD_FIELDS = ("description", "personality", "scenario", "mes_example", "system_prompt",
                "post_history_instructions")  # fmt: skip


@dataclass
class _Slots:
    """Texts with templates, gathered in prompt order, and where each result goes back
    (a slot is the job's index, or None for a text without templates)."""

    jobs: list[TemplateJob] = field(default_factory=list)
    card: dict[str, int | None] = field(default_factory=dict)
    depth: int | None = None
    persona: int | None = None
    lore: dict[str, list[int | None]] = field(default_factory=dict)
    outlets: dict[str, list[int | None]] = field(default_factory=dict)
    preset: list[int | None] = field(default_factory=list)
    rules: list[int | None] = field(default_factory=list)
    world: list[int | None] = field(default_factory=list)

    def add(self, name: str, text: str) -> int | None:
        if not has_template(text):
            return None
        self.jobs.append(TemplateJob(name, text))
        return len(self.jobs) - 1


def apply_templates(state: TurnState, inputs: PromptInputs) -> PromptInputs:
    """``inputs`` with every template rendered (macros must already be applied)."""
    world = _world_entries(state, inputs)
    slots = _gather(state, inputs, world)
    if world:
        state.world_entries = world
    if not slots.jobs:
        return inputs
    with state.stage("templates"):
        batch = render_templates(slots.jobs, template_context(state, inputs))
    for warning in batch.warnings:
        state.warn("templates", warning)
    state.variables.clear()
    state.variables.update(batch.local)
    state.global_variables = batch.global_

    def out(slot: int | None, text: str) -> str:
        return text if slot is None else batch.outputs[slot] or ""

    if world:
        state.world_entries = [replace(e, content=out(s, e.content))
                               for e, s in zip(world, slots.world, strict=True)]  # fmt: skip
    return _rendered(inputs, slots, out)


def _gather(state: TurnState, inputs: PromptInputs, world: list[LoreEntry]) -> _Slots:
    slots = _Slots()
    card = inputs.card
    for name in _CARD_FIELDS:
        slots.card[name] = slots.add(f"card field {name}", getattr(card, name))
    depth = card.extensions.get("depth_prompt")
    if isinstance(depth, dict) and isinstance(depth.get("prompt"), str):
        slots.depth = slots.add("card field depth_prompt", depth["prompt"])
    slots.persona = slots.add("persona", inputs.persona.description)
    for block, texts, entries in _lore_blocks(state, inputs):
        slots.lore[block] = [slots.add(_name(entries, i), t) for i, t in enumerate(texts)]
    for name, texts in inputs.outlets.items():
        entries = state.routed.outlets.get(name, [])
        slots.outlets[name] = [slots.add(_name(entries, i), t) for i, t in enumerate(texts)]
    for prompt in inputs.preset.prompts if inputs.preset else []:
        slots.preset.append(slots.add(f'preset prompt "{prompt.name or prompt.identifier}"',
                                      prompt.content))  # fmt: skip
    slots.rules = [slots.add(f"[mvu_update] rule {i + 1}", t)
                   for i, t in enumerate(inputs.mvu_rules)]  # fmt: skip
    slots.world = [None if e.disabled else slots.add(entry_name(e), e.content) for e in world]
    return slots


def _rendered(
    inputs: PromptInputs, slots: _Slots, out: Callable[[int | None, str], str]
) -> PromptInputs:
    """``inputs`` with each slot's text replaced by its output ("" when it failed)."""
    card = inputs.card
    for name, slot in slots.card.items():
        if slot is not None:
            card = replace(card, **{name: out(slot, getattr(card, name))})  # type: ignore[arg-type]
    depth = card.extensions.get("depth_prompt")
    if slots.depth is not None and isinstance(depth, dict):
        prompt = out(slots.depth, str(depth.get("prompt", "")))
        extensions = {**card.extensions, "depth_prompt": {**depth, "prompt": prompt}}
        card = replace(card, extensions=extensions)
    lore = {block: [out(s, t) for s, t in zip(found, getattr(inputs, block), strict=True)]
            for block, found in slots.lore.items()}  # fmt: skip
    return replace(
        inputs,
        card=card,
        persona=replace(inputs.persona, description=out(slots.persona, inputs.persona.description)),
        worldinfo1=lore["worldinfo1"],
        worldinfo2=lore["worldinfo2"],
        worldinfo3=lore["worldinfo3"],
        outlets={n: [out(s, t) for s, t in zip(slots.outlets[n], ts, strict=True)]
                 for n, ts in inputs.outlets.items()},  # fmt: skip
        preset=_preset(inputs.preset, slots.preset, out),
        mvu_rules=[out(s, t) for s, t in zip(slots.rules, inputs.mvu_rules, strict=True)],
    )


def _world_entries(state: TurnState, inputs: PromptInputs) -> list[LoreEntry]:
    """Every story entry with its macros expanded, when an active llm tool reads
    ``world_full`` (that tool's context must carry no macro or template code either).

    The macros run on copies (variables, a random stream of their own), so the prompt's
    own expansion is not drawn twice."""
    if not any("world_full" in tool.context for tool in state.active_tools):
        return []
    env = replace(macro_env(inputs), variables=dict(inputs.variables),
                  global_variables=dict(inputs.global_variables),
                  rng=random.Random(f"{state.story.seed}:{state.number}:world_full"))
    return [e if e.disabled or "{{" not in e.content else replace(e, content=expand(e.content, env))
            for e in state.story.entries]


def _lore_blocks(
    state: TurnState, inputs: PromptInputs
) -> list[tuple[str, list[str], list[LoreEntry]]]:
    routed = state.routed
    return [
        ("worldinfo1", inputs.worldinfo1, routed.worldinfo1),
        ("worldinfo2", inputs.worldinfo2, routed.worldinfo2),
        ("worldinfo3", inputs.worldinfo3, routed.worldinfo3),
    ]


def _name(entries: list[LoreEntry], index: int) -> str:
    return entry_name(entries[index]) if index < len(entries) else f"lore entry {index + 1}"


def _preset(
    preset: Preset | None, slots: list[int | None], out: Callable[[int | None, str], str]
) -> Preset | None:
    if preset is None:
        return None
    prompts = [replace(p, content=out(s, p.content)) for s, p in zip(slots, preset.prompts,
                                                                     strict=True)]
    return replace(preset, prompts=prompts)


def template_context(state: TurnState, inputs: PromptInputs) -> TemplateContext:
    """What this turn's templates read: variables, lore, names, the seed and the clock."""
    story = state.story
    clock = inputs.clock
    history = inputs.history
    return TemplateContext(
        local=dict(state.variables),
        global_=dict(state.global_variables),
        message=state.message_variables(),
        lore=[lore_data(e) for e in story.entries],
        user=story.persona.name or "User",
        char=story.card.name,
        last_user=inputs.user_input,
        last_char=history[-1].narrative if history else "",
        chat=_chat(inputs),
        seed=(story.seed * 1_000_003 + state.number) * 31 + state.rng_stream,  # fresh per try
        now_ms=int(clock.timestamp() * 1000) if clock else 0,
        lang=state.lang,
    )


def _chat(inputs: PromptInputs) -> list[tuple[str, str]]:
    """The chat as the extension sees it at generation: the greeting, each turn's input and
    reply, and this turn's input last."""
    messages: list[tuple[str, str]] = []
    for turn in inputs.history:
        if turn.user:
            messages.append(("user", turn.user))
        if turn.narrative:
            messages.append(("assistant", turn.narrative))
    if inputs.user_input:
        messages.append(("user", inputs.user_input))
    return messages
