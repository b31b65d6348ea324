"""The blocks the agents' prompts are made of, one function per block.

Stable blocks (preset heads, ``<character>``, ``<worldinfo1/2>``, ``<user_persona>``, the
summary of the turns before the window, ``<recent_turns>``) change only when the story's setup
changes or the n+m window cuts; volatile blocks change every turn. Every function returns a
block even when it is empty: ``make_prompt`` drops empty blocks.
"""

from __future__ import annotations

import operator
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from narrative_cli.agents.guide import writing_guide_text
from narrative_cli.agents.templates import fill, label
from narrative_cli.context.blocks import Block, plain, tagged
from narrative_cli.context.examples import example_dialogues
from narrative_cli.context.expand import PresetText, split_preset
from narrative_cli.context.inputs import (
    PRESET_MODES,
    HistoryTurn,
    PromptInputs,
    SummaryEntry,
    WindowSettings,
)
from narrative_cli.context.window import stable_window, trim_oldest, window_first
from narrative_cli.domain import Card
from narrative_cli.errors import ConfigError
from narrative_cli.state.chapters import Chapter, visible_chapters

ENTRY_SEPARATOR = "\n\n"
EXAMPLE_CHAT = "[Example Chat]"


def preset_text(inputs: PromptInputs) -> PresetText:
    """The preset split for this turn; ``none`` mode is simply empty text."""
    if inputs.preset_mode not in PRESET_MODES:
        raise ConfigError(f"preset_mode must be none or split, got {inputs.preset_mode!r}")
    return split_preset(inputs.preset, inputs.preset_mode, inputs.card)


def preset_system(inputs: PromptInputs) -> Block:
    return plain("preset_system", preset_text(inputs).system, stable=True)


def user_preset(inputs: PromptInputs) -> Block:
    return tagged("user_preset", preset_text(inputs).user, stable=True)


def card_system_prompt(inputs: PromptInputs) -> Block:
    """The card's own system prompt (``{{original}}`` already replaced by the preset's main)."""
    return plain("card_system_prompt", inputs.card.system_prompt.strip(), stable=True)


def worldinfo(number: int, entries: list[str], *, stable: bool) -> Block:
    text = ENTRY_SEPARATOR.join(e.strip() for e in entries if e.strip())
    return tagged(f"worldinfo{number}", text, stable=stable)


def character(inputs: PromptInputs, *, examples: bool) -> Block:
    """``<character>``: name, description, personality, scenario (and example dialogue).

    Kept by everything it is made of (the card after macros is a new object every turn, its
    texts mostly the same): the planner's and the writer's prompts ask every turn (#17,
    session nine)."""
    card, lang = inputs.card, inputs.lang
    key = (lang, examples, card.name, card.description, card.personality, card.scenario,
           card.mes_example if examples else "")  # fmt: skip
    made = _CHARACTERS.get(key)
    if made is None:
        made = _character(inputs.card, lang, examples)
        if len(_CHARACTERS) >= 8:
            _CHARACTERS.clear()
        _CHARACTERS[key] = made
    return made


_CHARACTERS: dict[tuple[str, bool, str, str, str, str, str], Block] = {}


def _character(card: Card, lang: str, examples: bool) -> Block:
    fields = [("character.description", card.description)]
    fields += [("character.personality", card.personality), ("character.scenario", card.scenario)]
    if examples:
        fields.append(("character.examples", example_chats(card.mes_example)))
    lines = [label(lang, "character.name", text=card.name.strip())]
    lines += [label(lang, key, text=value.strip()) for key, value in fields if value.strip()]
    return tagged("character", "\n".join(lines) if card.name.strip() else "", stable=True)


def example_chats(text: str) -> str:
    """``mes_example`` as SillyTavern sends it: split on ``<START>``, each example dialogue
    after its ``[Example Chat]`` line (the default ``new_example_chat_prompt``)."""
    return "\n\n".join(f"{EXAMPLE_CHAT}\n{block}" for block in example_dialogues(text.strip())
                         if block)  # fmt: skip
def cast(inputs: PromptInputs) -> Block:
    """``<character>`` of a group scene: every member's card, one after another."""
    lang, cards = inputs.lang, inputs.cast
    members = []
    for card in cards:
        fields = [("character.description", card.description),
                  ("character.personality", card.personality),
                  ("character.scenario", card.scenario)]
        lines = [label(lang, "character.name", text=card.name.strip())]
        lines += [label(lang, key, text=value.strip()) for key, value in fields if value.strip()]
        members.append("\n".join(lines))
    return tagged("character", "\n\n".join(members), stable=True)


