"""How many old turns one ``catch_up`` call reads: batches fitted to the model's context.

A batch is the turns one call reads. Without a known context window (a remote profile left at
the default ``context_size``) a batch holds up to ``BATCH_TURNS`` turns and about
``BATCH_TOKENS`` tokens of old text. When the profile states its window (every local profile:
the bundled model has 8,192 tokens per slot; a remote one with ``context_size`` set), the
batch's text must also fit what is left of it after the reply limit and the prompt's fixed
part (the rules, the character, the summary and state caught up so far: measured on the real
prompt, not guessed), so no call overflows. The reply holds one item per turn, so a short
reply limit also means fewer turns a call (about ``REPLY_TOKENS_PER_TURN`` each).

When the window is known, one message longer than the whole room is cut to fit (its beginning
and its end, with a note in the text saying how much was left out) and reported, never a
failure; without one, a long message is sent whole in a batch of its own, as before.

``next_batch`` plans the batch to run now from the state reached so far (what ``run`` uses,
so a replay plans the same batches); ``plan_batches`` plans them all ahead from the starting
state for the cost estimate, allowing for the summary lines the earlier batches add.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from narrative_cli.agents.table import agent as agent_spec
from narrative_cli.agents.templates import label
from narrative_cli.context.blocks import Prompt
from narrative_cli.context.inputs import HistoryTurn
from narrative_cli.context.parts import recent_turns
from narrative_cli.context.recall import clip_to_tokens
from narrative_cli.errors import BadInput
from narrative_cli.i18n import t
from narrative_cli.pipeline.backendset import BackendSet
from narrative_cli.regex.prompt import prompt_text
from narrative_cli.tokens import estimate_tokens

AGENT = "catch_up"
BATCH_TURNS = 8  # turns per call at most (the reply lists one item per turn)
BATCH_TOKENS = 6000  # about this many tokens of old text per call
REPLY_TOKENS_PER_TURN = 120  # what one turn's item of the reply takes, about
SUMMARY_TOKENS_PER_TURN = 40  # what one turn adds to <story_summary>, about (the estimate)
MIN_TEXT_TOKENS = 64  # less room than this for old text: the context is too small to catch up


@dataclass(frozen=True)
class PastTurn:
    """One imported turn: what the user wrote, the reply's story text and its MVU block."""

    number: int
    user_input: str
    narrative: str
    mvu_block: str = ""
    cut: bool = False  # shortened to fit the model's context (see ``fit_turn``)


