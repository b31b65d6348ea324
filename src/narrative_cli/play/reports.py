"""What the information commands show, as plain data (titles, rows, texts).

``/state``, ``/vars``, ``/summary``, ``/lore``, ``/tools``, ``/swipe`` and ``/cost`` read the
session here, and so does the list of changes shown after each turn (``turn_changes``); the
screen only lays the data out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from narrative_cli.domain_chat import AuthorsNote
from narrative_cli.i18n import t
from narrative_cli.lore.reasons import reason_words
from narrative_cli.pipeline.accounting import AgentUsage
from narrative_cli.pipeline.story import TurnResult
from narrative_cli.play.controller import PlaySession

if TYPE_CHECKING:
    from narrative_cli.play.costs import Costs

Table = tuple[str, tuple[str, ...], Sequence[tuple[str, ...]]]


def _lang(play: PlaySession) -> str:
    """The language of the story's screens."""
    return play.story.lang


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

    title = f"{t('report.state', _lang(play))} ({_turn_word(play)})"
    if play.story.snapshot.mvu:
        return title, mvu_summary(play.story.snapshot.mvu, play.story.lang) + _rejected(play)
    state = GameState.from_dict(play.story.snapshot.state)
    return title, state_summary(state, play.story.lang) + _rejected(play)


def _rejected(play: PlaySession) -> str:
    """The last turn's rejected state changes, each in words with its reason (the turn's
    footer folds them into one line pointing here)."""
    last = play.last
    rejected = list(last.events_rejected) if last is not None else []
    if not rejected:
        return ""
    head = t("report.rejected_changes", _lang(play))
    lines = [f"  ✗ {_event_words(event.type, event.event)}: {event.reason}" for event in rejected]
    return "\n\n" + "\n".join([head, *lines])


def _event_words(kind: str, event: object) -> str:
    """``remove_item (item: ghost lantern, quantity: 1)``: an event's type and parameters."""
    params = event.get("params") if isinstance(event, Mapping) else None
    if not isinstance(params, Mapping) or not params:
        return kind or "?"
    shown = ", ".join(f"{key}: {_value_words(value)}" for key, value in params.items())
    return f"{kind or '?'} ({preview(shown, 80)})"


