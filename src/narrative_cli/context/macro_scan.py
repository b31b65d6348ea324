"""What a card's macros and templates will do here, found before any turn runs.

``narrative inspect`` lists it and a story reports it once when it opens: every macro name we
do not run (it reaches the model as written, as SillyTavern leaves an unknown macro), every text
holding EJS templates with the functions it calls, and those calls that cannot run in a
terminal (a template calling one fails at that call, with a warning, and its text is left out).
The function lists mirror ``tools/template_runtime.js``; a test keeps the two in step.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from narrative_cli.context.ejs import TemplateSyntaxError, compile_template, has_template
from narrative_cli.context.macro_names import known_macro
from narrative_cli.domain import Card, LoreEntry
from narrative_cli.lore.routed import routes_for
from narrative_cli.lore.routing import INITVAR

if TYPE_CHECKING:
    from narrative_cli.domain_chat import Preset

_MACRO = re.compile(r"\{\{\s*([#/]?[A-Za-z_][\w-]*)")
_TEMPLATE_CODE = re.compile(r"<%[_=\-#]?(.*?)[-_]?%>", re.DOTALL)
# Read only in a text holding templates: compiled on first use (``re`` keeps them).
_CALL = r"(?<![\w.$])([A-Za-z_$][\w$]*)\s*\("
_LODASH = r"(?<![\w$])_\.([A-Za-z_$][\w$]*)"

# Helpers a template can call here (template_runtime.js ``locals``), and those that exist
# under ST-Prompt-Template but cannot run in a terminal: a call fails with a warning.
TEMPLATE_FUNCTIONS = frozenset("""
    getvar setvar incvar decvar delvar insvar getLocalVar getGlobalVar getMessageVar
    setLocalVar setGlobalVar setMessageVar incLocalVar incGlobalVar incMessageVar decLocalVar
    decGlobalVar decMessageVar delLocalVar delGlobalVar delMessageVar insertLocalVar
    insertGlobalVar insertMessageVar allVariables getChatMessage getChatMessages
    matchChatMessages getwi getWorldInfo getWorldInfoData getEnabledWorldInfoEntries define print
""".split())
UNAVAILABLE_FUNCTIONS = frozenset("""
    execute getchar getChara getchr getCharData getpreset getPresetPrompt getprp getqr
    getQuickReply getQuickReplyData activewi activateWorldInfo activateWorldInfoByKeywords
    getWorldInfoActivatedData selectActivatedEntries refreshWorldInfo evalTemplate
    compileTemplate getSyntaxErrorInfo patchVariables jsonPatch setVariableSchema saveVariables
    activateRegex injectPrompt getPromptsInjected hasPromptsInjected parseJSON getFeatures
    setFeatures resetFeatures
""".split())
LODASH_FUNCTIONS = frozenset("""
    get has set unset cloneDeep merge isEqual toPath clone isArray isPlainObject isObjectLike
    isObject isString isNumber isBoolean isFunction isNil isNull isUndefined isFinite isInteger
    isNaN isEmpty keys values entries toPairs fromPairs size includes map filter reject find
    findIndex some every forEach each reduce mapValues pick omit assign defaults defaultTo
    sortBy orderBy groupBy countBy keyBy uniq compact flatten flattenDeep difference
    intersection union castArray first head last take takeRight range times sum sumBy mean max
    min maxBy minBy clamp inRange round floor ceil random sample shuffle toNumber toString
    toInteger trim startsWith endsWith padStart padEnd repeat split join capitalize upperFirst
    identity noop
""".split())
_EXTRA_MACROS = ("comment", "time_utc")  # handled before the name lookup in context.macros
# ST-Prompt-Template's special entries (a comment prefix or an @@decorator): injections and
# variable loaders of the extension that this runner does not have.
_SPECIAL_ENTRY = re.compile(
    r"^\s*\[(GENERATE|RENDER)(:\d+|:REGEX:[^\]]*)?:(BEFORE|AFTER)\]|^\s*\[InitialVariables\]"
    r"|^\s*@INJECT|@@(generate|render)_(before|after)|@@preprocessing|@@dont_preload",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class TemplateFinding:
    """One text holding templates: where, what it calls, and what will not run."""

    where: str
    calls: tuple[str, ...]
    unavailable: tuple[str, ...]  # calls that fail here
    error: str = ""  # a compile error (unclosed tag): the text is always left out

    def to_dict(self) -> dict[str, object]:
        return {"where": self.where, "calls": list(self.calls),
                "unavailable": list(self.unavailable), "error": self.error}  # fmt: skip


@dataclass
class MacroReport:
    """Unknown macros (name → first place seen) and the texts holding templates."""

    unknown: dict[str, str] = field(default_factory=dict)
    templates: list[TemplateFinding] = field(default_factory=list)
    special: list[str] = field(default_factory=list)  # entries using the extension's own kinds

    def problems(self, lang: str = "en") -> list[str]:
        """One line per thing that will not run as written, for the start of a story."""
        lines = []
        if self.unknown:
            names = ", ".join(f"{{{{{name}}}}}（{where_words(where, lang)}）" if lang == "zh"
                              else f"{{{{{name}}}}} ({where})"
                              for name, where in self.unknown.items())  # fmt: skip
            lines.append(
                f"未知宏（按原样发送给模型）：{names}" if lang == "zh"
                else f"macros not run here (sent to the model as written): {names}"
            )  # fmt: skip
        for where in self.special:
            lines.append(
                f"{where_words(where, lang)} 使用了提示词模板插件的特殊条目（[GENERATE:…]、"
                "[RENDER:…]、@INJECT、[InitialVariables] 或 @@ 装饰器），这里不支持，按普通条目处理"
                if lang == "zh"
                else f"{where} is one of ST-Prompt-Template's special entries ([GENERATE:…], "
                "[RENDER:…], @INJECT, [InitialVariables] or an @@ decorator), which this runner "
                "does not have: it is handled as an ordinary entry"
            )  # fmt: skip
        for found in self.templates:
            if found.error:
                lines.append(_template_line(lang, found.where, found.error))
            elif found.unavailable:
                calls = ", ".join(found.unavailable)
                reason = (f"调用了终端中不可用的函数：{calls}" if lang == "zh"
                          else f"calls what cannot run in a terminal: {calls}")  # fmt: skip
                lines.append(_template_line(lang, found.where, reason))
        return lines


_WHERE = [  # how ``card_sources`` names a text, and the Chinese of each (compiled when used)
    (r'(?s)^lore entry "(.*)" \(uid (.*)\)$', "世界书条目「{0}」（uid {1}）"),
    (r'(?s)^preset prompt "(.*)"$', "预设提示词「{0}」"),
    (r"^card field (\S+)$", "角色卡字段 {0}"),
    (r"^greeting (\d+)$", "开场白 {0}"),
]


def where_words(where: str, lang: str | None) -> str:
    """A ``card_sources`` name in ``lang`` (the English name is also a key: it stays as it
    is in reports and JSON); the entry's comment, field and prompt names are kept."""
    if lang != "zh":
        return where
    for pattern, chinese in _WHERE:
        found = re.match(pattern, where)
        if found:
            return chinese.format(*found.groups())
    return where


