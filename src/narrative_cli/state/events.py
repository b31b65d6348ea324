"""The ten state events: each one checked, then applied to a working copy of the game state.

An event is ``{"type": "...", "params": {...}}`` as the analysis agent writes it; parameters
written next to ``type`` (no ``params`` object) are read the same way. Strings are trimmed.
Numbers must be JSON numbers (``"3"`` is a wrong type); ``true``/``false`` are not numbers.

Clamp-or-reject rules (every adjustment is noted on the applied record, so the UI shows it):

- ``set_relationship`` / ``modify_relationship``: the result is clamped to -100..100 and the
  note says so; a fractional value is rounded to a whole number.
- ``add_item`` / ``remove_item``: ``quantity`` defaults to 1 and must be a whole number from 1
  to 1,000,000 (``2.0`` counts as 2). Removing more than is held is **rejected** (the model
  contradicted the state; nothing is removed), naming how many are held.
- ``start_quest``: rejected while the quest is active or after it was completed; a failed quest
  may be started again (noted), and so may one only known from a ``[QUEST]`` lore entry
  (status ``available``). An optional ``stage`` sets the first stage (default ``start``).
- ``advance_quest`` / ``complete_quest``: the quest must exist and be active; ``outcome`` is
  ``success`` (default) or ``failure``.
- ``set_flag``: ``value`` is required (any JSON value); ``null`` clears the flag.
- ``pass_time``: ``amount`` with ``unit`` (minutes, hours, days; 分钟, 小时, 天), or any of
  ``days``, ``hours``, ``minutes``, ``duration`` (minutes), added together. The total is
  rounded to whole minutes (noted) and must be above 0 and at most 365 days.
- ``move``: ``location`` must be a non-blank string.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from narrative_cli.agents.replies import StateEvent
from narrative_cli.state.game import GameState, Quest

EVENT_TYPES = (
    "move",
    "add_item",
    "remove_item",
    "set_relationship",
    "modify_relationship",
    "start_quest",
    "advance_quest",
    "complete_quest",
    "set_flag",
    "pass_time",
)
RELATION_MIN, RELATION_MAX = -100, 100
MAX_QUANTITY = 1_000_000
MAX_MINUTES = 365 * 1440

_MESSAGES: dict[str, tuple[str, str]] = {
    "not_object": ("事件必须是 JSON 对象，收到 {got}", "an event must be a JSON object, got {got}"),
    "no_type": ("事件缺少 type 字段", "the event has no 'type'"),
    "unknown_type": ("不支持的事件类型：{got}", "unknown event type {got}"),
    "params_not_object": (
        "params 必须是 JSON 对象，收到 {got}",
        "'params' must be an object, got {got}",
    ),
    "missing": ("缺少参数 {name}", "missing parameter '{name}'"),
    "not_text": (
        "{name} 必须是非空字符串，收到 {got}",
        "'{name}' must be a non-empty string, got {got}",
    ),
    "not_number": ("{name} 必须是数字，收到 {got}", "'{name}' must be a number, got {got}"),
    "not_count": (
        "{name} 必须是 1 到 1000000 之间的整数，收到 {got}",
        "'{name}' must be a whole number from 1 to 1000000, got {got}",
    ),
    "stock": (
        '物品 "{item}" 库存不足：持有 {held}，要移除 {qty}',
        'not enough "{item}": {held} held, {qty} to remove',
    ),
    "quest_active": ('任务 "{quest}" 已在进行中', 'quest "{quest}" is already active'),
    "quest_done": ('任务 "{quest}" 已完成，不能重新开始', 'quest "{quest}" is already completed'),
    "quest_missing": ('任务 "{quest}" 不存在', 'there is no quest "{quest}"'),
    "quest_not_active": (
        '任务 "{quest}" 状态为 {status}，无法{verb}',
        'quest "{quest}" is {status}, it cannot be {verb}',
    ),
    "bad_outcome": (
        "outcome 必须是 success 或 failure，收到 {got}",
        "'outcome' must be success or failure, got {got}",
    ),
    "no_time": (
        "pass_time 需要 amount+unit、days、hours、minutes 或 duration",
        "pass_time needs amount+unit, days, hours, minutes or duration",
    ),
    "bad_unit": (
        "unit 必须是 minutes、hours 或 days，收到 {got}",
        "'unit' must be minutes, hours or days, got {got}",
    ),
    "time_not_positive": (
        "时间只能向前推进，收到 {got} 分钟",
        "time only moves forward, got {got} minutes",
    ),
    "time_too_long": (
        "单次最多推进 365 天，收到 {got} 分钟",
        "at most 365 days at once, got {got} minutes",
    ),
    "not_json": ("{name} 必须是 JSON 值", "'{name}' must be a JSON value"),
    # Notes on applied events.
    "clamped": (
        "关系值 {got} 超出 -100..100，已截断为 {value}",
        "relationship {got} is outside -100..100, clamped to {value}",
    ),
    "rounded": ("{name} {got} 已取整为 {value}", "{name} {got} rounded to {value}"),
    "restarted": ("重新开始已失败的任务", "restarted a failed quest"),
    "flag_cleared": ("标记已清除", "flag cleared"),
}

_VERBS = {"advance": ("推进", "advanced"), "complete": ("完成", "completed")}
_UNITS = {
    "minute": 1, "minutes": 1, "min": 1, "mins": 1, "m": 1, "分钟": 1, "分": 1,
    "hour": 60, "hours": 60, "h": 60, "hr": 60, "hrs": 60, "小时": 60, "时": 60, "钟头": 60,
    "day": 1440, "days": 1440, "d": 1440, "天": 1440, "日": 1440,
}  # fmt: skip


class Rejected(Exception):
    """An event that cannot be applied; ``str()`` is the reason shown to the user."""


@dataclass
class Context:
    """What one event handler sees: its params, the language, and a place for notes."""

    params: Mapping[str, Any]
    lang: str
    notes: list[str]

    def say(self, key: str, **values: Any) -> str:
        """The message ``key`` in this context's language."""
        return message(key, self.lang, **values)

    def reject(self, key: str, **values: Any) -> Rejected:
        return Rejected(self.say(key, **values))

    def note(self, key: str, **values: Any) -> None:
        self.notes.append(self.say(key, **values))


