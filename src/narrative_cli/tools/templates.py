"""Render a turn's EJS templates (ST-Prompt-Template) in the QuickJS sandbox, in one call.

``context.ejs`` compiles each template to a JavaScript body; ``template_runtime.js`` (package
data) is the context the templates see: ``getvar``/``setvar`` and friends over the session's
variables (MVU's ``stat_data`` as message variables, the chat's variables as local ones),
``getwi`` over the story's lore entries, a lodash subset as ``_``, ``print``, a seeded
``Math.random`` and a fixed ``Date``. Every template of the turn runs in one sandbox call; the
time limit covers them all. A template that runs away is found from the script's progress
mark and the rest run again without it, so one bad entry costs only its own text.

Failures never raise: each comes back as a warning naming the template, and its output is
``None`` so the caller drops the text instead of sending template code to the model.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from narrative_cli.context.ejs import TemplateSyntaxError, compile_template, has_template
from narrative_cli.domain import LoreEntry
from narrative_cli.tools.sandbox import DEFAULT_MEMORY_LIMIT, SandboxResult, run_program

TIME_LIMIT = 1.0  # seconds for all the templates of one turn

_FAILED = {
    "en": "template in {name} failed ({reason}); its text was left out of the prompt",
    "zh": "{name} 中的模板运行失败（{reason}），其内容未发送给模型",
}
_KIND = {
    "en": {"syntax": "syntax error: {detail}", "exception": "{detail}"},
    "zh": {"syntax": "语法错误：{detail}", "exception": "{detail}"},
}


@dataclass(frozen=True)
class TemplateJob:
    """One text holding templates and the name a warning gives it (``lore entry "X"``)."""

    name: str
    text: str


@dataclass(frozen=True)
class LoreData:
    """A lore entry as ``getwi`` and ``getWorldInfoData`` see it."""

    uid: int | str
    comment: str
    content: str
    world: str = ""
    disable: bool = False
    constant: bool = False
    key: tuple[str, ...] = ()


def lore_data(entry: LoreEntry) -> LoreData:
    """A story's lore entry as templates see it."""
    return LoreData(uid=entry.uid, comment=entry.comment, content=entry.content,
                    world=entry.source, disable=entry.disabled, constant=entry.constant,
                    key=tuple(entry.keys))  # fmt: skip


@dataclass(frozen=True)
class TemplateContext:
    """What templates read: variables by scope, lore, names, and the seed and clock."""

    local: Mapping[str, Any] = field(default_factory=dict)  # the chat's variables
    global_: Mapping[str, Any] = field(default_factory=dict)
    message: Mapping[str, Any] = field(default_factory=dict)  # MVU: stat_data, display_data…
    lore: Sequence[LoreData] = ()
    user: str = "User"
    char: str = ""
    last_user: str = ""
    last_char: str = ""
    chat: Sequence[tuple[str, str]] = ()  # (role, text) from the greeting to this turn's input
    seed: int = 0
    now_ms: int = 0
    lang: str = "en"


@dataclass
class TemplateBatch:
    """Outputs in job order (None = failed, leave the text out), warnings, variables after."""

    outputs: list[str | None]
    warnings: list[str]
    local: dict[str, Any]
    global_: dict[str, Any]
    elapsed_ms: float = 0.0


def render_templates(
    jobs: Sequence[TemplateJob],
    context: TemplateContext,
    time_limit: float = TIME_LIMIT,
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
) -> TemplateBatch:
    """Render ``jobs`` (texts without a tag come back unchanged, without a sandbox call)."""
    started = time.perf_counter()
    lang = "zh" if context.lang == "zh" else "en"
    batch = TemplateBatch([j.text for j in jobs], [], dict(context.local), dict(context.global_))
    bodies: dict[int, str] = {}
    for index, job in enumerate(jobs):
        if not has_template(job.text):
            continue
        try:
            bodies[index] = compile_template(job.text)
        except TemplateSyntaxError as error:
            _fail(batch, index, job.name, _KIND[lang]["syntax"].format(detail=error), lang)
    if bodies:
        _run(batch, jobs, bodies, context, time_limit, memory_limit, lang)
    batch.elapsed_ms = (time.perf_counter() - started) * 1000
    return batch


def syntax_errors(texts: Sequence[str]) -> list[str | None]:
    """Per text, what stops its templates before they run (an unclosed tag, a JavaScript
    syntax error), or None; nothing is run. One sandbox call for them all."""
    errors: list[str | None] = [None] * len(texts)
    bodies: dict[int, str] = {}
    for index, text in enumerate(texts):
        try:
            bodies[index] = compile_template(text)
        except TemplateSyntaxError as error:
            errors[index] = str(error)
    if not bodies:
        return errors
    payload = {"templates": list(bodies.values()), "vars": {}, "names": {"user": "", "char": ""},
               "seed": 0, "now": 0, "check": True}
    result = run_program(_runtime(), json.dumps(payload, ensure_ascii=False))
    if result.ok and isinstance(result.value, dict):
        for index, item in zip(bodies, result.value.get("results", []), strict=False):
            if not item.get("ok"):
                errors[index] = str(item.get("detail", ""))
    return errors  # when the sandbox cannot start, the turn says so


