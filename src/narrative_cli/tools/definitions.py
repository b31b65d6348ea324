"""Tool definitions from lore entries, checked at load, and the tool list the planner reads.

A tool entry is an enabled entry whose comment starts with ``[TOOL:…]`` or whose content is
tool JSON (``lore.routing.is_tool_json``); both kinds are registered. The content is JSON::

    {"type": "code" | "llm", "trigger": "planning" | "post_pipeline",
     "function": {"name": "…", "description": "…", "parameters": {JSON Schema}},
     "code": "JavaScript function body (params, state)",          # custom code tools
     "context": ["narrative_text", …], "system_prompt": "…",       # llm tools
     "output_tag": "state_panel", "tag_lookback": 3,              # post_pipeline llm tools
     "success_branch": "…", "failure_branch": "…"}                # defaults for the calls

Names may be any letters (Chinese included), digits, ``_``, ``-`` and ``.``. ``roll_dice`` of
type ``code`` is the built-in dice engine and needs no code. Every entry that cannot be used
becomes a ``ToolProblem`` naming the entry and what is wrong; the first tool of a name wins.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from narrative_cli.domain import LoreEntry
from narrative_cli.errors import ToolDefinitionError
from narrative_cli.lore.routed import routes_for
from narrative_cli.lore.routing import TOOL
from narrative_cli.safetext import loads
from narrative_cli.tools.context_keys import CANONICAL_CONTEXT_ORDER
from narrative_cli.tools.sandbox import check_syntax

TYPES = ("code", "llm")
TRIGGERS = ("planning", "post_pipeline")
DICE_TOOL = "roll_dice"
_TRIGGER_ALIASES = {"plan": "planning", "post": "post_pipeline", "post-pipeline": "post_pipeline"}
_NAME = re.compile(r"^[\w.\-]{1,64}$")
_TAG = re.compile(r"^[^\s<>/]{1,64}$")
_MAX_LOOKBACK = 50

# Shown to the planner when a roll_dice entry declares no parameters of its own. Whatever a
# card declares, the engine reads every key below (dice_checks.check).
DICE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "expr": {"type": "string", "description": "骰子表达式，如 1d20+3、4d6kh3、3d6*5、6d10>=8"},
        "system": {
            "type": "string",
            "enum": ["none", "dnd5e", "coc7", "pool"],
            "description": "检定规则 none/dnd5e/coc7/pool，可选",
        },
        "label": {"type": "string", "description": "检定名称，如 侦查、察觉，可选"},
        "mode": {
            "type": "string",
            "enum": ["normal", "advantage", "disadvantage", "exploding"],
            "description": "normal/advantage/disadvantage/exploding",
        },
        "dc": {"type": "number", "description": "目标难度（dnd5e 攻击为 AC），可选"},
        "modifier": {"type": "number", "description": "dnd5e：d20 的加值，可选"},
        "kind": {"type": "string", "description": "dnd5e：check/save/attack/damage，可选"},
        "critical": {"type": "boolean", "description": "dnd5e 伤害：重击，骰子加倍，可选"},
        "skill": {"type": "number", "description": "coc7：技能值"},
        "difficulty": {"type": "string", "description": "coc7：regular/hard/extreme，可选"},
        "bonus": {"type": "number", "description": "coc7：奖励骰数 0-2，可选"},
        "penalty": {"type": "number", "description": "coc7：惩罚骰数 0-2，可选"},
        "pushed": {"type": "boolean", "description": "coc7：孤注一掷，可选"},
        "need": {"type": "number", "description": "pool：需要的成功数，可选"},
        "hidden": {"type": "boolean", "description": "暗骰：结果只给写作者，玩家看不到，可选"},
        "success_branch": {"type": "string", "description": "成功时的走向，可选"},
        "failure_branch": {"type": "string", "description": "失败时的走向，可选"},
    },
    "required": ["expr"],
}


def _default_parameters() -> dict[str, Any]:
    return {"type": "object", "properties": {}, "required": []}


@dataclass(frozen=True)
class ToolDef:
    """One registered tool, as the planner, the runner and ``inspect`` see it."""

    name: str
    type: str  # code | llm
    trigger: str = "planning"  # planning | post_pipeline
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=_default_parameters)
    context: tuple[str, ...] = ()
    system_prompt: str = ""
    code: str = ""
    output_tag: str = ""
    tag_lookback: int = 0
    success_branch: str = ""
    failure_branch: str = ""
    entry_uid: int | str | None = None
    entry_comment: str = ""
    constant: bool = True  # a non-constant tool is active only when its keys match
    keys: tuple[str, ...] = ()
    reveal_hidden: bool = False  # roll_dice: show hidden rolls to the player after the turn

    @property
    def is_dice(self) -> bool:
        """The built-in dice engine (``roll_dice`` of type code)."""
        return self.type == "code" and self.name == DICE_TOOL

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form for ``inspect --json`` and traces."""
        return {
            "name": self.name,
            "type": self.type,
            "trigger": self.trigger,
            "description": self.description,
            "parameters": self.parameters,
            "context": list(self.context),
            "output_tag": self.output_tag,
            "tag_lookback": self.tag_lookback,
            "entry": {"uid": self.entry_uid, "comment": self.entry_comment},
        }


