"""What a story says at load about regex scripts that cannot do (all) their work here.

No script is dropped in silence. Placement 3 rewrites slash commands, which a terminal does not
have. Placement 6 rewrites the model's reasoning: the backends keep a reply's reasoning apart
from its text, only in the trace; it is never shown, stored with the turn or sent back to the
model, so such a script has nothing to act on. Global scripts (the config's
``pipeline.regex_scripts`` files, ``extension_settings.regex`` of an ``--st-data`` folder's
``settings.json``) are also checked for a pattern JavaScript refuses, since ``inspect`` shows only
a card's scripts.
"""

from __future__ import annotations

from collections.abc import Sequence

from narrative_cli.domain import RegexScript
from narrative_cli.regex.quickjs_run import JsScript, pattern_errors

SLASH_COMMAND = 3
REASONING = 6
RUNS_HERE = (1, 2, 5)

_TEXT = {
    "en": {
        "reasoning": "regex script {name} ({origin}): its reasoning placement has nothing to act "
                     "on: the model's reasoning is neither shown nor sent here (only the trace "
                     "keeps it)",
        "slash": "regex script {name} ({origin}): it rewrites only slash commands, which a "
                 "terminal does not have; it does nothing here",
        "none": "regex script {name} ({origin}): it has no placement SillyTavern runs; it does "
                "nothing here",
        "broken": "regex script {name} ({origin}): it cannot run: {why}",
    },
    "zh": {
        "reasoning": "正则脚本 {name}（{origin}）：作用于“推理内容”的部分在这里没有对象——模型的推理"
                     "既不显示也不发送（只记在 trace 里）",
        "slash": "正则脚本 {name}（{origin}）：只作用于斜杠命令，终端里没有斜杠命令，这里不起作用",
        "none": "正则脚本 {name}（{origin}）：没有酒馆会运行的作用位置，这里不起作用",
        "broken": "正则脚本 {name}（{origin}）：无法运行：{why}",
    },
}
ORIGINS = {
    "en": {"card": "the card's", "global": "global"},
    "zh": {"card": "卡片自带", "global": "全局"},
}


def script_notes(
    scripts: Sequence[RegexScript], origin: str, lang: str = "en", *, check_patterns: bool = False
) -> list[str]:
    """One line per enabled script that does not (fully) run here, saying why."""
    text = _TEXT["zh" if lang == "zh" else "en"]
    where = ORIGINS["zh" if lang == "zh" else "en"].get(origin, origin)
    live = [s for s in scripts if not s.disabled]
    broken = _broken(live) if check_patterns else {}
    notes = []
    for index, script in enumerate(live):
        name = repr(script.script_name or script.find_regex)
        if index in broken:
            notes.append(text["broken"].format(name=name, origin=where, why=broken[index]))
        elif not any(p in RUNS_HERE for p in script.placement):
            only_slash = bool(script.placement) and set(script.placement) <= {SLASH_COMMAND}
            kind = "slash" if only_slash else "none"
            kind = "reasoning" if REASONING in script.placement else kind
            notes.append(text[kind].format(name=name, origin=where))
        elif REASONING in script.placement:
            notes.append(text["reasoning"].format(name=name, origin=where))
    return notes


def _broken(scripts: Sequence[RegexScript]) -> dict[int, str]:
    """Scripts (by index) that cannot run: no pattern, unknown flags, or refused by JavaScript."""
    from narrative_cli.load.regex import split_find_regex

    found: dict[int, str] = {}
    checks: list[tuple[int, JsScript]] = []
    for index, script in enumerate(scripts):
        if not script.find_regex:
            found[index] = "empty findRegex"
            continue
        body, flags = split_find_regex(script.find_regex)
        unknown = sorted(set(flags) - set("dgimsuvy"))
        if unknown:
            found[index] = f"unknown regex flags: {''.join(unknown)}"
            continue
        checks.append((index, JsScript(script.script_name, body, flags, "")))
    refused = pattern_errors([js for _, js in checks])
    for position, why in refused.items():
        found[checks[position][0]] = f"invalid regex: {why}"
    return found
