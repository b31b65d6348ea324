"""A group scene's turn (issue 19): one plan for the scene, a writer per speaker.

The orchestrator runs a group turn as lore → planning → speakers → tools → recall → writing
→ analysis, always on the serial path: the planner sees every member (``<character>`` holds
each card) and the group's rules (``<group_scene>``), and may name the speakers, in order,
with what each wants (the ``scene_plan`` schema's ``speakers``). Who speaks:

1. ``/next NAME`` (``TurnState.next_speaker``) wins;
2. else the planner's speakers, when at least one names an unmuted member (names that do not
   are warned about and left out; at most four, each once);
3. else the group's strategy (``group.speakers.choose_speakers``).

``choose_speakers`` is called on every turn, before the planner's choice is looked at, so the
session's random numbers advance the same way whoever ends up speaking: a seed and recorded
replies give the same speakers, prompts and dice.

Each speaker gets its own writing call (trace field ``speaker``): in ``swap`` mode its own
card (with the group's scenario override), its own book's lore and its own character's note;
in the join modes the joined cards (``group.join``) and the lore of every joined member.
Every writer sees the chat's Author's Note, the plan's guide, the tool results, whom it
writes for and what it wants (``speaker_note``) and what the earlier speakers said this turn
(``<scene_so_far>``). The turn's story is the replies in order, each under its speaker's
name; one analysis reads it and attributes events to members (``scene_analysis``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from narrative_cli.agents.templates import fill, label
from narrative_cli.context.expand import apply_macros
from narrative_cli.context.inputs import PromptInputs
from narrative_cli.context.macros import env_for, expand
from narrative_cli.context.router import build_writing
from narrative_cli.domain import Card, LoreEntry
from narrative_cli.errors import BackendError, BadInput
from narrative_cli.group.join import joined_members, writer_card
from narrative_cli.group.model import Group, GroupMember
from narrative_cli.group.speakers import SpeakerTurn, choose_speakers
from narrative_cli.pipeline.events import SpeakerStarted
from narrative_cli.pipeline.fitting import fit_prompt
from narrative_cli.pipeline.records import Spoken, TurnRecord
from narrative_cli.pipeline.stages import apply_reply, clean_narrative, flag_invented_rolls
from narrative_cli.pipeline.templating import apply_templates
from narrative_cli.pipeline.turn import TurnState

MOST_SPEAKERS = 4  # speakers one planned turn may have (the scene_plan schema's maxItems)


def names_text(names: list[str], lang: str) -> str:
    """Names in a sentence: ``Wren, Pip`` / ``温岚、阿七``."""
    return ("、" if lang == "zh" else ", ").join(names)


def scene_group(state: TurnState) -> Group:
    """The story's group with the scene's current muting."""
    group = state.story.group
    assert group is not None and state.scene is not None, "a group scene"
    return state.scene.applied_to(group)


def _expanded(card: Card, state: TurnState) -> Card:
    """A member's card with its own macros ({{char}} is that member)."""
    env = env_for(card, state.story.persona, lang=state.lang)
    return replace(
        card,
        description=expand(card.description, env),
        personality=expand(card.personality, env),
        scenario=expand(card.scenario, env),
    )


def scene_inputs(state: TurnState, inputs: PromptInputs) -> PromptInputs:
    """The turn's inputs with the planner's cast and group rules."""
    group = scene_group(state)
    lang, active = state.lang, group.active()
    muted = [m.name for m in group.members if m.key in group.muted]
    note = fill(
        lang,
        "planning_group",
        user=state.story.persona.name or "User",
        members=names_text([m.name for m in active], lang) or "-",
        muted=label(lang, "group.muted", text=names_text(muted, lang)) if muted else "",
        most=min(MOST_SPEAKERS, max(1, len(active))),
        strategy=group.strategy,
    )
    cast = tuple(_expanded(m.card, state) for m in active)
    return replace(inputs, cast=cast, scene_note=note)


def choose_scene_speakers(state: TurnState) -> list[tuple[GroupMember, str]]:
    """Who answers this turn, in order, each with the intent the planner gave it."""
    group = scene_group(state)
    assert state.scene is not None
    spoken = state.scene.spoken
    turn = SpeakerTurn(
        user_text=state.user_input,
        last_speaker=spoken[-1] if spoken else None,
        history_speakers=spoken,
        forced=state.next_speaker,
    )
    by_strategy = choose_speakers(group, turn, state.rng)  # always: the rng advances alike
    intents = {p.name.casefold(): p.intent for p in state.plan.speakers} if state.plan else {}
    if state.next_speaker is not None:
        chosen = by_strategy
    else:
        chosen = _planned(state, group) or by_strategy
    if not chosen:
        raise BadInput(
            f"{group.name}: no member may speak this turn (all muted, or the {group.strategy} "
            "strategy picked nobody)",
            hint="/next NAME picks who answers; /unmute NAME lets a member speak again",
        )
    return [(m, intents.get(m.name.casefold(), "")) for m in chosen]