@dataclass(frozen=True)
class ToolProblem:
    """An entry that looked like a tool but could not be registered, and why."""

    uid: int | str | None
    comment: str
    message: str

    def __str__(self) -> str:
        return f"entry {self.uid} {json.dumps(self.comment, ensure_ascii=False)}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"uid": self.uid, "comment": self.comment, "message": self.message}


@dataclass
class ToolSet:
    """The registered tools in entry order, and the problems found while loading them."""

    tools: list[ToolDef] = field(default_factory=list)
    problems: list[ToolProblem] = field(default_factory=list)

    def get(self, name: str) -> ToolDef | None:
        return next((tool for tool in self.tools if tool.name == name), None)

    def planning(self) -> list[ToolDef]:
        return [tool for tool in self.tools if tool.trigger == "planning"]

    def post_pipeline(self) -> list[ToolDef]:
        return [tool for tool in self.tools if tool.trigger == "post_pipeline"]


def load_tools(entries: Iterable[LoreEntry]) -> ToolSet:
    """Register every tool entry; each unusable one becomes a problem instead of a tool."""
    toolset = ToolSet()
    for entry in routes_for(entries).enabled(TOOL):
        try:
            tool = parse_tool(entry)
        except ToolDefinitionError as error:
            toolset.problems.append(ToolProblem(entry.uid, entry.comment, error.message))
            continue
        first = toolset.get(tool.name)
        if first is not None:
            where = f"entry {first.entry_uid} {json.dumps(first.entry_comment, ensure_ascii=False)}"
            message = f"duplicate tool name '{tool.name}': {where} defines it first; ignored"
            toolset.problems.append(ToolProblem(entry.uid, entry.comment, message))
            continue
        toolset.tools.append(tool)
    return toolset


def parse_tool(entry: LoreEntry) -> ToolDef:
    """The tool one entry defines; ToolDefinitionError says what is wrong with it."""
    data = _json_object(entry.content)
    kind = data.get("type")
    if kind not in TYPES:
        raise ToolDefinitionError(f'unknown type {_show(kind)} (use "code" or "llm")')
    function = data.get("function")
    if not isinstance(function, dict):
        raise ToolDefinitionError('missing "function" object with the tool\'s name')
    name = _name(function.get("name"))
    tool = ToolDef(
        name=name,
        type=str(kind),
        trigger=_trigger(data.get("trigger")),
        description=_text(function, "description", "function.description"),
        parameters=_parameters(function.get("parameters"), kind == "code" and name == DICE_TOOL),
        context=_context(data.get("context")),
        system_prompt=_text(data, "system_prompt") or _text(data, "user_persona"),
        code=_code(data, kind == "code" and name != DICE_TOOL),
        output_tag=_output_tag(data.get("output_tag")),
        tag_lookback=_lookback(data.get("tag_lookback")),
        success_branch=_text(data, "success_branch"),
        failure_branch=_text(data, "failure_branch"),
        entry_uid=entry.uid,
        entry_comment=entry.comment,
        constant=entry.constant,
        keys=tuple(entry.keys),
        reveal_hidden=_reveal(data.get("reveal_hidden"), kind == "code" and name == DICE_TOOL),
    )
    return tool


def builtin_dice_tool() -> ToolDef:
    """roll_dice as the engine offers it to a card whose lore describes checks but that
    declares no roll_dice of its own."""
    return ToolDef(
        name=DICE_TOOL,
        type="code",
        description="掷骰与检定，由引擎掷出并判定结果 (dice and checks, rolled by the engine)",
        parameters=copy.deepcopy(DICE_PARAMETERS),
        entry_comment="(built in)",
    )


def _reveal(value: object, dice: bool) -> bool:
    if value is None:
        return False
    if not dice:
        raise ToolDefinitionError('"reveal_hidden" applies only to the roll_dice tool')
    if not isinstance(value, bool):
        raise ToolDefinitionError(f"reveal_hidden must be true or false, not {_show(value)}")
    return value


