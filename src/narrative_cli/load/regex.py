"""SillyTavern regex scripts (compat Appendix A): parsed and kept, checked, not yet applied.

Scripts come from a card's ``data.extensions.regex_scripts`` (and presets' extensions) or from
stand-alone exported script files. ``findRegex`` is a JavaScript ``/pattern/flags`` string;
``compile_find_regex`` translates the parts Python spells differently (named groups, flags) and
``regex_problem`` says in words why a pattern cannot be used.
"""

from __future__ import annotations

import os
import re
from typing import Any

from narrative_cli.domain import Card, RegexScript
from narrative_cli.errors import BadInput, worded
from narrative_cli.load import files
from narrative_cli.load.fields import Fields, a_json_type, json_type
from narrative_cli.logs import logger

SCRIPT_FIELDS = frozenset({"scriptName", "findRegex", "replaceString", "trimStrings",
                           "placement", "disabled", "markdownOnly", "promptOnly", "runOnEdit",
                           "substituteRegex", "minDepth", "maxDepth"})
_SLASHED = re.compile(r"^/([\s\S]+)/([a-z]*)$")
_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL}
_NAMED_GROUP = re.compile(r"\(\?<([A-Za-z_][A-Za-z0-9_]*)>")
_BACKREF = re.compile(r"\\k<([A-Za-z_][A-Za-z0-9_]*)>")


def _placement(f: Fields) -> list[int]:
    value = f.obj.get("placement")
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
        raise f.fail("placement", "field.numbers")
    return list(value)


def parse_regex_script(obj: dict[str, Any], where: str) -> RegexScript:
    """One regex script object."""
    f = Fields(obj, where, BadInput)
    substitute = obj.get("substituteRegex")
    return RegexScript(
        script_name=f.text("scriptName"), find_regex=f.text("findRegex"),
        replace_string=f.text("replaceString"), trim_strings=f.strings("trimStrings"),
        placement=_placement(f), disabled=f.flag("disabled"), markdown_only=f.flag("markdownOnly"),
        prompt_only=f.flag("promptOnly"), run_on_edit=f.flag("runOnEdit"),
        substitute_regex=int(substitute) if isinstance(substitute, (int, float, bool)) else 0,
        min_depth=f.opt_int("minDepth"), max_depth=f.opt_int("maxDepth"),
        extra={k: v for k, v in obj.items() if k not in SCRIPT_FIELDS},
    )


def parse_regex_scripts(value: object, where: str) -> list[RegexScript]:
    """Scripts from a list of script objects, or from one script object."""
    items = value if isinstance(value, list) else [value]
    scripts = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise worded(BadInput, "regex.not_object", where=where, index=index,
                         got=json_type(item))
        scripts.append(parse_regex_script(item, f"{where}: regex script {index}"))
    return scripts


def regex_scripts(card: Card) -> list[RegexScript]:
    """The card's own regex scripts; malformed ones are skipped with a warning, never fatal."""
    raw = card.extensions.get("regex_scripts")
    if not isinstance(raw, list):
        return []
    scripts = []
    for index, item in enumerate(raw):
        try:
            if not isinstance(item, dict):
                raise worded(BadInput, "regex.item_not_object", index=index,
                             item=a_json_type(item))
            scripts.append(parse_regex_script(item, f"{card.name}: regex script {index}"))
        except BadInput as exc:
            logger(__name__).warning("%s: skipped: %s", card.path or card.name, exc.message)
    return scripts


def load_regex_scripts(path: files.PathLike) -> list[RegexScript]:
    """Read an exported regex script file (one script or a list of scripts)."""
    where = os.fspath(path)
    obj = files.read_json(path, limit=files.MAX_JSON_BYTES, error=BadInput, kind="regex script")
    return parse_regex_scripts(obj, where)


def split_find_regex(find: str) -> tuple[str, str]:
    """``/pattern/flags`` → (pattern, flags); any other text is a pattern without flags."""
    match = _SLASHED.match(find)
    if match is None:
        return find, ""
    return match.group(1), match.group(2)


def compile_find_regex(find: str) -> re.Pattern[str]:
    """The Python pattern for a JavaScript ``findRegex``; raises ``re.error`` when invalid."""
    pattern, flags = split_find_regex(find)
    pattern = _BACKREF.sub(r"(?P=\1)", _NAMED_GROUP.sub(r"(?P<\1>", pattern))
    bits = 0
    for flag in flags:
        bits |= _FLAGS.get(flag, 0)
    return re.compile(pattern, bits)


def regex_problem(script: RegexScript) -> str | None:
    """Why the script's ``findRegex`` cannot be used, or None when it compiles."""
    if not script.find_regex:
        return "empty findRegex"
    unknown = sorted(set(split_find_regex(script.find_regex)[1]) - set("gimsuyd"))
    if unknown:
        return f"unknown regex flags: {''.join(unknown)}"
    try:
        compile_find_regex(script.find_regex)
    except re.error as exc:
        return f"invalid regex: {exc}"
    return None
