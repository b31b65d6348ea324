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
from dataclasses import replace

from narrative_cli.context.ejs import has_template
from narrative_cli.context.expand import macro_env
from narrative_cli.context.inputs import PromptInputs
from narrative_cli.context.macro_scan import entry_name
from narrative_cli.context.macros import expand
from narrative_cli.domain import LoreEntry, Preset
from narrative_cli.pipeline.turn import TurnState
from narrative_cli.tools.templates import (
    LoreData,
    TemplateContext,
    TemplateJob,
    render_templates,
)

_CARD_FIELDS = ("description", "personality", "scenario", "mes_example", "system_prompt",
                "post_history_instructions")  # fmt: skip


class _Jobs:
    """Texts with templates, gathered in prompt order, and where each result goes back."""

    def __init__(self) -> None:
        self.jobs: list[TemplateJob] = []

    def add(self, name: str, text: str) -> int | None:
        if not has_template(text):
            return None
        self.jobs.append(TemplateJob(name, text))
        return len(self.jobs) - 1


def apply_templates(state: TurnState, inputs: PromptInputs) -> PromptInputs:
    """``inputs`` with every template rendered (macros must already be applied)."""
    jobs = _Jobs()
    card_slots = {name: jobs.add(f"card field {name}", getattr(inputs.card, name))
                  for name in _CARD_FIELDS}  # fmt: skip
    depth = inputs.card.extensions.get("depth_prompt")
    depth_text = depth.get("prompt") if isinstance(depth, dict) else None
    depth_slot = jobs.add("card field depth_prompt", depth_text) if isinstance(
        depth_text, str) else None  # fmt: skip
    persona_slot = jobs.add("persona", inputs.persona.description)
    lore_slots = {
        block: [jobs.add(_name(entries, i), text) for i, text in enumerate(texts)]
        for block, texts, entries in _lore_blocks(state, inputs)
    }
    outlet_slots = {
        name: [jobs.add(_name(state.routed.outlets.get(name, []), i), t) for i, t in enumerate(ts)]
        for name, ts in inputs.outlets.items()
    }
    preset_slots = [jobs.add(f'preset prompt "{p.name or p.identifier}"', p.content)
                    for p in (inputs.preset.prompts if inputs.preset else [])]  # fmt: skip
    rule_slots = [jobs.add(f"[mvu_update] rule {i + 1}", t) for i, t in enumerate(inputs.mvu_rules)]
    world = _world_entries(state, inputs)
    world_slots = [None if e.disabled else jobs.add(entry_name(e), e.content) for e in world]
    if world and not any(slot is not None for slot in world_slots):
        state.world_entries = world
    if not jobs.jobs:
        return inputs
    with state.stage("templates"):
        batch = render_templates(jobs.jobs, template_context(state, inputs))
    for warning in batch.warnings:
        state.warn("templates", warning)
    state.variables.clear()
    state.variables.update(batch.local)
    state.global_variables = batch.global_
    if world:
        state.world_entries = [replace(e, content=batch.outputs[slot] or "") if slot is not None
                               else e for e, slot in zip(world, world_slots, strict=True)]

    def out(slot: int | None, text: str) -> str:
        return text if slot is None else batch.outputs[slot] or ""

    card = inputs.card
    for field_name, slot in card_slots.items():
        if slot is not None:
            card = replace(card, **{field_name: out(slot, getattr(card, field_name))})  # type: ignore[arg-type]
    if depth_slot is not None and isinstance(depth, dict):
        extensions = dict(card.extensions)
        extensions["depth_prompt"] = {**depth, "prompt": out(depth_slot, str(depth_text))}
        card = replace(card, extensions=extensions)
    lore = {b: [out(s, t) for s, t in zip(lore_slots[b], getattr(inputs, b), strict=True)]
            for b in lore_slots}  # fmt: skip
    return replace(
        inputs,
        card=card,
        persona=replace(inputs.persona, description=out(persona_slot, inputs.persona.description)),
        worldinfo1=lore["worldinfo1"],
        worldinfo2=lore["worldinfo2"],
        worldinfo3=lore["worldinfo3"],
        outlets={n: [out(s, t) for s, t in zip(outlet_slots[n], ts, strict=True)]
                 for n, ts in inputs.outlets.items()},  # fmt: skip
        preset=_preset(inputs.preset, preset_slots, out),
        mvu_rules=[out(s, t) for s, t in zip(rule_slots, inputs.mvu_rules, strict=True)],
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
        lore=[_lore_data(e) for e in story.entries],
        user=story.persona.name or "User",
        char=story.card.name,
        last_user=inputs.user_input,
        last_char=history[-1].narrative if history else "",
        seed=(story.seed * 1_000_003 + state.number) * 31 + state.rng_stream,  # fresh per try
        now_ms=int(clock.timestamp() * 1000) if clock else 0,
        lang=state.lang,
    )


def _lore_data(entry: LoreEntry) -> LoreData:
    return LoreData(
        uid=entry.uid,
        comment=entry.comment,
        content=entry.content,
        world=entry.source,
        disable=entry.disabled,
        constant=entry.constant,
        key=tuple(entry.keys),
    )