def tool_list_text(tools: Iterable[ToolDef], lang: str = "zh") -> str:
    """The tool list appended to the planning system prompt (planning tools only)."""
    planning = [tool for tool in tools if tool.trigger == "planning"]
    zh = lang == "zh"
    if not planning:
        if zh:
            return "当前没有可用工具，tool_calls 必须为空数组 []。不要自行发明任何工具。"
        return "No tools are available: tool_calls must be an empty array []. Do not invent tools."
    lines = [_tool_line(tool, zh) for tool in planning]
    return ("可用工具：\n" if zh else "Available tools:\n") + "\n".join(lines)


def _tool_line(tool: ToolDef, zh: bool) -> str:
    description = tool.description.strip().rstrip("。.")
    head = f"- {tool.name}: " + (f"{description}{'。' if zh else '. '}" if description else "")
    properties = tool.parameters.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return head + ("无参数" if zh else "No parameters")
    params = ", ".join(f"{key}({_param_hint(value)})" for key, value in properties.items())
    return head + ("参数: " if zh else "Parameters: ") + params


def _param_hint(schema: object) -> str:
    if not isinstance(schema, Mapping):
        return "any"
    description = schema.get("description")
    if isinstance(description, str) and description.strip():
        return description.strip()
    kind = schema.get("type")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind) or "any"
    return str(kind) if kind else "any"


def _json_object(content: str) -> dict[str, Any]:
    text = content.strip()
    if not text:
        raise ToolDefinitionError("content is empty; a tool entry holds its definition as JSON")
    try:
        data = loads(text, strict=False)
    except json.JSONDecodeError as error:
        raise ToolDefinitionError(
            f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}"
        ) from None
    if not isinstance(data, dict):
        raise ToolDefinitionError(f"content must be a JSON object, not {_json_kind(data)}")
    return data


def _name(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ToolDefinitionError("missing function.name")
    name = value.strip()
    if not _NAME.match(name):
        raise ToolDefinitionError(
            f"function.name {_show(name)} may hold only letters, digits, _, - and . (64 at most)"
        )
    return name


def _trigger(value: object) -> str:
    if value is None or value == "":
        return "planning"
    trigger = _TRIGGER_ALIASES.get(str(value).strip(), str(value).strip())
    if trigger not in TRIGGERS:
        raise ToolDefinitionError(f"unknown trigger {_show(value)} (use planning or post_pipeline)")
    return trigger


def _text(data: Mapping[str, Any], key: str, label: str | None = None) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ToolDefinitionError(f"{label or key} must be text, not {_json_kind(value)}")
    return value


def _parameters(value: object, dice: bool) -> dict[str, Any]:
    if value is None:
        return copy.deepcopy(DICE_PARAMETERS) if dice else _default_parameters()
    if not isinstance(value, dict):
        raise ToolDefinitionError(
            f"function.parameters must be a JSON Schema object, not {_json_kind(value)}"
        )
    if dice and not value.get("properties"):
        return copy.deepcopy(DICE_PARAMETERS)
    return value


def _context(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(key, str) for key in value):
        raise ToolDefinitionError('"context" must be a list of context key names')
    for key in value:
        if key not in CANONICAL_CONTEXT_ORDER:
            known = ", ".join(CANONICAL_CONTEXT_ORDER)
            raise ToolDefinitionError(f"unknown context key {_show(key)} (known: {known})")
    return tuple(dict.fromkeys(value))


def _code(data: Mapping[str, Any], required: bool) -> str:
    if not required:
        return ""
    code = data.get("code")
    if not isinstance(code, str) or not code.strip():
        raise ToolDefinitionError('a code tool needs "code": the body of function (params, state)')
    problem = check_syntax(code)
    if problem is not None:
        raise ToolDefinitionError(f"code does not compile: {problem}")
    return code


def _output_tag(value: object) -> str:
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or not _TAG.match(value.strip()):
        raise ToolDefinitionError(f"output_tag {_show(value)} must be a tag name like state_panel")
    return value.strip()


def _lookback(value: object) -> int:
    if value is None or value == "":
        return 0
    number: object = value
    if isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    if isinstance(number, float) and number.is_integer():
        number = int(number)
    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
        raise ToolDefinitionError(f"tag_lookback {_show(value)} must be a whole number of turns")
    return min(number, _MAX_LOOKBACK)


def _show(value: object) -> str:
    return json.dumps(value, ensure_ascii=False) if value is not None else "(missing)"


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if value is None:
        return "null"
    return "an object"