def _template_line(lang: str, where: str, reason: str) -> str:
    if lang == "zh":
        return f"{where_words(where, lang)} 中的模板无法运行（{reason}），其内容不会发送"
    return f"template in {where} will fail ({reason}); its text will be left out"


def card_sources(card: Card, entries: Sequence[LoreEntry], preset: Preset | None) -> list[
    tuple[str, str]
]:
    """The texts that reach prompts, each with its name: card fields, lore, preset prompts."""
    sources: list[tuple[str, str]] = []
    for name in ("description", "personality", "scenario", "mes_example", "system_prompt",
                 "post_history_instructions"):  # fmt: skip
        sources.append((f"card field {name}", getattr(card, name)))
    depth = card.depth_prompt
    if depth:
        sources.append(("card field depth_prompt", depth.prompt))
    for index, greeting in enumerate(card.greetings):
        sources.append((f"greeting {index}", greeting))
    routes = routes_for(entries)
    for entry in entries:
        if not entry.disabled and routes.route_of(entry).name != INITVAR:
            sources.append((entry_name(entry), entry.content))
    if preset is not None:
        for prompt in preset.enabled_prompts():
            sources.append((f'preset prompt "{prompt.name or prompt.identifier}"', prompt.content))
    return sources


def entry_name(entry: LoreEntry) -> str:
    """How a warning names a lore entry: ``lore entry "comment" (uid N)``."""
    title = entry.comment.strip() or ", ".join(entry.keys[:2]) or "?"
    return f'lore entry "{title}" (uid {entry.uid})'


def special_entries(entries: Sequence[LoreEntry]) -> list[str]:
    """Enabled entries of ST-Prompt-Template's own kinds (by comment or @@decorator)."""
    return [entry_name(e) for e in entries if not e.disabled and (
        _SPECIAL_ENTRY.search(e.comment) or any(_SPECIAL_ENTRY.search(d) for d in e.decorators))]


def scan(sources: Iterable[tuple[str, str]], entries: Sequence[LoreEntry] = ()) -> MacroReport:
    """Unknown macros and templates in ``sources`` (``card_sources``), and the special
    entries among ``entries``."""
    report = MacroReport(special=special_entries(entries))
    for where, text in sources:
        for name in unknown_macros(text):
            report.unknown.setdefault(name, where)
        if has_template(text):
            report.templates.append(template_finding(where, text))
    return report


def unknown_macros(text: str) -> list[str]:
    """The names of ``{{…}}`` macros in ``text`` that context.macros does not run."""
    names = []
    prose = _TEMPLATE_CODE.sub("", text)  # "{{" in template code is usually JavaScript
    for match in _MACRO.finditer(prose):
        name = match.group(1)
        lowered = name.lower()
        if known_macro(name) or lowered.startswith(_EXTRA_MACROS) or name in names:
            continue
        names.append(name)
    return names


def template_finding(where: str, text: str) -> TemplateFinding:
    """What one text's templates call, and which of those calls cannot run here."""
    try:
        compile_template(text)
        error = ""
    except TemplateSyntaxError as failure:
        error = str(failure)
    code = "\n".join(m.group(1) for m in _TEMPLATE_CODE.finditer(text))
    calls: list[str] = []
    for name in re.findall(_CALL, code):
        if (name in TEMPLATE_FUNCTIONS or name in UNAVAILABLE_FUNCTIONS) and name not in calls:
            calls.append(name)
    unavailable = [name for name in calls if name in UNAVAILABLE_FUNCTIONS]
    if re.search(r"(?<![\w.$])faker\.", code):  # the extension's fake-data library
        calls.append("faker")
        unavailable.append("faker")
    for helper in re.findall(_LODASH, code):
        label = f"_.{helper}"
        if label not in calls:
            calls.append(label)
            if helper not in LODASH_FUNCTIONS:
                unavailable.append(label)
    return TemplateFinding(where, tuple(calls), tuple(unavailable), error)