def check_templates(jobs: Sequence[TemplateJob], lang: str = "en") -> list[str]:
    """One line per template that cannot run, naming it (for the start of a story)."""
    lang = "zh" if lang == "zh" else "en"
    errors = syntax_errors([job.text for job in jobs])
    return [_problem(job.name, _KIND[lang]["syntax"].format(detail=error), lang)
            for job, error in zip(jobs, errors, strict=True) if error]


def _problem(name: str, reason: str, lang: str) -> str:
    if lang == "zh":
        return f"{name} 中的模板无法运行（{reason}），其内容不会发送"
    return f"template in {name} will fail ({reason}); its text will be left out"


def _run(
    batch: TemplateBatch,
    jobs: Sequence[TemplateJob],
    bodies: dict[int, str],
    context: TemplateContext,
    time_limit: float,
    memory_limit: int,
    lang: str,
) -> None:
    order = sorted(bodies)
    lore = _lore_payload(context.lore) if _reads_lore(bodies.values()) else []
    notes: list[str] = []
    alone = False  # after a failure that says nothing of which template caused it
    while order:
        batch_order = order[:1] if alone else order
        payload = _payload(context, batch, [bodies[i] for i in batch_order], lore)
        result = run_program(_runtime(), json.dumps(payload, ensure_ascii=False), time_limit,
                             memory_limit)
        done, failed_at, reason = _read(result, lang)
        if failed_at is None and not result.ok and not alone and len(order) > 1:
            alone = True  # the engine crashed or could not say: find the culprit one by one
            continue
        for position, item in enumerate(done.get("results", [])):
            _store(batch, order[position], jobs[order[position]].name, item, lang)
        vars_ = done.get("vars") or {}
        batch.local = dict(vars_.get("local", batch.local))
        batch.global_ = dict(vars_.get("global", batch.global_))
        notes += [n for n in done.get("notes", []) if n not in notes]
        if result.ok and not alone:
            break
        if not result.ok:
            failed_at = failed_at or 0
            _fail(batch, order[failed_at], jobs[order[failed_at]].name, reason, lang)
        order = order[(failed_at or 0) + 1 :]
    batch.warnings += notes


def _read(result: SandboxResult, lang: str) -> tuple[dict[str, Any], int | None, str]:
    """The script's result, and which template stopped it (with why) when its progress mark
    says so (None when it finished, or when nothing says which one)."""
    if result.ok and isinstance(result.value, dict):
        return result.value, None, ""
    progress: dict[str, Any] = {}
    if isinstance(result.value, str):
        try:
            progress = json.loads(result.value)
        except ValueError:
            progress = {}
    index = progress.get("index")
    return progress, index if isinstance(index, int) else None, result.message(lang)


def _store(batch: TemplateBatch, index: int, name: str, item: dict[str, Any], lang: str) -> None:
    if item.get("ok"):
        batch.outputs[index] = str(item.get("text", ""))
        return
    kind = "syntax" if item.get("kind") == "syntax" else "exception"
    _fail(batch, index, name, _KIND[lang][kind].format(detail=item.get("detail", "")), lang)


def _fail(batch: TemplateBatch, index: int, name: str, reason: str, lang: str) -> None:
    batch.outputs[index] = None
    batch.warnings.append(_FAILED[lang].format(name=name, reason=reason))


def _payload(
    context: TemplateContext, batch: TemplateBatch, bodies: list[str], lore: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "templates": bodies,
        "vars": {"local": batch.local, "global": batch.global_, "message": dict(context.message)},
        "lore": lore,
        "names": {"user": context.user, "char": context.char},
        "last_user": context.last_user,
        "last_char": context.last_char,
        "chat": [{"role": role, "content": text} for role, text in context.chat],
        "seed": context.seed & 0xFFFFFFFF,
        "now": context.now_ms,
    }


_LORE_READERS = ("getwi", "getWorldInfo", "getEnabledWorldInfoEntries")


def _reads_lore(bodies: Any) -> bool:
    """Lore goes into the sandbox only when a template can read it (it can be large)."""
    return any(name in body for body in bodies for name in _LORE_READERS)


def _lore_payload(entries: Sequence[LoreData]) -> list[dict[str, Any]]:
    rows = []
    for entry in entries:
        row: dict[str, Any] = {
            "uid": entry.uid, "comment": entry.comment, "content": entry.content,
            "world": entry.world, "disable": entry.disable, "constant": entry.constant,
            "key": list(entry.key),
        }  # fmt: skip
        if has_template(entry.content):
            try:
                row["body"] = compile_template(entry.content)
            except TemplateSyntaxError:
                row["body"] = "throw new SyntaxError('the entry\\'s template has an unclosed tag');"
        rows.append(row)
    return rows


@cache
def _runtime() -> str:
    return Path(__file__).with_name("template_runtime.js").read_text("utf-8")