def message(key: str, lang: str, **values: Any) -> str:
    """A rejection reason or note in Chinese (``zh``) or English."""
    zh, en = _MESSAGES[key]
    return (zh if lang == "zh" else en).format(**values)


def show(value: Any) -> str:
    """A value as it appears inside a reason: compact JSON, CJK kept."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def is_number(value: Any) -> bool:
    """A JSON number: not a bool, not NaN or infinity."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def text_param(ctx: Context, name: str) -> str:
    if name not in ctx.params:
        raise ctx.reject("missing", name=name)
    value = ctx.params[name]
    if not isinstance(value, str) or not value.strip():
        raise ctx.reject("not_text", name=name, got=show(value))
    return value.strip()


def number_param(ctx: Context, name: str) -> float | int:
    if name not in ctx.params:
        raise ctx.reject("missing", name=name)
    value = ctx.params[name]
    if not is_number(value):
        raise ctx.reject("not_number", name=name, got=show(value))
    return value  # type: ignore[no-any-return]


def count_param(ctx: Context) -> int:
    value = ctx.params.get("quantity", 1)
    if value is None:
        return 1
    if not is_number(value) or value != int(value) or not 1 <= value <= MAX_QUANTITY:
        raise ctx.reject("not_count", name="quantity", got=show(value))
    return int(value)


def whole(ctx: Context, name: str, value: float | int) -> int:
    """``value`` rounded half away from zero, with a note when that changed it."""
    result = int(math.floor(abs(value) + 0.5)) * (1 if value >= 0 else -1)
    if result != value:
        ctx.note("rounded", name=name, got=show(value), value=result)
    return result


# Handlers: check everything first, then change ``state`` (a working copy).


def move(state: GameState, ctx: Context) -> None:
    location = text_param(ctx, "location")
    state.location = location
    if location not in state.known_locations:
        state.known_locations.append(location)


def add_item(state: GameState, ctx: Context) -> None:
    item = text_param(ctx, "item")
    quantity = count_param(ctx)
    state.inventory[item] = state.inventory.get(item, 0) + quantity


def remove_item(state: GameState, ctx: Context) -> None:
    item = text_param(ctx, "item")
    quantity = count_param(ctx)
    held = state.inventory.get(item, 0)
    if held < quantity:
        raise ctx.reject("stock", item=item, held=held, qty=quantity)
    if held == quantity:
        del state.inventory[item]
    else:
        state.inventory[item] = held - quantity


def _set_relation(state: GameState, ctx: Context, npc: str, raw: float | int) -> None:
    value = whole(ctx, "value", raw)
    clamped = max(RELATION_MIN, min(RELATION_MAX, value))
    if clamped != value:
        ctx.note("clamped", got=value, value=clamped)
    state.relationships[npc] = clamped
    if npc not in state.known_npcs:
        state.known_npcs.append(npc)


