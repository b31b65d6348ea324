"""What the information commands show, as plain data (titles, rows, texts).

``/state``, ``/vars``, ``/summary``, ``/lore``, ``/tools``, ``/swipe`` and ``/cost`` read the
session here, and so does the list of changes shown after each turn (``turn_changes``); the
screen only lays the data out.
"""

from __future__ import annotations

from collections.abc import Sequence

from narrative_cli.domain import AuthorsNote
from narrative_cli.pipeline.accounting import AgentUsage
from narrative_cli.pipeline.story import TurnResult
from narrative_cli.play.controller import PlaySession

Table = tuple[str, tuple[str, ...], Sequence[tuple[str, ...]]]


def _zh(play: PlaySession) -> bool:
    return play.story.lang == "zh"


def turn_changes(play: PlaySession, result: TurnResult) -> list[str]:
    """What ``result`` (the last turn) changed in the state and MVU variables, one line each
    (none when the snapshot the turn started from is unknown)."""
    from narrative_cli.pipeline.story import ensure_mvu
    from narrative_cli.state.changes import state_changes

    if play.previous is None:
        return []
    before, after = ensure_mvu(play.story, play.previous)[0], result.snapshot
    return state_changes(before.state, after.state, before.mvu, after.mvu, play.story.lang)


def state_text(play: PlaySession) -> tuple[str, str]:
    """``/state``: the state after the last turn; on a card with MVU variables, those (one
    status: the built-in game state is not shown beside them)."""
    from narrative_cli.state.engine import GameState, state_summary
    from narrative_cli.state.mvu import mvu_summary

    title = f"{'状态' if _zh(play) else 'State'} ({_turn_word(play)})"
    if play.story.snapshot.mvu:
        return title, mvu_summary(play.story.snapshot.mvu, play.story.lang)
    state = GameState.from_dict(play.story.snapshot.state)
    return title, state_summary(state, play.story.lang)


def vars_text(play: PlaySession) -> tuple[str, str]:
    """``/vars``: the MVU variables (or why there are none)."""
    from narrative_cli.state.mvu import mvu_summary

    title = f"{'变量' if _zh(play) else 'Variables'} ({_turn_word(play)})"
    if play.story.snapshot.mvu is None and play.story.uses_mvu:
        note = "（第一轮开始时初始化）" if _zh(play) else "(initialised when the first turn starts)"
        return title, note
    body = mvu_summary(play.story.snapshot.mvu, play.story.lang)
    return title, body + _rejected_updates(play)


def _rejected_updates(play: PlaySession) -> str:
    """The last turn's rejected variable updates, each with its reason."""
    last = play.last
    rejected = list(last.mvu_rejected) if last is not None else []
    if not rejected:
        return ""
    head = "本轮被拒绝的变量更新：" if _zh(play) else "Rejected variable updates this turn:"
    lines = [f"✗ {item.patch}\n  → {item.reason}" for item in rejected]
    return "\n\n" + head + "\n" + "\n".join(lines)


def summary_text(play: PlaySession) -> tuple[str, str]:
    """``/summary``: every summary entry so far, labelled with its turn."""
    from narrative_cli.state.summaries import SummaryStore

    store = SummaryStore.from_dict(play.story.snapshot.summaries, play.story.lang)
    empty = "（尚无故事摘要）" if _zh(play) else "(no summary yet)"
    return ("摘要" if _zh(play) else "Summary"), store.render() or empty


def lore_rows(play: PlaySession) -> Table:
    """``/lore``: the last turn's entries: activated (where each went and why), then those the
    budget dropped, then the other rejected ones, each with its reason."""
    last = play.last
    title = f"{'世界书' if _zh(play) else 'Lore'} ({_turn_word(play)})"
    headers = ("uid", "entry", "status", "route / reason")
    if last is None:
        return title, headers, []
    rows = [
        (_uid(hit.uid), hit.comment, "activated", f"{hit.route}: {hit.reason}")
        for hit in last.lore
    ]
    rejected = sorted(last.lore_rejected, key=lambda hit: not _by_budget(hit.reason))
    rows += [
        (_uid(hit.uid), hit.comment,
         "dropped by budget" if _by_budget(hit.reason) else "rejected", hit.reason)
        for hit in rejected
    ]
    return title, headers, rows


