"""SillyTavern Chat Completion presets (compat §5): prompts in character 100001's order.

The preset's ``prompt_order`` holds one list per character; Chat Completion uses the dummy id
100001. Without that list the older ``100000`` slot is used, and without either SillyTavern's
default order. Bare ``{identifier, enabled}`` items at the top level of ``prompt_order`` (a
malformed shape some community presets carry) belong to no character and are skipped, as
SillyTavern's lookup by ``character_id`` skips them. Order entries that point at unknown prompts
are dropped. Files of another kind (instruct or context templates, system prompts,
text-completion presets) are refused with one line naming their kind. Pre-prompt-manager
presets (``main_prompt``, ``nsfw_prompt``, ``jailbreak_prompt`` strings) become the
``main``/``nsfw``/``jailbreak`` prompts, except in the preset named ``Default`` (as
SillyTavern does).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from narrative_cli.errors import Phrase, PresetError, worded
from narrative_cli.load import files
from narrative_cli.load.fields import Fields, json_type

if TYPE_CHECKING:  # built here only when a preset is read: ``inspect`` without one imports
    from narrative_cli.domain_chat import Preset, PresetPrompt, Role  # this module regardless

CHARACTER_ID = 100001
FALLBACK_CHARACTER_ID = 100000
SAMPLER_KEYS = ("temperature", "frequency_penalty", "presence_penalty", "top_p", "top_k", "top_a",
                "min_p", "repetition_penalty", "openai_max_context", "openai_max_tokens", "seed",
                "n", "stream_openai", "reasoning_effort")
# Keys that mark a SillyTavern file of another kind than a Chat Completion preset.
OTHER_KINDS = ((("input_sequence", "output_sequence"), "preset.kind.instruct"),
               (("story_string",), "preset.kind.context"),
               (("temp", "rep_pen"), "preset.kind.text"),
               (("rep_pen_range",), "preset.kind.text"),
               (("name", "content"), "preset.kind.sysprompt"))  # catalog keys
DEFAULT_ORDER = (("main", True), ("worldInfoBefore", True), ("personaDescription", True),
                 ("charDescription", True), ("charPersonality", True), ("scenario", True),
                 ("enhanceDefinitions", False), ("nsfw", True), ("worldInfoAfter", True),
                 ("dialogueExamples", True), ("chatHistory", True), ("jailbreak", True))
LEGACY_PROMPTS = (("main_prompt", "main", "Main Prompt"),
                  ("nsfw_prompt", "nsfw", "Auxiliary Prompt"),
                  ("jailbreak_prompt", "jailbreak", "Post-History Instructions"))
PROMPT_FIELDS = frozenset({"identifier", "name", "role", "content", "system_prompt", "marker",
                           "enabled", "injection_position", "injection_depth", "injection_order",
                           "forbid_overrides"})
ROLES: tuple[Role, ...] = ("system", "user", "assistant")


def _role(f: Fields) -> Role:
    role = f.text("role", "system").strip().lower() or "system"
    for known in ROLES:
        if role == known:
            return known
    raise worded(f.error, "preset.role", where=f.where, role=repr(role))


def parse_prompt(obj: dict[str, Any], index: int, where: str) -> PresetPrompt:
    """One entry of the preset's ``prompts`` list."""
    identifier = obj.get("identifier")
    label = identifier if isinstance(identifier, str) and identifier else f"#{index}"
    f = Fields(obj, f"{where}: prompt {label}", PresetError)
    from narrative_cli.domain_chat import PresetPrompt

    return PresetPrompt(
        identifier=f.text("identifier") or f"prompt-{index}", name=f.text("name"), role=_role(f),
        content=f.text("content"), system_prompt=f.flag("system_prompt"),
        marker=f.flag("marker"), enabled=f.flag("enabled", True),
        injection_position=f.integer("injection_position", 0),
        injection_depth=f.integer("injection_depth", 4),
        injection_order=f.integer("injection_order", 100),
        forbid_overrides=f.flag("forbid_overrides"),
        extra={k: v for k, v in obj.items() if k not in PROMPT_FIELDS},
    )


def prompt_order(obj: dict[str, Any], where: str) -> list[tuple[str, bool]]:
    """``(identifier, enabled)`` pairs of character 100001 (else 100000), or the default order."""
    lists = obj.get("prompt_order")
    if lists is None:
        return list(DEFAULT_ORDER)
    if not isinstance(lists, list):
        raise worded(PresetError, "preset.order_list", where=where, got=json_type(lists))
    for character in (CHARACTER_ID, FALLBACK_CHARACTER_ID):
        for item in lists:
            if isinstance(item, dict) and str(item.get("character_id")) == str(character):
                return _order_pairs(item, f"{where}: prompt_order {character}")
    return list(DEFAULT_ORDER)


def _order_pairs(item: dict[str, Any], label: str) -> list[tuple[str, bool]]:
    pairs = []
    for entry in Fields(item, label, PresetError).objects("order"):
        e = Fields(entry, label, PresetError)
        pairs.append((e.text("identifier"), e.flag("enabled", True)))
    return pairs


def other_kind(obj: dict[str, Any]) -> str:
    """What a SillyTavern file that is not a Chat Completion preset is, as a catalog key
    ("" for a preset)."""
    if "prompts" in obj or "prompt_order" in obj:
        return ""
    for keys, kind in OTHER_KINDS:
        if all(k in obj for k in keys):
            return kind
    return ""


def _legacy_prompts(obj: dict[str, Any], where: str, name: str) -> list[PresetPrompt]:
    if name == "Default":
        return []
    f = Fields(obj, where, PresetError)
    from narrative_cli.domain_chat import PresetPrompt

    return [PresetPrompt(identifier=ident, name=label, content=f.text(key), system_prompt=True)
            for key, ident, label in LEGACY_PROMPTS if key in obj]


def parse_preset(obj: object, where: str, name: str) -> Preset:
    """A Preset from parsed preset JSON."""
    if not isinstance(obj, dict):
        raise worded(PresetError, "preset.not_object", where=where, got=json_type(obj))
    kind = other_kind(obj)
    if kind:
        raise worded(PresetError, "preset.other_kind", where=where, kind=Phrase(kind))
    samplers = {k: obj[k] for k in SAMPLER_KEYS if k in obj}
    if "prompts" in obj:
        raw = Fields(obj, where, PresetError).objects("prompts")
        defined = [parse_prompt(p, i, where) for i, p in enumerate(raw)]
    else:
        defined = _legacy_prompts(obj, where, name)
        if not defined and not samplers:
            raise worded(PresetError, "preset.empty", where=where)
    by_id = {p.identifier: p for p in defined}
    prompts = []
    for identifier, enabled in prompt_order(obj, where):
        if identifier in by_id:
            prompt = by_id.pop(identifier)
            prompt.enabled = enabled
            prompts.append(prompt)
    extra = {k: v for k, v in obj.items()
             if k not in samplers and k not in ("prompts", "prompt_order")}
    from narrative_cli.domain_chat import Preset

    return Preset(name=name, prompts=prompts, samplers=samplers, extra=extra, path=where)


def load_preset(path: files.PathLike) -> Preset:
    """Read a Chat Completion preset; its name is the file name without ``.json``."""
    where = os.fspath(path)
    obj = files.read_json(path, limit=files.MAX_JSON_BYTES, error=PresetError, kind="preset")
    return parse_preset(obj, where, Path(where).stem)
