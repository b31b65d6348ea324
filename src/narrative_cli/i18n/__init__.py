"""Message catalogs: every word the user reads, in Chinese and English.

``t(key, lang, **values)`` is the one way a user-visible string is made::

    t("cmd.undone", "zh", turn=3)   # "已撤销。故事回到第 3 轮。"

The catalogs are plain dicts, one module per language (``i18n/en.py``, ``i18n/zh.py``,
``i18n/cli_zh.py`` for ``--help``), imported only when a language is first asked for, so
``narrative --help`` stays as light as before (``tests/test_cli_help.py``). This module
imports nothing from the application: every layer may use it.

Which language: ``--lang`` (or ``pipeline.lang``) first, then the card's language
(``load.language``), then the locale (``LC_ALL``, ``LC_MESSAGES``, ``LANG``); ``--help`` has
no card, so only ``--lang`` and the locale apply (``help_lang``).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence

LANGS = ("zh", "en")
_LOADED: dict[str, Mapping[str, str]] = {}


def norm(lang: str | None) -> str:
    """``zh`` for Chinese, ``en`` for anything else."""
    return "zh" if lang == "zh" else "en"


def catalog(lang: str | None) -> Mapping[str, str]:
    """The messages of ``lang`` (loaded once, on first use)."""
    code = norm(lang)
    if code not in _LOADED:
        _LOADED[code] = importlib.import_module(f"narrative_cli.i18n.{code}").MESSAGES
    return _LOADED[code]


def t(key: str, lang: str | None, **values: object) -> str:
    """The message ``key`` in ``lang`` with ``values`` filled in.

    A key missing from a language falls back to English (the catalog test keeps both
    complete); a key missing from both is a programming error and raises ``KeyError``."""
    messages = catalog(lang)
    text = messages[key] if key in messages else catalog("en")[key]
    return text.format(**values) if values else text


def has(key: str, lang: str | None) -> bool:
    """Whether ``lang``'s catalog has ``key`` (optional keys, e.g. a command's help)."""
    return key in catalog(lang)


def locale_lang(env: Mapping[str, str] | None = None) -> str | None:
    """``zh`` or ``en`` from the locale variables (the first one set wins), None when unset."""
    env = os.environ if env is None else env
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(name, "").strip()
        if value:
            if value in ("C", "POSIX") or value.startswith(("C.", "POSIX.")):
                return None
            return "zh" if value.lower().startswith("zh") else "en"
    return None


def choose(flag: str | None, card: str | None = None,
           env: Mapping[str, str] | None = None) -> str:
    """The UI language: ``flag`` (zh/en; auto or None defer), then ``card``, then the locale,
    then English."""
    if flag in LANGS:
        return str(flag)
    if card in LANGS:
        return str(card)
    return locale_lang(env) or "en"


def help_lang(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """The language of ``--help``: a ``--lang zh|en`` among ``argv``, else the locale."""
    flag: str | None = None
    for index, word in enumerate(argv):
        if word == "--lang" and index + 1 < len(argv):
            flag = argv[index + 1]
        elif word.startswith("--lang="):
            flag = word.split("=", 1)[1]
    return choose(flag, None, env)
