"""``lore.jsplain``: a pattern it calls valid is one JavaScript compiles, checked against QuickJS
on generated patterns, on hand-picked edge cases and on the real cards' regex scripts and keys;
and ``js_syntax_error`` gives QuickJS's verdict either way."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import quickjs

from narrative_cli.lore.jskeys import js_syntax_error, split_key
from narrative_cli.lore.jsplain import plainly_valid
from tests.conftest import FIXTURES

_CONTEXT = quickjs.Context()
_CONTEXT.eval("function check(b, f) { try { new RegExp(b, f); return ''; }"
              " catch (e) { return String(e.message || e); } }")  # fmt: skip
_CHECK = _CONTEXT.get("check")


def javascript_accepts(body: str, flags: str) -> bool:
    """QuickJS's own verdict, asked directly (never through the plain fast path)."""
    return str(_CHECK(body, flags)) == ""


# Tokens that build plain patterns and every way out of the plain part, so that generated
# patterns cross the border often.
TOKENS = ["a", "b", "状", "\n", " ", ".", "^", "$", "|", "(", ")", "(?:", "(?=", "(?!", "(?<=",
          "(?<n>", "[", "]", "[^", "-", "a-z", "z-a", "*", "+", "?", "{", "}", "{2}", "{1,}",
          "{2,1}", "{1,3}", "{,2}", "\\", "\\s", "\\S", "\\d", "\\w", "\\b", "\\B", "\\/",
          "\\]", "\\[", "\\-", "\\1", "\\k<n>", "\\x41", "\\u0041", "\\p{L}", "\\c", "\\0",
          "/", "<", ">", "'", '"']  # fmt: skip
FLAGS = ["", "g", "i", "gi", "gm", "s", "y", "gg", "u", "gu", "d", "v", "x"]


def generated(count: int, seed: int) -> Iterator[tuple[str, str]]:
    rng = random.Random(seed)
    for _ in range(count):
        body = "".join(rng.choice(TOKENS) for _ in range(rng.randint(0, 12)))
        yield body, rng.choice(FLAGS)


def test_every_generated_pattern_called_valid_compiles_in_javascript() -> None:
    plain = 0
    for body, flags in generated(20_000, seed=12):
        if plainly_valid(body, flags):
            plain += 1
            assert javascript_accepts(body, flags), (body, flags)
    assert plain > 1_500  # the generator does reach the plain part, often


EDGES = {  # pattern, flags: whether the plain part covers it (QuickJS decides the others)
    ("<keeper_log>[\\s\\S]*?<\\/keeper_log>", "g"): True,
    ("\\[(.+?)\\]", "gs"): True,
    ("[^\\]]+", "g"): True,
    ("^(?:a|b)+$", "i"): True,
    ("(?=a)b(?!c)", ""): True,
    ("a{2,}?", ""): True,
    ("", ""): True,
    ("()", ""): True,
    ("[]", ""): True,
    ("a**", ""): False,  # nothing to repeat: invalid
    ("*a", ""): False,
    ("(a", ""): False,
    ("a)", ""): False,
    ("a{2,1}", ""): False,
    ("[z-a]", ""): False,
    ("x", "gg"): False,
    ("x", "q"): False,
    ("(?=a)*", ""): False,  # valid in Annex B, but not plain
    ("(?<n>a)\\k<n>", ""): False,
    ("\\1(a)", ""): False,
    ("a{,2}", ""): False,
    ("a]", ""): False,
    ("a/b", ""): True,  # "/" is an ordinary character in new RegExp(...)
    ("\\ud800", ""): False,
    ("x", "u"): False,
    ("((((((((((((((((((((((((((((((((((a))))))))))))))))))))))))))))))))))", ""): False,
}


@pytest.mark.parametrize(("pattern", "plain"), EDGES.items(), ids=[repr(k) for k in EDGES])
def test_edges(pattern: tuple[str, str], plain: bool) -> None:
    body, flags = pattern
    assert plainly_valid(body, flags) is plain
    if plain:
        assert javascript_accepts(body, flags)
    # the answer callers get is QuickJS's, with or without the fast path
    assert (js_syntax_error(body, flags) is None) is javascript_accepts(body, flags)


def _real_patterns() -> Iterator[tuple[str, str]]:
    """The regex scripts' patterns and the ``/…/`` lore keys of every card and world file in
    ../shared/fixtures that our loaders read."""
    from narrative_cli.errors import NarrativeError
    from narrative_cli.load import load_card, load_lorebook, regex_scripts
    from narrative_cli.load.regex import split_find_regex

    for path in sorted(Path(FIXTURES).rglob("*")):
        if path.suffix.lower() not in (".png", ".json", ".charx"):
            continue
        try:
            card = load_card(path)
        except NarrativeError:
            try:
                book = load_lorebook(path)
            except NarrativeError:
                continue
            entries = book.entries
        else:
            yield from (split_find_regex(s.find_regex) for s in regex_scripts(card))
            entries = card.character_book.entries if card.character_book else []
        for entry in entries:
            found = (split_key(k) for k in [*entry.keys, *entry.secondary_keys])
            yield from (split for split in found if split is not None)


def test_the_real_cards_patterns_get_javascripts_verdict() -> None:
    if not Path(FIXTURES).is_dir():
        pytest.skip("../shared/fixtures is absent")
    patterns = sorted(set(_real_patterns()))
    if not patterns:
        pytest.skip("no regex script or regex key in ../shared/fixtures")
    plain = [p for p in patterns if plainly_valid(*p)]
    for body, flags in plain:
        assert javascript_accepts(body, flags), (body, flags)
    for body, flags in patterns:
        if "\ud800" <= max(body, default="a") and any("\ud800" <= c <= "\udfff" for c in body):
            continue  # a lone surrogate: the helper process's case, not this process's
        assert (js_syntax_error(body, flags) is None) is javascript_accepts(body, flags)
    assert len(plain) >= len(patterns) // 2  # most real patterns never start QuickJS