def scene_so_far(inputs: PromptInputs) -> Block:
    """``<scene_so_far>``: what the earlier speakers of this group turn said."""
    return tagged("scene_so_far", inputs.scene_so_far.strip())


def persona(inputs: PromptInputs) -> Block:
    """``<user_persona>``: the user's name and, when there is one, their description."""
    lang, name = inputs.lang, inputs.persona.name.strip()
    parts = [label(lang, "persona.name", text=name)] if name else []
    description = inputs.persona.description.strip()
    if description:
        parts.append(label(lang, "persona.description", text=description))
    return tagged("user_persona", "\n\n".join(parts), stable=True)


def window(inputs: PromptInputs, settings: WindowSettings) -> list[HistoryTurn]:
    """The finished turns this agent sees, after any budget trim of the oldest ones."""
    turns = stable_window(inputs.history, settings.n, settings.m)
    return trim_oldest(turns, inputs.window_trim)


def recent_turns(turns: list[HistoryTurn], lang: str) -> Block:
    """``<recent_turns>``: ``[轮N] 用户: …`` / ``[轮N] AI: …``, turns apart by a blank line."""
    rendered = []
    for turn in turns:
        user, ai = turn_lines(turn, lang)
        rendered.append(ai if user is None else user + "\n" + ai)
    return tagged("recent_turns", "\n\n".join(rendered), stable=True)


def turn_lines(turn: HistoryTurn, lang: str) -> tuple[str | None, str]:
    """A past turn's ``[轮N] 用户: …`` line (None without a user message) and its
    ``[轮N] AI: …`` line. Kept by the turn's value: the windows of consecutive turns, the
    planner's and the writer's, show mostly the same turns, and labelling each anew was most
    of building them (#17, session nine). A turn is frozen: equal turns give equal lines."""
    key = (lang, turn)
    known = _TURN_LINES.get(key)
    if known is None:
        user = label(lang, "turn.user", n=turn.number, text=turn.user) if turn.user else None
        known = (user, label(lang, "turn.ai", n=turn.number, text=turn.narrative))
        if len(_TURN_LINES) >= _TURN_LINES_KEPT:
            _TURN_LINES.clear()
        _TURN_LINES[key] = known
    return known


_TURN_LINES: dict[tuple[str, HistoryTurn], tuple[str | None, str]] = {}
_TURN_LINES_KEPT = 64  # the windows of a turn or two (a window is up to n+m turns)


def story_summary(
    inputs: PromptInputs, turns: list[HistoryTurn] | None, settings: WindowSettings | None = None
) -> Block:
    """``<story_summary>``. Given the window, only the turns before its first turn.

    The window shows its own turns in full, so their summaries would repeat them; leaving them
    out keeps this block unchanged until the window cuts, and the prompt's cached prefix with it.
    Chapters and arcs (issue #17) replace the entries they fold; an agent with a window sees a
    fold only from its window's latest cut on (``settings``), so it too changes only at a cut.
    """
    first = (turns[0].number if turns else inputs.turn) if turns is not None else None
    if not inputs.chapters:
        return tagged("story_summary", "\n".join(filter(None, _lines(inputs, first))), stable=True)
    shown_by = last_cut(inputs, settings) if turns is not None and settings else inputs.turn
    return tagged("story_summary", _folded_text(inputs, first, shown_by), stable=True)


@dataclass(frozen=True)
class _Folded:
    """A folded ``<story_summary>`` text and everything it was made from: the language, the
    window's first turn, the turn its folds are shown by, the folds (compared by identity:
    their turns are printed) and the entries before ``first`` (equal frozen entries: only
    their texts are printed, their turns only compared)."""

    lang: str
    first: int | None
    shown_by: int
    chapters: list[Chapter]
    entries: list[SummaryEntry]
    text: str


# The last folded texts made. A window's block changes only at its cuts, so the next turn's
# prompt asks for the very text again (the entries after ``first`` are not in it): the
# planner's and the writers' windows (an agent without one shows every entry: new every turn).
# Picking the entries and folds and joining their lines each time was 1.6% of a replayed
# turn (#17, session eight).
_FOLDED: list[_Folded] = []


def _folded_text(inputs: PromptInputs, first: int | None, shown_by: int) -> str:
    """``<story_summary>``'s text with folds (see ``story_summary``), remembered."""
    entries, chapters, lang = inputs.summaries, inputs.chapters, inputs.lang
    if first is None:  # every entry (an agent without a window): new every turn
        return _fold_lines(entries, chapters, lang, None, shown_by)
    turns = _entry_turns(entries)
    if turns is not None:
        before = entries[: bisect_left(turns, first)]
    else:
        before = [e for e in entries if e.turn < first]
    for made in reversed(list(_FOLDED)):
        if (
            made.first == first
            and made.shown_by == shown_by
            and made.lang == lang
            and len(made.chapters) == len(chapters)
            and all(map(operator.is_, made.chapters, chapters))
            and made.entries == before
        ):
            return made.text
    text = _fold_lines(entries, chapters, lang, first, shown_by)
    _FOLDED.append(_Folded(lang, first, shown_by, list(chapters), list(before), text))
    del _FOLDED[:-4]
    return text