def set_relationship(state: GameState, ctx: Context) -> None:
    npc = text_param(ctx, "npc")
    _set_relation(state, ctx, npc, number_param(ctx, "value"))


def modify_relationship(state: GameState, ctx: Context) -> None:
    npc = text_param(ctx, "npc")
    delta = number_param(ctx, "delta")
    _set_relation(state, ctx, npc, state.relationships.get(npc, 0) + delta)


def start_quest(state: GameState, ctx: Context) -> None:
    quest_id = text_param(ctx, "quest_id")
    stage = text_param(ctx, "stage") if ctx.params.get("stage") is not None else "start"
    current = state.quests.get(quest_id)
    if current is not None and current.status == "active":
        raise ctx.reject("quest_active", quest=quest_id)
    if current is not None and current.status == "completed":
        raise ctx.reject("quest_done", quest=quest_id)
    if current is not None and current.status == "failed":
        ctx.note("restarted")
    state.quests[quest_id] = Quest(status="active", stage=stage)


def _active_quest(state: GameState, ctx: Context, verb: str) -> str:
    quest_id = text_param(ctx, "quest_id")
    quest = state.quests.get(quest_id)
    if quest is None:
        raise ctx.reject("quest_missing", quest=quest_id)
    if quest.status != "active":
        words = _VERBS[verb][0 if ctx.lang == "zh" else 1]
        raise ctx.reject("quest_not_active", quest=quest_id, status=quest.status, verb=words)
    return quest_id


def advance_quest(state: GameState, ctx: Context) -> None:
    stage = text_param(ctx, "stage")
    quest_id = _active_quest(state, ctx, "advance")
    state.quests[quest_id].stage = stage


def complete_quest(state: GameState, ctx: Context) -> None:
    outcome = ctx.params.get("outcome", "success")
    outcome = "success" if outcome is None else outcome
    if outcome not in ("success", "failure"):
        raise ctx.reject("bad_outcome", got=show(outcome))
    quest_id = _active_quest(state, ctx, "complete")
    quest = state.quests[quest_id]
    quest.status = "completed" if outcome == "success" else "failed"
    quest.outcome = outcome


def set_flag(state: GameState, ctx: Context) -> None:
    flag = text_param(ctx, "flag")
    if "value" not in ctx.params:
        raise ctx.reject("missing", name="value")
    value = ctx.params["value"]
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        raise ctx.reject("not_json", name="value") from None
    if value is None:
        state.flags.pop(flag, None)
        ctx.note("flag_cleared")
    else:
        state.flags[flag] = value


def _minutes_asked(ctx: Context) -> float:
    params = ctx.params
    if params.get("amount") is not None:
        amount = number_param(ctx, "amount")
        unit = params.get("unit")
        if unit is None:
            raise ctx.reject("missing", name="unit")
        factor = _UNITS.get(unit.strip().lower()) if isinstance(unit, str) else None
        if factor is None:
            raise ctx.reject("bad_unit", got=show(unit))
        return amount * factor
    parts = {"days": 1440, "hours": 60, "minutes": 1, "duration": 1}
    given = [name for name in parts if params.get(name) is not None]
    if not given:
        raise ctx.reject("no_time")
    return sum(number_param(ctx, name) * parts[name] for name in given)


def pass_time(state: GameState, ctx: Context) -> None:
    asked = _minutes_asked(ctx)
    if asked > MAX_MINUTES:
        raise ctx.reject("time_too_long", got=show(asked))
    minutes = whole(ctx, "minutes", asked)
    if minutes <= 0:
        raise ctx.reject("time_not_positive", got=show(asked))
    state.time = state.time.advanced(minutes)


HANDLERS: dict[str, Callable[[GameState, Context], None]] = {
    "move": move,
    "add_item": add_item,
    "remove_item": remove_item,
    "set_relationship": set_relationship,
    "modify_relationship": modify_relationship,
    "start_quest": start_quest,
    "advance_quest": advance_quest,
    "complete_quest": complete_quest,
    "set_flag": set_flag,
    "pass_time": pass_time,
}


def read_event(event: StateEvent, lang: str) -> tuple[str, dict[str, Any]]:
    """The event's type and params, or ``Rejected`` when its shape is wrong."""
    if not isinstance(event.source, Mapping):
        raise Rejected(message("not_object", lang, got=show(event.source)))
    if not event.type:
        raise Rejected(message("no_type", lang))
    if event.type not in HANDLERS:
        raise Rejected(message("unknown_type", lang, got=show(event.type)))
    if event.params is None:
        raise Rejected(message("params_not_object", lang, got=show(event.source.get("params"))))
    return event.type, copy.deepcopy(dict(event.params))
