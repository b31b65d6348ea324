"""The agents' prompt templates: package data in ``agents/templates/{zh,en}/*.txt``.

Templates are plain text; ``${name}`` marks a value filled in by :func:`fill`. ``labels.txt``
holds the short labels the prompt builders put around card, persona, history and plan text.
"""

from __future__ import annotations

from functools import cache, lru_cache
from pathlib import Path
from string import Template

from narrative_cli.errors import ConfigError

FOLDER = Path(__file__).parent / "templates"
LANGS: tuple[str, ...] = ("zh", "en")
LANG_CHOICES: tuple[str, ...] = ("auto", *LANGS)


def pick_language(card_lang: str | None, lang_flag: str | None = "auto") -> str:
    """The prompt language: ``--lang zh|en`` wins; ``auto`` follows the card (else English)."""
    flag = (lang_flag or "auto").strip().lower()
    if flag not in LANG_CHOICES:
        raise ConfigError(f"--lang must be one of auto, zh, en; got {lang_flag!r}")
    if flag != "auto":
        return flag
    return card_lang if card_lang in LANGS else "en"


@cache
def template(lang: str, name: str) -> str:
    """The text of template ``name`` in ``lang``, without its final newline."""
    # The package's own folder: ``importlib.resources`` would also import ``tempfile`` and
    # ``zipfile`` (about 25 ms of every command's start) for files that are always on disk.
    path = FOLDER / _lang(lang) / f"{name}.txt"
    if not path.is_file():
        raise KeyError(f"no prompt template {lang}/{name}.txt")
    return path.read_text(encoding="utf-8").rstrip("\n")


def fill(lang: str, name: str, **values: object) -> str:
    """Template ``name`` with its ``${…}`` values filled in."""
    return Template(template(lang, name)).safe_substitute({k: str(v) for k, v in values.items()})


@cache
def labels(lang: str) -> dict[str, str]:
    """``labels.txt`` as a dict (``\\n`` in a value is a newline)."""
    table: dict[str, str] = {}
    for line in template(lang, "labels").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, _, value = line.partition(" = ")
        table[key.strip()] = value.replace("\\n", "\n")
    return table


def label(lang: str, key: str, **values: object) -> str:
    """Label ``key`` with its ``{…}`` placeholders filled in."""
    return labels(lang)[key].format(**values)


@cache
def analysis_system(lang: str) -> str:
    """The merged analysis system prompt: the shared analysis prefix, then both tasks (made
    once per language, from templates read once)."""
    return template(lang, "analysis_prefix") + "\n\n" + template(lang, "analysis_system")


def catch_up_system(lang: str, rules: list[str] | None = None) -> str:
    """The catch_up system prompt (issue #17): the analysis prefix, then the batch task, with
    the card's ``[mvu_update]`` rules as mvu_extract gets them when there are any."""
    kept = [r.strip() for r in rules or () if r.strip()]
    rules_text = fill(lang, "mvu_rules", rules="\n\n".join(kept)) if kept else ""
    body = fill(lang, "catch_up_system", rules=rules_text)
    return template(lang, "analysis_prefix") + "\n\n" + body


def mvu_extract_system(lang: str, rules: list[str]) -> str:
    """The mvu_extract system prompt, with the ``[mvu_update]`` rules when there are any:
    made once per language and rules (a card's rules are the same every turn, and filling
    the templates for every turn's prompt was 0.3% of a replayed turn; #17, session seven)."""
    return _mvu_extract_system(lang, tuple(rules))


@lru_cache(maxsize=64)
def _mvu_extract_system(lang: str, rules: tuple[str, ...]) -> str:
    kept = [r.strip() for r in rules if r.strip()]
    rules_text = fill(lang, "mvu_rules", rules="\n\n".join(kept)) if kept else ""
    body = fill(lang, "mvu_extract_system", rules=rules_text)
    return template(lang, "analysis_prefix") + "\n\n" + body


def _lang(lang: str) -> str:
    return lang if lang in LANGS else "en"
