"""The writer's request shaped by a SillyTavern Chat Completion preset (compat §5.3).

When the user gives a preset, the writer's messages follow the preset's ``prompt_order`` the
way SillyTavern's prompt manager assembles a Chat Completion request:

- enabled prompts in order, each its own message with its role; disabled prompts stay out
  (a disabled ``main`` keeps its slot with no text, as SillyTavern keeps it);
- markers become our blocks: ``worldInfoBefore`` ← ``<worldinfo2>`` entries (constant, before
  the character), ``worldInfoAfter`` ← ``<worldinfo3>`` entries (after the character, and the
  keyword-activated ones), both through ``wi_format``; ``charDescription``,
  ``charPersonality`` / ``scenario`` through their formats, ``personaDescription``,
  ``dialogueExamples`` (``mes_example`` split on ``<START>``), ``chatHistory`` (the writer's
  window of turns, then the player's input); content markers missing from the order are
  appended after it;
- the card's ``system_prompt`` replaces ``main`` and its ``post_history_instructions`` replace
  ``jailbreak`` unless the preset prompt has ``forbid_overrides`` (``{{original}}`` is the
  preset's text, see ``expand``);
- absolute prompts (``injection_position`` 1) and the character's note go into the chat
  history at their depth and role (``inject``);
- ``squash_system_messages`` and ``names_behavior`` are honoured; ``wrap_in_quotes`` is not,
  as SillyTavern 1.13+ no longer applies it.

What the pipeline adds, and where (documented in docs/presets.md): the writer's own rules with
``<worldinfo1>`` as a system message right after ``main`` (where SillyTavern puts an
extension prompt "in prompt"), and the turn's guide, tool results and recalled text as one
system message just before the player's input.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

from narrative_cli.context.blocks import Block, Prompt, make_prompt, plain
from narrative_cli.context.examples import example_dialogues
from narrative_cli.context.expand import macro_env
from narrative_cli.context.inject import Injection, inject
from narrative_cli.context.inputs import HistoryTurn, PromptInputs
from narrative_cli.context.macros import MacroEnv, expand
from narrative_cli.domain_chat import AuthorsNote, Message, Preset, PresetPrompt, Role

CONTENT_MARKERS = ("worldInfoBefore", "worldInfoAfter", "charDescription", "charPersonality",
                   "scenario", "personaDescription")
# The built-in prompts SillyTavern sends; other built-ins without a marker are never sent.
SENT_BUILTINS = ("main", "nsfw", "jailbreak", "enhanceDefinitions")
Part = tuple[Role, list[Block], str]  # a message: role, blocks, and a name (examples)
_HISTORY = "\x00history"  # the name of the placeholder part the chat history replaces


def build_preset_writing(inputs: PromptInputs, agent: str, rules: list[Block],
                         turn_blocks: list[Block]) -> Prompt:
    """The writer's prompt in the preset's order. ``inputs`` has its macros applied."""
    preset = inputs.preset
    assert preset is not None
    parts: list[Part] = []
    injections: list[Injection] = []
    ruled = False
    note = _note(inputs)
    for prompt in _ordered(preset):
        if prompt.identifier == "main" and not ruled:
            before, after = _note_around_main(inputs, note)
            parts += [*before, *_slot(inputs, prompt, injections), *after]
            parts.append(("system", rules, ""))
            ruled = True
        elif prompt.enabled:
            parts += _slot(inputs, prompt, injections)
    if not ruled:
        parts.insert(0, ("system", rules, ""))
    if note is not None and note.position == 1:
        injections.append(Injection(note.text.strip(), note.depth, note.role, 100,
                                    extension=True))
    history = _history(inputs, injections, turn_blocks)
    if not any(part[2] == _HISTORY for part in parts):
        # No chatHistory in the order: SillyTavern would send no chat at all; the writer
        # still needs this turn's input, so only that goes last.
        parts.append(("system", [], _HISTORY))
        history = [("system", turn_blocks, ""),
                   ("user", [plain("user_input", _player_text(inputs))], "")]
    parts = [p for part in parts for p in (history if part[2] == _HISTORY else [part])]
    return _finish(agent, parts, preset)


def _note(inputs: PromptInputs) -> AuthorsNote | None:
    """The chat's Author's Note when it is sent this turn (its interval counts the player's
    messages, this turn's included, as SillyTavern counts them)."""
    note = inputs.authors_note
    return note if note is not None and note.active(inputs.turn) else None


def _note_around_main(inputs: PromptInputs, note: AuthorsNote | None
                      ) -> tuple[list[Part], list[Part]]:
    """An Author's Note placed "before main" (2) or "after main" (0): its own message."""
    if note is None or note.position not in (0, 2):
        return [], []
    part: Part = (note.role, [plain("authors_note", note.text.strip())], "")
    return ([part], []) if note.position == 2 else ([], [part])


def _ordered(preset: Preset) -> Iterator[PresetPrompt]:
    """The order's prompts, then content markers the order does not list (SillyTavern appends
    them after the listed prompts)."""
    listed = {p.identifier for p in preset.prompts}
    yield from preset.prompts
    for identifier in CONTENT_MARKERS:
        if identifier not in listed:
            yield PresetPrompt(identifier, marker=True, system_prompt=True)


def _slot(inputs: PromptInputs, prompt: PresetPrompt, injections: list[Injection]) -> list[Part]:
    """The messages of one prompt-order entry (absolute ones are queued for the history)."""
    trigger = prompt.extra.get("injection_trigger")
    if isinstance(trigger, list) and trigger and "normal" not in trigger:
        return []
    if prompt.identifier == "chatHistory":
        return [("system", [], _HISTORY)]
    if prompt.identifier == "dialogueExamples":
        return _examples(inputs)
    text = _content(inputs, prompt)
    if text is None:
        return []
    if prompt.injection_position == 1:
        injections.append(Injection(text, prompt.injection_depth, prompt.role,
                                    prompt.injection_order))
        return []
    return [(prompt.role, [plain(f"preset:{prompt.identifier}", text, stable=_stable(prompt))],
             "")]


def _stable(prompt: PresetPrompt) -> bool:
    return prompt.identifier != "worldInfoAfter"


def _content(inputs: PromptInputs, prompt: PresetPrompt) -> str | None:
    """The text of an entry; None for an entry SillyTavern does not send."""
    card, ident = inputs.card, prompt.identifier
    preset = inputs.preset
    assert preset is not None
    if ident == "main":
        own = card.system_prompt.strip()
        main = prompt.content if prompt.enabled else ""
        # SillyTavern 1.13+: a main prompt disabled for the character takes no card override
        overrides = own and not prompt.forbid_overrides and prompt.enabled
        return own if overrides else main.strip()
    if ident == "jailbreak":
        own = card.post_history_instructions.strip()
        return own if own and not prompt.forbid_overrides else prompt.content.strip()
    if ident == "worldInfoBefore":
        return _wi(preset, inputs.worldinfo2)
    if ident == "worldInfoAfter":
        return _wi(preset, inputs.worldinfo3)
    if ident == "charDescription":
        return card.description.strip()
    if ident == "charPersonality":
        return _formatted(inputs, "personality_format", "{{personality}}", card.personality)
    if ident == "scenario":
        return _formatted(inputs, "scenario_format", "{{scenario}}", card.scenario)
    if ident == "personaDescription":
        return inputs.persona.description.strip()
    if prompt.marker or (prompt.system_prompt and ident not in SENT_BUILTINS):
        return None
    return prompt.content.strip()


def setting(preset: Preset, key: str, default: str) -> str:
    value = preset.extra.get(key, default)
    return value if isinstance(value, str) else default


def _wi(preset: Preset, entries: list[str]) -> str:
    """SillyTavern joins the activated entries with newlines, then applies ``wi_format``."""
    text = "\n".join(e.strip() for e in entries if e.strip())
    form = setting(preset, "wi_format", "{0}")
    if not text or not form.strip():
        return text
    return form.replace("{0}", text)


def _formatted(inputs: PromptInputs, key: str, default: str, field: str) -> str:
    assert inputs.preset is not None
    form = setting(inputs.preset, key, default)
    if not field.strip():
        return ""
    if not form:  # SillyTavern 1.13+ sends the field itself when its format is empty
        return field.strip()
    return expand(form, _format_env(inputs)).strip()


def _macro(inputs: PromptInputs, key: str, default: str) -> str:
    assert inputs.preset is not None
    return expand(setting(inputs.preset, key, default), _format_env(inputs))


def _format_env(inputs: PromptInputs) -> MacroEnv:
    """Macros for the preset's format strings. The prompt may be built several times a turn
    (budget fitting), so these draw from their own fixed rng, never the session's."""
    env = macro_env(inputs)
    env.rng = random.Random(0)
    return env


def _examples(inputs: PromptInputs) -> list[Part]:
    """Each ``<START>`` block: the example-chat note, then one system message per turn named
    ``example_user`` / ``example_assistant``; a block without turns sends the note alone."""
    header = _macro(inputs, "new_example_chat_prompt", "[Example Chat]")
    parts: list[Part] = []
    for index, block in enumerate(example_dialogues(inputs.card.mes_example)):
        turns = example_turns(block, inputs.persona.name, inputs.card.name)
        # SillyTavern 1.13+ sends the header of a block without turns too (1.12 dropped it)
        parts.append(("system", [plain("example_chat", header, stable=True)], ""))
        for n, (name, text) in enumerate(turns):
            parts.append(("system", [plain(f"example:{index}-{n}", text, stable=True)], name))
    return parts


def example_turns(block: str, user: str, char: str) -> list[tuple[str, str]]:
    """The turns of one example block. A line starting ``<user>:`` or ``<char>:`` starts a
    turn; other lines join the current one (lines before the first speaker join the first
    turn); the speaker's first ``Name:`` is removed, as SillyTavern parses examples."""
    turns: list[tuple[str, str]] = []
    lines: list[str] = []
    speaker = ""
    for line in block.split("\n"):
        now = "user" if line.startswith(f"{user}:") else "char" if line.startswith(
            f"{char}:") else ""
        if now and speaker and now != speaker:
            turns.append(_example_turn(speaker, lines, user, char))
            lines = []
        speaker = now or speaker
        lines.append(line)
    if speaker:
        turns.append(_example_turn(speaker, lines, user, char))
    return turns


def _example_turn(speaker: str, lines: list[str], user: str, char: str) -> tuple[str, str]:
    name = user if speaker == "user" else char
    text = "\n".join(lines).replace(f"{name}:", "", 1).strip()
    return ("example_user" if speaker == "user" else "example_assistant", text)


def _history(inputs: PromptInputs, injections: list[Injection],
             turn_blocks: list[Block]) -> list[Part]:
    """``[Start a new Chat]``, the window's turns and the input, with the in-chat injections."""
    from narrative_cli.context import parts as block_parts

    turns = block_parts.window(inputs, inputs.writing_window)
    chat: list[Message] = list(_chat_messages(inputs, turns))
    player = _chat_message(inputs, "user", inputs.user_input.strip())
    chat.append(player)
    note = inputs.card.depth_prompt
    if note and note.prompt.strip():
        injections.append(Injection(note.prompt.strip(), note.depth, note.role, 100,
                                    extension=True))
    messages = inject(chat, injections)
    preset = inputs.preset
    assert preset is not None
    out: list[Part] = [("system", [plain("new_chat", _macro(inputs, "new_chat_prompt",
                                                             "[Start a new Chat]"),
                                         stable=True)], "")]
    for m in messages:
        if m is player:
            out.append(("system", turn_blocks, ""))
            text = m.content if inputs.user_input.strip() else _player_text(inputs)
            out.append(("user", [plain("user_input", text)], m.name))
        else:
            out.append((m.role, [plain("chat_history", m.content, stable=True)], m.name))
    return out


def _player_text(inputs: PromptInputs) -> str:
    """The player's input; an empty one is sent as the preset's ``send_if_empty``."""
    assert inputs.preset is not None
    return inputs.user_input.strip() or setting(inputs.preset, "send_if_empty", "")


def _chat_messages(inputs: PromptInputs, turns: list[HistoryTurn]) -> Iterator[Message]:
    for turn in turns:
        if turn.user.strip():
            yield _chat_message(inputs, "user", turn.user.strip())
        if turn.narrative.strip():
            yield _chat_message(inputs, "assistant", turn.narrative.strip())


_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _chat_message(inputs: PromptInputs, role: Role, text: str) -> Message:
    """A chat message as ``names_behavior`` sends it: 2 prefixes ``Name: `` to the text, 1
    sends the speaker in the API's ``name`` field (sanitised), -1 and 0 (outside group chats)
    send neither. ``wrap_in_quotes`` is not applied: SillyTavern 1.13+ no longer reads it
    (the story names it when it opens)."""
    assert inputs.preset is not None
    speaker = inputs.persona.name if role == "user" else inputs.card.name
    behaviour = inputs.preset.extra.get("names_behavior", 0)
    if behaviour == 2:
        text = f"{speaker}: {text}"
    name = ""
    if behaviour == 1 and speaker:
        name = speaker if _NAME.match(speaker) else re.sub(r"[^a-zA-Z0-9_-]", "_", speaker)[:64]
    return Message(role, text, name)


def _finish(agent: str, parts: list[Part], preset: Preset) -> Prompt:
    """Names, squashing and empty messages, as SillyTavern's last steps do."""
    prompt = make_prompt(agent, [(role, blocks) for role, blocks, _ in parts])
    names = [name for _, blocks, name in parts if any(not b.empty for b in blocks)]
    for message, name in zip(prompt.messages, names, strict=True):
        message.name = name
    if preset.extra.get("squash_system_messages") is True:
        _squash(prompt)
    return prompt


_UNSQUASHED = ("new_chat", "example_chat")


def _squash(prompt: Prompt) -> None:
    """Merge runs of unnamed system messages with ``\\n`` (the new-chat and example-chat notes
    stay apart), as SillyTavern's ``squash_system_messages`` does."""
    messages: list[Message] = []
    blocks: list[list[Block]] = []
    for message, message_blocks in zip(prompt.messages, prompt.blocks, strict=True):
        mergeable = (message.role == "system" and not message.name
                     and message_blocks[0].name not in _UNSQUASHED)
        if (mergeable and messages and messages[-1].role == "system" and not messages[-1].name
                and blocks[-1][0].name not in _UNSQUASHED):
            messages[-1] = Message("system", f"{messages[-1].content}\n{message.content}")
            blocks[-1] = blocks[-1] + message_blocks
            continue
        messages.append(message)
        blocks.append(list(message_blocks))
    prompt.messages, prompt.blocks = messages, blocks
    prompt.stable_boundary = None
