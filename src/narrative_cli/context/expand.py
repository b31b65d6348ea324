"""Macros over a turn's inputs, and the preset split of the ``split`` preset mode.

:func:`apply_macros` expands card, persona, lore and preset text once per turn, in a fixed
order, so ``{{random}}``, ``{{roll}}`` and ``{{setvar}}`` draw from the session rng and the
variables dict the same way every time the same turn is built. History, the user's input and
model output are never expanded.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from narrative_cli.context.inputs import PromptInputs
from narrative_cli.context.macros import MacroEnv, env_for, expand
from narrative_cli.dataclass_copy import replaced
from narrative_cli.domain import Card
from narrative_cli.domain_chat import Preset, PresetPrompt

_KEPT_BUILTINS = ("nsfw", "jailbreak")  # built-in preset prompts the split mode keeps


@dataclass(frozen=True)
class PresetText:
    """The preset's text for the agents in ``split`` mode (all empty in ``none`` mode)."""

    system: str = ""  # the planning and writing system heads
    user: str = ""  # <user_preset> at the start of the writer's user message
    main: str = ""  # {{original}} for the card's system_prompt
    jailbreak: str = ""  # {{original}} for the card's post_history_instructions


def split_preset(preset: Preset | None, mode: str, card: Card) -> PresetText:
    """Sort the enabled preset prompts into system and user text (compat §5, original §8).

    Markers and SillyTavern's built-in prompts are skipped, except Auxiliary (``nsfw``) and
    Post-History Instructions (``jailbreak``). ``main`` is kept only as ``{{original}}`` of the
    card's system prompt; ``jailbreak`` likewise, when the card has its own instructions.
    """
    if mode != "split" or preset is None:
        return PresetText()
    system: list[str] = []
    user: list[str] = []
    main = jailbreak = ""
    for prompt in preset.enabled_prompts():
        text = prompt.content.strip()
        if prompt.identifier == "main":
            main = text
        if prompt.identifier == "jailbreak":
            jailbreak = text
            if card.post_history_instructions.strip():
                continue
        if not text or _skipped(prompt):
            continue
        (system if prompt.role == "system" else user).append(text)
    return PresetText("\n\n".join(system), "\n\n".join(user), main, jailbreak)


def _skipped(prompt: PresetPrompt) -> bool:
    return prompt.marker or (prompt.system_prompt and prompt.identifier not in _KEPT_BUILTINS)


def macro_env(inputs: PromptInputs) -> MacroEnv:
    """The macro environment of this turn's inputs."""
    return env_for(
        inputs.card,
        inputs.persona,
        lang=inputs.lang,
        outlets=inputs.outlets,
        variables=inputs.variables,
        global_variables=inputs.global_variables,
        message_variables=inputs.message_variables,
        last_user_message=inputs.user_input or _last(inputs, "user"),
        last_char_message=_last(inputs, "narrative"),
        rng=inputs.rng,
        clock=inputs.clock,
        pick_seed=inputs.pick_seed,
        input=inputs.user_input,
    )


def _last(inputs: PromptInputs, side: str) -> str:
    """The last finished turn's user or story text. When a turn is built the player's input
    is already the chat's last message, as in SillyTavern, so it is ``{{lastUserMessage}}``."""
    for turn in reversed(inputs.history):  # the newest first: a long story is not read whole
        text: str = getattr(turn, side)
        if text:
            return text
    return ""


def apply_macros(inputs: PromptInputs) -> PromptInputs:
    """A copy of ``inputs`` with macros expanded in card, persona, preset and lore text."""
    if inputs.macros_applied:
        return inputs
    env = macro_env(inputs)
    outlets = {name: [expand(t, env) for t in texts] for name, texts in inputs.outlets.items()}
    env.outlets = outlets
    preset = _expand_preset(inputs.preset, env) if inputs.preset_mode == "split" else None
    split = split_preset(preset, inputs.preset_mode, inputs.card)
    return replaced(
        inputs,
        outlets=outlets,
        preset=preset,
        card=_expand_card(inputs.card, env, split),
        persona=replace(inputs.persona, description=expand(inputs.persona.description, env)),
        worldinfo1=[expand(t, env) for t in inputs.worldinfo1],
        worldinfo2=[expand(t, env) for t in inputs.worldinfo2],
        worldinfo3=[expand(t, env) for t in inputs.worldinfo3],
        mvu_rules=[expand(t, env) for t in inputs.mvu_rules],
        macros_applied=True,
    )


def _expand_preset(preset: Preset | None, env: MacroEnv) -> Preset | None:
    if preset is None:
        return None
    prompts = [replace(p, content=expand(p.content, env)) for p in preset.prompts]
    return replace(preset, prompts=prompts)


def _expand_card(card: Card, env: MacroEnv, split: PresetText) -> Card:
    def with_original(text: str, original: str) -> str:
        env.original = original
        try:
            return expand(text, env)
        finally:
            env.original = ""

    extensions: dict[str, Any] = dict(card.extensions)
    depth = extensions.get("depth_prompt")
    if isinstance(depth, dict) and isinstance(depth.get("prompt"), str):
        extensions["depth_prompt"] = {**depth, "prompt": expand(depth["prompt"], env)}
    return replaced(
        card,
        description=expand(card.description, env),
        personality=expand(card.personality, env),
        scenario=expand(card.scenario, env),
        mes_example=expand(card.mes_example, env),
        system_prompt=with_original(card.system_prompt, split.main),
        post_history_instructions=with_original(card.post_history_instructions, split.jailbreak),
        extensions=extensions,
    )