def _uid(uid: object) -> str:
    return "" if uid is None else str(uid)


def _by_budget(reason: str) -> bool:
    return reason.startswith("budget")


def tool_rows(play: PlaySession) -> Table:
    """``/tools``: the card's registered tools."""
    from narrative_cli.pipeline.orchestrator import card_describes_checks
    from narrative_cli.tools.definitions import builtin_dice_tool

    tools = list(play.story.tools.tools)
    if card_describes_checks(play.story) and not any(t.is_dice for t in tools):
        tools.append(builtin_dice_tool())  # offered to the planner: the lore describes checks
    rows = [(tool.name, tool.type, tool.trigger, tool.description) for tool in tools]
    return ("工具" if _zh(play) else "Tools"), ("name", "type", "trigger", "description"), rows


def swipe_rows(play: PlaySession) -> Table:
    """``/swipe``: the replies of the last turn, the one shown marked with ``*``."""
    rows = [
        (f"{'*' if swipe.selected else ' '}{swipe.index}", preview(swipe.narrative, 70))
        for swipe in play.swipes()
    ]
    title = f"{'回复' if _zh(play) else 'Replies'} ({_turn_word(play)})"
    return title, ("#", "reply"), rows


def cost_rows(play: PlaySession) -> Table:
    """``/cost``: calls, tokens, cached tokens and latency per agent over the session."""
    rows = [_usage_row(agent, usage) for agent, usage in play.account.agents.items()]
    rows.append(_usage_row("total", play.account.total()))
    title = f"{'本会话用量' if _zh(play) else 'Session usage'} ({play.account.turns} turns)"
    headers = ("agent", "calls", "prompt", "cached", "completion", "latency")
    return title, headers, rows


def _usage_row(agent: str, usage: AgentUsage) -> tuple[str, ...]:
    mark = "~" if usage.estimated else ""
    return (
        agent,
        str(usage.calls),
        f"{mark}{usage.prompt_tokens:,}",
        f"{usage.cached_tokens:,} ({usage.cache_share:.0%})",
        f"{mark}{usage.completion_tokens:,}",
        f"{usage.latency_ms / 1000:.1f} s",
    )


def cache_note(play: PlaySession) -> str:
    """What the prompt cache saved over the session, in tokens and share of prompt tokens."""
    total = play.account.total()
    if not total.prompt_tokens:
        return "No model calls yet in this session."
    fresh = total.prompt_tokens - total.cached_tokens
    return (
        f"The cache served {total.cached_tokens:,} of {total.prompt_tokens:,} prompt tokens "
        f"({total.cache_share:.0%}); {fresh:,} were processed fresh."
    )


def _turn_word(play: PlaySession) -> str:
    return f"第{play.turn}轮" if _zh(play) else f"turn {play.turn}"


def preview(text: str, limit: int = 70) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


_NOTE_PLACES = {0: "after the main prompt", 1: "in the chat", 2: "before the main prompt"}


def note_text(note: AuthorsNote) -> tuple[str, str]:
    """``/note``: the Author's Note and where and how often it is sent."""
    if not note.text.strip():
        return "Author's Note", "(none)  /note TEXT sets one"
    where = _NOTE_PLACES.get(note.position, f"position {note.position}")
    if note.position == 1:
        where += f" at depth {note.depth} as {note.role}"
    often = "every turn" if note.interval == 1 else (
        "never (interval 0)" if note.interval <= 0 else f"every {note.interval} turns")
    return "Author's Note", f"{note.text.strip()}\n\n[{where}; {often}]"
