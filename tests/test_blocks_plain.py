"""``context.blocks.plain`` gives the same (frozen) block for the same name, text and mark,
and a block equal to a new one whatever it was asked before."""

from __future__ import annotations

import random

from narrative_cli.context.blocks import Block, plain


def test_a_plain_block_is_the_block_its_name_text_and_mark_make() -> None:
    rng = random.Random(9)
    names, texts = ["closing", "tool_list", "rules"], ["", "Write.", "写吧。", " x ", "Write. "]
    for _ in range(3_000):
        name, text, stable = rng.choice(names), rng.choice(texts), rng.random() < 0.5
        made = plain(name, text, stable=stable)
        assert made == Block(name=name, text=text, stable=stable)
        assert (made.name, made.text, made.tag, made.stable) == (name, text, "", stable)
    assert plain("a", "b", stable=True) is plain("a", "b", stable=True)
    assert plain("a", "b") != plain("a", "b", stable=True)


def test_a_block_is_empty_exactly_when_its_stripped_text_is() -> None:
    """``Block.empty`` tests for whitespace without copying the text: for every character of
    the Basic Multilingual Plane (every whitespace character is there) and some beyond,
    alone, twice and beside text, it says what ``not text.strip()`` says."""
    for code in [*range(0x10000), 0x1F600, 0x20000, 0xE0020]:
        char = chr(code)
        for text in (char, char * 2, char + "a", " " + char + "\n"):
            assert Block("b", text).empty is (not text.strip())
    assert Block("b", "").empty and not Block("b", " x ").empty
