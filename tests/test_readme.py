"""README.md and its Chinese twin README.zh-CN.md stay in step.

A reader of either README must get the same commands, the same slash commands and the same pointers
into docs/: the prose is translated, the things a user types are not.
"""

from __future__ import annotations

import re

import pytest

from .conftest import ROOT

EN = ROOT / "README.md"
ZH = ROOT / "README.zh-CN.md"


def _text(path):  # type: ignore[no-untyped-def]
    return path.read_text(encoding="utf-8")


def _install_commands(text: str) -> list[str]:
    return re.findall(r"^    (python3 -m venv .*)$", text, flags=re.M)


def _narrative_commands(text: str) -> set[str]:
    """Every `narrative <command> [<subcommand>]` a README shows in a code block or inline."""
    found = set()
    for match in re.finditer(r"narrative ((?:[a-z]+)(?: (?:[a-z|]+))?)", text):
        words = match.group(1).split()
        found.add(" ".join(w for w in words if re.fullmatch(r"[a-z|]+", w)))
    return {f.split()[0] for f in found}


def _slash_commands(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w/.])/([a-z]+)\b", text)) - {"v1", "bin", "models"}


def _doc_links(text: str) -> set[str]:
    return set(re.findall(r"`?(docs/[\w.\-]+\.md)`?", text))


def test_the_chinese_twin_exists_and_points_back() -> None:
    assert ZH.exists(), "README.zh-CN.md is the Chinese twin of README.md"
    assert "README.md" in _text(ZH)
    assert "README.zh-CN.md" in _text(EN)


@pytest.mark.parametrize(
    "extract", [_install_commands, _narrative_commands, _slash_commands, _doc_links]
)
def test_both_readmes_show_the_same_things_to_type(extract) -> None:  # type: ignore[no-untyped-def]
    english = extract(_text(EN))
    assert english, f"{extract.__name__} finds nothing in README.md"
    assert english == extract(_text(ZH))