def _fold_lines(
    entries: list[SummaryEntry], chapters: list[Chapter], lang: str, first: int | None,
    shown_by: int,
) -> str:
    """The shown folds and the entries before ``first`` none of them covers, in turn order."""
    shown = visible_chapters(chapters, shown_by)
    items = [(c.first, c.labelled(lang)) for c in shown if first is None or c.last < first]
    items += [(e.turn, e.text.strip()) for e in _unfolded(entries, shown, first)]
    items.sort(key=lambda item: item[0])
    return "\n".join(line for _, line in items if line)


def _lines(inputs: PromptInputs, first: int | None) -> list[str]:
    """The stripped texts of the summary entries before turn ``first`` (None: all)."""
    entries = inputs.summaries
    texts, turns = _entry_texts(entries)
    if first is None:
        return texts
    if turns is not None:  # in turn order: those before ``first`` are the first ones
        return texts[: bisect_left(turns, first)]
    return [text for text, e in zip(texts, entries, strict=True) if e.turn < first]


@dataclass(frozen=True)
class _Read:
    """An entry list read (a copy), its entries' stripped texts, and their turns when they
    are in turn order."""

    entries: list[SummaryEntry]
    texts: list[str]
    turns: list[int] | None


# The last entry lists read: every prompt of a turn reads the same entries, and the next
# turn's are the same with a line more. Stripping each of 500 entries for each of four
# prompts a turn grew with the story (#17, session six).
_READ: list[_Read] = []


def _entry_texts(entries: list[SummaryEntry]) -> tuple[list[str], list[int] | None]:
    """Each entry's text stripped, and the entries' turns when in order (do not change
    either list); entries that start with those of a list read before extend its texts."""
    base: _Read | None = None
    for read in reversed(_READ):
        held = read.entries
        if len(held) <= len(entries) and held == entries[: len(held)]:  # equal entries (C)
            if len(held) == len(entries):
                return read.texts, read.turns
            base = read
            break
    done = len(base.entries) if base is not None else 0
    added = entries[done:]
    texts = (base.texts if base else []) + [e.text.strip() for e in added]
    turns: list[int] | None = [e.turn for e in added]
    if base is not None:
        turns = None if base.turns is None else base.turns + (turns or [])
    if turns is not None and not all(map(operator.le, turns[max(done - 1, 0) :],
                                         turns[max(done - 1, 0) + 1 :])):  # fmt: skip
        turns = None
    _READ.append(_Read(list(entries), texts, turns))
    del _READ[:-4]
    return texts, turns


def _unfolded(
    entries: list[SummaryEntry], shown: list[Chapter], first: int | None
) -> list[SummaryEntry]:
    """The entries before turn ``first`` (None: all) that no fold of ``shown`` (in story order)
    covers: an entry is folded when the last fold starting at or before its turn reaches it.

    Entries are in turn order (a store keeps them so), so the ones shown are found between
    the folds by bisection, not by a look at every entry of the story each prompt."""
    turns = _entry_turns(entries)
    if turns is None:  # not in turn order (built by hand): look at each one
        starts, ends = [c.first for c in shown], [c.last for c in shown]

        def folded(turn: int) -> bool:
            at = bisect_right(starts, turn) - 1
            return at >= 0 and turn <= ends[at]

        return [e for e in entries if (first is None or e.turn < first) and not folded(e.turn)]
    limit = len(entries) if first is None else bisect_left(turns, first)
    spans: list[tuple[int, int | None]] = [(0, shown[0].first if shown else None)]
    for at, fold in enumerate(shown):  # between this fold's start and the next one's
        end = shown[at + 1].first if at + 1 < len(shown) else None
        spans.append((max(fold.last + 1, fold.first), end))
    picked: list[SummaryEntry] = []
    for low, high in spans:
        start = bisect_left(turns, low)
        stop = limit if high is None else min(bisect_left(turns, high), limit)
        picked += entries[start:stop]
    return picked


# The turns of each story's last entry list read (every prompt of a turn reads the same list;
# the next turn's is the same with a line more), and whether they are in order; filed by the
# list's first entry (the very object: a store's lines are its parent's), the list held so
# the ids stay their own. The turns list is this memo's own and grows in place (#17: no list
# as long as the story made anew every turn, one per story held, not one per prompt read).
_TURNS: dict[int, tuple[list[SummaryEntry], list[int] | None]] = {}
_TURNS_KEPT = 4  # stories (a few logs replayed at once)