@dataclass(frozen=True)
class Room:
    """What one catch_up call may hold: the model's context window (None: not stated) and
    the reply limit each call asks for."""

    context: int | None
    reply: int

    @property
    def max_turns(self) -> int:
        return max(1, min(BATCH_TURNS, self.reply // REPLY_TOKENS_PER_TURN))

    def text_room(self, fixed_tokens: int) -> int:
        """Tokens of old text a batch may carry beside a fixed part of ``fixed_tokens``."""
        if self.context is None:
            return BATCH_TOKENS
        return min(BATCH_TOKENS, self.context - self.reply - fixed_tokens)

    def fits(self, prompt_tokens: int) -> bool:
        return self.context is None or prompt_tokens + self.reply <= self.context


def room_for(backends: BackendSet) -> Room:
    """The catch_up agent's room under the configured (or recorded) profile; nothing is
    opened (the estimate comes before the player says yes)."""
    reply = backends.reply_limit(AGENT) or agent_spec(AGENT).max_tokens
    return Room(backends.context_limit(AGENT), reply)


@dataclass
class Batch:
    """The turns of one call, and the notes on turns cut to fit."""

    turns: list[PastTurn]
    warnings: list[str] = field(default_factory=list)


# The prompt of a batch on the state reached so far: ``build([])`` is the fixed part.
PromptOf = Callable[[Sequence[PastTurn]], Prompt]


def turn_tokens(turn: PastTurn, lang: str) -> int:
    """What ``turn`` adds to ``<past_turns>``."""
    return estimate_tokens(past_turns_text([turn], lang)) + 1


def past_turns_text(batch: Sequence[PastTurn], lang: str) -> str:
    """The batch as ``<recent_turns>`` shows turns: ``[Turn N] User: …`` / ``[Turn N] AI: …``."""
    turns = [
        HistoryTurn(t.number, prompt_text(t.user_input), prompt_text(t.narrative)) for t in batch
    ]
    return recent_turns(turns, lang).text


def next_batch(
    turns: Sequence[PastTurn],
    build: PromptOf,
    room: Room,
    lang: str,
    *,
    extra: int = 0,
    fixed: int | None = None,
) -> Batch:
    """The first turns of ``turns`` one call can read (at least one; cut to fit when the
    context is known and it alone does not). ``extra``: tokens the fixed part will have grown
    by when the batch runs (the estimate); ``fixed``: the fixed part, when already measured."""
    fixed = (build([]).tokens if fixed is None else fixed) + extra
    text_room = room.text_room(fixed)
    if text_room < MIN_TEXT_TOKENS:
        raise BadInput(t("catchup.no_room", lang, context=room.context, reply=room.reply,
                         fixed=fixed))
    taken: list[PastTurn] = []
    size = 0
    for turn in turns[: room.max_turns]:
        cost = turn_tokens(turn, lang)
        if taken and size + cost > text_room:
            break
        taken.append(turn)
        size += cost
    if room.context is None:  # nothing to overflow that we know of: as planned
        return Batch(taken)
    # The estimate is per turn: check the real prompt, and give back turns until it fits.
    while len(taken) > 1 and not room.fits(build(taken).tokens + extra):
        taken.pop()
    alone = len(taken) == 1
    if not alone or (turn_tokens(taken[0], lang) <= text_room
                     and room.fits(build(taken).tokens + extra)):
        return Batch(taken)
    cut = fit_turn(taken[0], build, room, lang, text_room, extra)
    note = t("catchup.cut", lang, turn=cut.number, tokens=turn_tokens(taken[0], lang),
             room=text_room)
    return Batch([cut], [note])


def fit_turn(
    turn: PastTurn, build: PromptOf, room: Room, lang: str, text_room: int, extra: int = 0
) -> PastTurn:
    """``turn`` cut to fit alone: the user's input to a quarter of the room at most, the
    story text to what is left, its beginning and its end, with a note of what was left out."""
    budget = text_room
    while True:
        cut = _cut(turn, lang, budget)
        if room.fits(build([cut]).tokens + extra) or budget <= MIN_TEXT_TOKENS // 2:
            return cut
        budget = int(budget * 0.9)


def _cut(turn: PastTurn, lang: str, budget: int) -> PastTurn:
    total = estimate_tokens(turn.user_input) + estimate_tokens(turn.narrative)
    note = label(lang, "catchup.cut_note", tokens=max(total - budget, 1))
    room = max(budget - estimate_tokens(note) - 24, 16)  # 24: the turn labels
    user = clip_to_tokens(turn.user_input, max(room // 4, 8))
    left = max(room - estimate_tokens(user), 8)
    narrative = turn.narrative
    if estimate_tokens(narrative) > left:
        head = clip_to_tokens(narrative, left // 2)
        tail = _tail(narrative, left - estimate_tokens(head))
        narrative = f"{head}\n{note}\n{tail}"
    elif user != turn.user_input:
        user = f"{user}\n{note}"
    return replace(turn, user_input=user, narrative=narrative, cut=True)


def _tail(text: str, tokens: int) -> str:
    """The longest end of ``text`` within ``tokens`` (estimated)."""
    low, high = 0, len(text)
    while low < high:
        middle = (low + high) // 2
        if estimate_tokens(text[middle:]) <= tokens:
            high = middle
        else:
            low = middle + 1
    return text[low:].lstrip()


def plan_batches(
    turns: Sequence[PastTurn], build: PromptOf, room: Room, lang: str, *, budget: int = 0
) -> list[Batch]:
    """Every batch, planned ahead from the starting state (the cost estimate): each later one
    allows for the summary lines the earlier ones add (no more than about twice ``budget``
    when chapters fold the block, 0: they do not)."""
    batches: list[Batch] = []
    left = list(turns)
    done = 0
    fixed = build([]).tokens  # the same state all along: measured once
    while left:
        grown = done * SUMMARY_TOKENS_PER_TURN
        extra = min(grown, 2 * budget) if budget > 0 else grown
        batch = next_batch(left, build, room, lang, extra=extra, fixed=fixed)
        batches.append(batch)
        left = left[len(batch.turns):]
        done += len(batch.turns)
    return batches