def _value_words(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return " / ".join(_value_words(item) for item in value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_value_words(v)}" for k, v in value.items())
    return str(value)


def vars_text(play: PlaySession) -> tuple[str, str]:
    """``/vars``: the MVU variables (or why there are none)."""
    from narrative_cli.state.mvu import mvu_summary

    title = f"{t('report.vars', _lang(play))} ({_turn_word(play)})"
    if play.story.snapshot.mvu is None and play.story.uses_mvu:
        return title, t("report.vars_later", _lang(play))
    body = mvu_summary(play.story.snapshot.mvu, play.story.lang)
    return title, body + _rejected_updates(play)


def _rejected_updates(play: PlaySession) -> str:
    """The last turn's rejected variable updates, each with its reason."""
    last = play.last
    rejected = list(last.mvu_rejected) if last is not None else []
    if not rejected:
        return ""
    head = t("report.rejected_head", _lang(play))
    lines = [f"✗ {item.patch}\n  → {item.reason}" for item in rejected]
    return "\n\n" + head + "\n" + "\n".join(lines)


def summary_text(play: PlaySession) -> tuple[str, str]:
    """``/summary``: every summary entry so far, labelled with its turn."""
    from narrative_cli.state.summaries import SummaryStore

    store = SummaryStore.from_dict(play.story.snapshot.summaries, play.story.lang)
    lang = _lang(play)
    body = "\n".join(store.lines()) or t("report.no_summary", lang)
    if store.chapters:
        body += "\n\n" + t("report.folded_note", lang, count=len(store.chapters))
    return t("report.summary", lang), body


def chapters_text(play: PlaySession) -> tuple[str, str]:
    """``/chapters``: every chapter and arc, oldest first; those the prompts show marked ●,
    those a wider fold covers ○ (issue #17)."""
    from narrative_cli.state.chapters import visible_chapters
    from narrative_cli.state.summaries import SummaryStore

    lang = _lang(play)
    store = SummaryStore.from_dict(play.story.snapshot.summaries, play.story.lang)
    shown = {id(c) for c in visible_chapters(store.chapters)}
    ordered = sorted(store.chapters, key=lambda c: (c.first, -c.level, c.last))
    lines = [f"{'●' if id(c) in shown else '○'} {c.labelled(store.lang)}" for c in ordered]
    return t("report.chapters", lang), "\n".join(lines) or t("report.no_chapters", lang)


def recall_rows(play: PlaySession, query: str) -> Table:
    """``/recall QUERY``: what the story's text index finds for the words of ``query`` (the
    search the planner's ``recall_terms`` run), best first, as table rows (which fold long
    passages where a panel would crop them)."""
    from narrative_cli.context.text_search import query_terms, search
    from narrative_cli.pipeline.search_recall import documents
    from narrative_cli.pipeline.turn import prompt_history
    from narrative_cli.state.summaries import SummaryStore

    lang = _lang(play)
    title = t("report.recall", lang, query=query)
    headers = (t("report.recall_turn", lang), t("report.recall_from", lang),
               t("report.recall_passage", lang))
    index = play.story.text_index
    if index is None:
        return title, headers, []
    store = SummaryStore.from_dict(play.story.snapshot.summaries, play.story.lang)
    docs = documents(prompt_history(play.story), store)
    index.sync(docs)
    found = search(index, query_terms(query), rare_only=False, budget_tokens=4000,
                   max_passages=10, total=len(docs))
    kinds = {"turn": t("report.recall_kind_turn", lang),
             "summary": t("report.recall_kind_summary", lang),
             "chapter": t("report.recall_kind_chapter", lang)}
    return title, headers, [
        (str(p.turn), kinds.get(p.kind, p.kind), p.text) for p in found.passages
    ]


def lore_rows(play: PlaySession) -> Table:
    """``/lore``: the last turn's entries: activated (where each went and why), then those the
    budget dropped, then the other rejected ones, each with its reason."""
    last = play.last
    lang = _lang(play)
    title = f"{t('report.lore', lang)} ({_turn_word(play)})"
    headers = tuple(t(f"report.lore_{name}", lang) for name in ("uid", "entry", "status", "reason"))
    if last is None:
        return title, headers, []
    rows = [
        (_uid(hit.uid), hit.comment, t("report.activated", lang),
         f"{hit.route}: {reason_words(hit.reason, lang)}")
        for hit in last.lore
    ]
    rejected = sorted(last.lore_rejected, key=lambda hit: not _by_budget(hit.reason))
    rows += [
        (_uid(hit.uid), hit.comment,
         t("report.by_budget" if _by_budget(hit.reason) else "report.rejected", lang),
         reason_words(hit.reason, lang))
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
    lang = _lang(play)
    headers = tuple(t(f"report.tool_{name}", lang)
                    for name in ("name", "type", "trigger", "description"))
    return t("report.tools", lang), headers, rows


def swipe_rows(play: PlaySession) -> Table:
    """``/swipe``: the replies of the last turn, the one shown marked with ``*``."""
    rows = [
        (f"{'*' if swipe.selected else ' '}{swipe.index}", preview(swipe.narrative, 70))
        for swipe in play.swipes()
    ]
    title = f"{t('report.replies', _lang(play))} ({_turn_word(play)})"
    return title, ("#", t("report.reply", _lang(play))), rows


def cost_rows(play: PlaySession) -> Table:
    """``/cost``: calls, tokens, cached tokens, time and money per agent over the session
    (the money column only when some agent's model has a price)."""
    account = play.account
    return usage_table(account.agents, account.turns, _session_costs(play), _lang(play))


def usage_table(
    agents: Mapping[str, AgentUsage], turns: int, costs: Costs | None, lang: str
) -> Table:
    """The ``/cost`` table of ``agents``' usage over ``turns`` turns, with ``costs``' money."""
    from narrative_cli.pipeline.accounting import SessionAccount

    priced = costs is not None and costs.total is not None
    per_agent = costs.agents if costs is not None else {}
    rows = [
        _usage_row(agent, usage, per_agent.get(agent), priced, lang)
        for agent, usage in agents.items()
    ]
    total = SessionAccount(turns, dict(agents)).total()
    total_cost = costs.total if costs is not None else None
    rows.append(_usage_row(t("cost.total", lang), total, total_cost, priced, lang))
    names = ("agent", "calls", "prompt", "cached", "completion", "latency")
    headers = tuple(t(f"cost.{name}", lang) for name in names)
    if priced:
        headers += (t("cost.money", lang),)
    return t("cost.title", lang, turns=turns), headers, rows


def _usage_row(
    agent: str, usage: AgentUsage, cost: float | None, priced: bool, lang: str
) -> tuple[str, ...]:
    from narrative_cli.pricing import money

    mark = "~" if usage.estimated else ""
    row: tuple[str, ...] = (
        agent,
        str(usage.calls),
        f"{mark}{usage.prompt_tokens:,}",
        f"{usage.cached_tokens:,} ({usage.cache_share:.0%})",
        f"{mark}{usage.completion_tokens:,}",
        t("footer.seconds", lang, seconds=f"{usage.latency_ms / 1000:.1f}"),
    )
    if priced:
        row += (money(cost) if cost is not None else "-",)
    return row


def cache_note(play: PlaySession) -> str:
    """What the prompt cache saved over the session, then where the prices come from (or
    which models have none: tokens only)."""
    from narrative_cli.pricing import PRICES_DATE

    lang = _lang(play)
    total = play.account.total()
    if not total.prompt_tokens:
        return t("cost.no_calls", lang)
    written = total.cache_write_tokens
    fresh = max(total.prompt_tokens - total.cached_tokens - written, 0)
    lines = [t("cost.cache_note", lang, cached=f"{total.cached_tokens:,}",
               prompt=f"{total.prompt_tokens:,}", share=f"{total.cache_share:.0%}",
               fresh=f"{fresh:,}")]  # fmt: skip
    if written:  # a provider that bills cache writes (Anthropic): what was written, apart
        lines.append(t("cost.cache_writes", lang, written=f"{written:,}"))
    costs = _session_costs(play)
    if costs.total is not None:
        sources = [t("cost.prices_config", lang)] if "config" in costs.sources else []
        if "table" in costs.sources:
            sources.append(t("cost.prices_table", lang, date=PRICES_DATE))
        lines.append(t("cost.session_total", lang, cost=costs.total_text()) + " "
                     + t("cost.prices", lang, source=", ".join(sources)))  # fmt: skip
    if costs.unpriced:
        lines.append(unpriced_note(costs.unpriced, lang))
    return "\n".join(lines)


def unpriced_note(models: Sequence[str], lang: str) -> str:
    """The one line saying which models have no price (their cost shows as tokens only)."""
    return t("cost.unpriced", lang, models=", ".join(models))


def turn_cost(play: PlaySession, result: TurnResult) -> tuple[str, list[str]]:
    """The footer's money for one turn (``""`` when no model of the turn has a price) and
    the models of the turn without a price."""
    from narrative_cli.play.costs import costs_of

    costs = costs_of(play.story.settings, play.backends.model_of, result.usage.agents)
    return costs.total_text(), costs.unpriced


def _session_costs(play: PlaySession) -> Costs:
    """The cost of every stored reply of the session so far (``/cost``)."""
    from narrative_cli.play.costs import costs_of

    return costs_of(play.story.settings, play.backends.model_of, play.account.agents)


def _turn_word(play: PlaySession) -> str:
    return t("report.turn", _lang(play), turn=play.turn)


def preview(text: str, limit: int = 70) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


_NOTE_PLACES = {0: "report.note_after_main", 1: "report.note_in_chat",
                2: "report.note_before_main"}  # fmt: skip


def note_text(note: AuthorsNote, lang: str = "en") -> tuple[str, str]:
    """``/note``: the Author's Note and where and how often it is sent."""
    title = t("report.note", lang)
    if not note.text.strip():
        return title, t("report.no_note", lang)
    place = _NOTE_PLACES.get(note.position)
    where = t(place, lang) if place else t("report.note_position", lang, position=note.position)
    if note.position == 1:
        where += t("report.note_depth", lang, depth=note.depth, role=note.role)
    if note.interval == 1:
        often = t("report.note_every_turn", lang)
    elif note.interval <= 0:
        often = t("report.note_never", lang)
    else:
        often = t("report.note_every", lang, interval=note.interval)
    return title, f"{note.text.strip()}\n\n[{where}; {often}]"