def _entry_turns(entries: list[SummaryEntry]) -> list[int] | None:
    """The entries' turns, None when they are not in turn order; a list that starts with the
    entries of the one read before for the story (the last turn's, and one line more)
    extends its turns."""
    key = id(entries[0]) if entries else 0
    found = _TURNS.get(key)
    if found is not None:
        held, known = found
        if held is entries:
            return known
        if known is not None and len(held) <= len(entries) and (
            all(map(operator.is_, held, entries)) or held == entries[: len(held)]
        ):
            added = [e.turn for e in entries[len(held) :]]
            tail = known[-1:] + added  # the new turns in order after the last known one
            ordered = all(map(operator.le, tail, tail[1:]))
            if ordered:
                known += added
            _file(key, entries, known if ordered else None)
            return known if ordered else None
    turns = [e.turn for e in entries]
    ordered = all(map(operator.le, turns, turns[1:]))
    _file(key, entries, turns if ordered else None)
    return turns if ordered else None


def _file(key: int, entries: list[SummaryEntry], turns: list[int] | None) -> None:
    _TURNS.pop(key, None)
    _TURNS[key] = (entries, turns)  # the newest last
    while len(_TURNS) > _TURNS_KEPT:
        del _TURNS[next(iter(_TURNS))]


def last_cut(inputs: PromptInputs, settings: WindowSettings) -> int:
    """The turn at which this window last cut (or began): the turn whose prompt first had
    the window's current first turn. Turns are numbered consecutively."""
    length = len(inputs.history)
    first = window_first(length, settings.n, settings.m)
    began = settings.n + first if first > 0 else 0  # the history length at that cut
    return inputs.turn - (length - began)


def fold_source(inputs: PromptInputs) -> Block:
    """``<summary_to_fold>``: the labelled entries (or chapters) the compaction agent folds."""
    fold = inputs.fold
    return tagged("summary_to_fold", "\n".join(fold.lines) if fold else "")


def fold_request(inputs: PromptInputs) -> Block:
    """The compaction agent's closing: which turns, chapter or arc, and the length limit
    (characters in Chinese, about one per token; words in English, about 0.7 per token)."""
    fold = inputs.fold
    if fold is None:
        return plain("closing", "")
    zh = inputs.lang == "zh"
    limit = fold.limit_tokens if zh else max(int(fold.limit_tokens * 0.7), 20)
    text = fill(inputs.lang, "compaction_closing", first=fold.first, last=fold.last,
                kind=fold.kind(inputs.lang), limit=limit)
    return plain("closing", text)


def character_note(inputs: PromptInputs) -> Block:
    """The card's depth prompt (character's note). A writer's request puts it in the chat at
    its depth and role (``context.chat_notes``); this block is what other readers see."""
    note = inputs.card.depth_prompt
    return tagged("character_note", note.prompt.strip() if note else "")


def authors_note(inputs: PromptInputs) -> Block:
    """The chat's Author's Note on the turns its interval picks. A writer's request puts it at
    its position, depth and role (``context.chat_notes``)."""
    note = inputs.authors_note
    active = note is not None and note.active(inputs.turn)
    return tagged("authors_note", note.text.strip() if note and active else "")


def text_recall(inputs: PromptInputs) -> Block:
    """``<text_recall>``: the recalled turns' original text, ``[第N轮]`` then the text."""
    parts = [
        label(inputs.lang, "recall.turn", n=t.number, text=t.narrative.strip())
        for t in inputs.text_recall
        if t.narrative.strip()
    ]
    return tagged("text_recall", "\n\n".join(parts))


def writing_guide(inputs: PromptInputs) -> Block:
    return tagged("writing_guide", writing_guide_text(inputs.plan, inputs.lang))


def tool_results(inputs: PromptInputs) -> Block:
    text = inputs.tool_results_text.strip()
    if text.startswith("<tool_results>") and text.endswith("</tool_results>"):
        text = text[len("<tool_results>") : -len("</tool_results>")].strip()
    return tagged("tool_results", text)


def state_summary(inputs: PromptInputs) -> Block:
    return tagged("state_summary", inputs.state_summary.strip())


def user_input(inputs: PromptInputs) -> Block:
    return tagged("user_input", inputs.user_input.strip())


def post_history_instructions(inputs: PromptInputs) -> Block:
    """The card's post-history instructions, near the end of the writer's prompt (as ST does)."""
    text = inputs.card.post_history_instructions.strip()
    return tagged("post_history_instructions", text)