def kept_speakers(state: TurnState, keep: TurnRecord) -> list[tuple[GroupMember, str]]:
    """A group ``/regen``: the kept turn's plan, planning tool results and replies but the
    last; only the last speaker is written again (a member no longer in the group: BadInput)."""
    group = scene_group(state)
    state.plan = keep.plan
    state.tool_results = [r for r in keep.tool_results if r.trigger == "planning"]
    intents = {p.name.casefold(): p.intent for p in keep.plan.speakers} if keep.plan else {}
    *earlier, last = keep.speakers
    member = group.member(last.key) or group.member(last.name)
    if member is None:
        raise BadInput(f"{last.name} is no longer a member of the group: /regen cannot redo "
                       "their reply")
    state.speakers = list(earlier)
    return [(member, intents.get(member.name.casefold(), ""))]


def _planned(state: TurnState, group: Group) -> list[GroupMember]:
    """The planner's speakers that are unmuted members, in its order, each once."""
    chosen: list[GroupMember] = []
    for planned in state.plan.speakers if state.plan else ():
        member = group.member(planned.name)
        if member is None or member.key in group.muted:
            why = "is muted" if member is not None else "is not a member of the group"
            state.warn("planning", f"planning: speaker {planned.name!r} {why}; left out")
            continue
        if member not in chosen and len(chosen) < MOST_SPEAKERS:
            chosen.append(member)
    return chosen


def _owned_by(state: TurnState, keys: set[str]) -> Callable[[LoreEntry], bool]:
    owner = state.story.lore_owner

    def keep(entry: LoreEntry) -> bool:
        found = owner.get(id(entry))
        return found is None or found in keys

    return keep


def speaker_inputs(
    state: TurnState, group: Group, member: GroupMember, intent: str
) -> PromptInputs:
    """The writer's inputs for ``member``: its card (or the joined cards), its lore, its
    note, the earlier replies of this turn."""
    joined = group.generation_mode != "swap"
    keys = {m.key for m in joined_members(group, member)} if joined else {member.key}
    keep = _owned_by(state, keys)
    routed, text = state.routed, state.lore_text
    raw = state.make_base_inputs("")
    others = [m.name for m in group.members if m.key != member.key and m.key not in group.muted]
    lang = state.lang
    user = state.story.persona.name or "User"
    wants = label(lang, "group.intent", name=member.name, text=intent) if intent else ""
    raw = replace(
        raw,
        card=writer_card(group, member),
        worldinfo1=[text(e) for e in routed.worldinfo1 if keep(e)],
        worldinfo2=[text(e) for e in routed.worldinfo2 if keep(e)],
        worldinfo3=[text(e) for e in routed.worldinfo3 if keep(e)],
        outlets={name: [text(e) for e in v if keep(e)] for name, v in routed.outlets.items()},
        speaker_note=fill(lang, "writing_group", others=names_text(others, lang) or user,
                          speaker=member.name, user=user, intent=wants),
        scene_so_far="\n\n".join(
            label(lang, "group.scene_turn", name=s.name, text=s.text) for s in state.speakers
        ),
    )
    return state.prompt_inputs(apply_templates(state, apply_macros(raw)))


def scene_writing(state: TurnState, speakers: list[tuple[GroupMember, str]]) -> None:
    """One writing call per speaker, streamed in turn; the story is their replies in order."""
    group = scene_group(state)
    with state.stage("writing"):
        for index, (member, intent) in enumerate(speakers, start=len(state.speakers)):
            state.calls.emit(SpeakerStarted(member.name, member.key, index))
            _write_one(state, group, member, intent)
    if not state.speakers:
        raise BackendError("writing: no speaker's reply had story text; nothing was saved")
    finish_scene_writing(state)


def _write_one(state: TurnState, group: Group, member: GroupMember, intent: str) -> None:
    inputs = speaker_inputs(state, group, member, intent)
    prompt = fit_prompt(state, build_writing, "writing", inputs)
    state.calls.speaker = member.name
    try:
        reply = state.calls.complete(
            "writing", prompt.messages, cache_breakpoints=prompt.cache_breakpoints
        )
    finally:
        state.calls.speaker = None
    text = apply_reply(state, clean_narrative(reply.text))
    if not text:
        state.warn("writing", f"writing: {member.name}'s reply had no story text; left out")
        return
    if reply.finish_reason == "length":
        state.warn("writing", f"writing: {member.name}'s reply was cut off at max_tokens")
    state.speakers.append(Spoken(member.name, member.key, text))


def scene_text(speakers: list[Spoken], lang: str) -> str:
    """A group turn's story: each reply under its speaker's name."""
    return "\n\n".join(label(lang, "group.scene_turn", name=s.name, text=s.text) for s in speakers)


def finish_scene_writing(state: TurnState) -> None:
    """The turn's story, who spoke (for the next turn's strategy), the analyst's note."""
    assert state.scene is not None and state.base_inputs is not None
    state.narrative = scene_text(state.speakers, state.lang)
    state.scene = state.scene.after_speakers(s.key for s in state.speakers)
    with_analysis_note(state)
    flag_invented_rolls(state)


def with_analysis_note(state: TurnState) -> None:
    """Tell the analyst who spoke this turn (its events name members)."""
    assert state.base_inputs is not None
    names = names_text(list(dict.fromkeys(s.name for s in state.speakers)), state.lang)
    note = fill(state.lang, "analysis_group", members=names)
    state.base_inputs = replace(state.base_inputs, analysis_note=note)
