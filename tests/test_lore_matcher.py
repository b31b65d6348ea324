"""Lore key matching: SillyTavern's plain, whole-word, case and /regex/flags rules."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from narrative_cli.lore.jsregex import (
    RegexKeyError,
    RegexTimeout,
    compile_js,
    required_alternatives,
    required_literals,
    split_key,
)
from narrative_cli.lore.matcher import (
    ProbeIndex,
    compile_key,
    key_matches,
    pair_codes,
    substitute_names,
)

M = "\x01"  # SillyTavern's message-start marker in scan text


def matches(key: str, text: str, *, case: bool = False, words: bool = True) -> bool:
    compiled = compile_key(
        key,
        case_sensitive=case,
        whole_words=words,
        substitute=lambda t: substitute_names(t, "Alice", "Seraphina"),
    )
    assert compiled is not None
    return key_matches(compiled, M + text)


@pytest.mark.parametrize(
    ("key", "text", "words", "expected"),
    [
        # Chinese keys: every CJK character is a word boundary for JS's ASCII \W.
        ("露米埃尔", "我们明天去露米埃尔村吧", True, True),
        ("露米埃尔", "露米埃尔", True, True),
        ("露米埃尔", "去露米埃尔。", True, True),
        ("露米埃尔", "abc露米埃尔", True, False),  # glued to an ASCII letter
        ("露米埃尔", "露米埃尔2号", True, False),  # glued to an ASCII digit
        ("露米埃尔", "abc露米埃尔", False, True),  # whole words off: substring
        ("月影阁", "月影閣", True, False),
        # English whole words
        ("cat", "concatenate", True, False),
        ("cat", "concatenate", False, True),
        ("cat", "a cat!", True, True),
        ("cat", "the_cat", True, False),  # underscore is a word character
        ("cat", "CAT", True, True),  # case-insensitive by default
        ("magical forest", "the magical forests", True, True),  # a key with spaces: substring
        ("forest", "the magical forests", True, False),
        # macros in keys
        ("{{user}}", "Alice: hello", True, True),
        ("{{char}}", "seraphina smiles", True, True),
        ("<USER>", "alice waves", True, True),
        ("{{user}}", "bob: hello", True, False),
        # "/a/b/" has an unescaped slash: a plain key, not a regex
        ("/a/b/", "see /a/b/ here", False, True),
    ],
)
def test_plain_keys(key: str, text: str, words: bool, expected: bool) -> None:
    assert matches(key, text, words=words) is expected


def test_case_sensitive_keys_compare_exactly() -> None:
    assert matches("Eldoria", "in eldoria", case=True) is False
    assert matches("Eldoria", "in Eldoria", case=True) is True
    assert matches("Eldoria", "in ELDORIA", case=False) is True


@pytest.mark.parametrize(
    ("key", "text", "expected"),
    [
        ("/dr[ao]gon/i", "A DRAGON!", True),
        ("/dr[ao]gon/", "A DRAGON!", False),  # no i flag: case matters
        ("/cat/", "concatenate", True),  # regex keys ignore whole-word matching
        ("/^hello/", "hello", False),  # the scan text starts with \x01
        ("/\\x01hello/", "hello", True),
        ("/\\x01Bob:/", "Alice: hi", False),
        ("/\\x01{{user}}:/", "Alice: hi", True),
        ("/foo$/", "foo\n", False),  # JS $ without m: the very end only
        ("/foo$/m", "foo\nbar", True),
        ("/a.b/", "a\nb", False),  # JS . stops at line terminators
        ("/a.b/", "a\u2028b", False),
        ("/a.b/s", "a\nb", True),
        ("/\\bcat\\b/", "猫cat猫", True),  # JS \b is ASCII
        ("/\\bcat\\b/", "concat", False),
        ("/\\d/", "٣", False),  # JS \d is ASCII
        ("/\\w+/", "漢字", False),
        ("/\\s/", "a\u3000b", True),  # JS \s includes the ideographic space
        ("/(?<n>x)\\k<n>/", "xx", True),  # named groups, JS spelling
        ("/[^]/", "\n", True),
        ("/hello/y", "hello", False),  # sticky: anchored at the start (the \x01)
        ("/剑[术法]/", "他的剑术很好", True),
        ("/a\\/b/", "a/b", True),
        ("/\\e/", "e", True),  # unknown letter escapes are the letter in JS
    ],
)
def test_regex_keys_follow_javascript(key: str, text: str, expected: bool) -> None:
    assert matches(key, text) is expected


@pytest.mark.parametrize(
    ("key", "text"),
    [
        ("/(a|aa)+$/", "a" * 40 + "b"),
        ("/(a|a)+$/", "a" * 40 + "b"),
        ("/(.*?,){11}P/", "a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q and r " * 3),
    ],
)
def test_catastrophic_regex_keys_stop_at_the_time_limit(key: str, text: str) -> None:
    compiled = compile_key(key, case_sensitive=False, whole_words=True)
    assert compiled is not None and compiled.regex is not None and not compiled.problem
    with pytest.raises(RegexTimeout, match="skipped from now on"):
        key_matches(compiled, M + text)


@pytest.mark.parametrize(
    ("key", "text", "fires"),
    [
        ("/[abc/", "x /[abc/ y", True),  # JavaScript cannot compile it: plain text, as in ST
        ("/(?i)KING/", "see /(?i)king/", True),
        ("/king/ii", "the king", False),
        ("/(?<=th+e )king/", "the king", True),  # variable-width lookbehind
        ("/\\p{Script=Han}/u", "灯塔", True),
        ("/\\p{Script=Han}/", "灯塔", False),  # without u, \p is the letter p
        ("/a\\8/", "a8", True),  # a legacy escape: the digit itself
        ("/k/i", "\u212a", False),  # JS folds the Kelvin sign only with u
        ("/k/iu", "\u212a", True),
        ("/σ/i", "ς", True),
        ("/a{,2}/", "a{,2}", True),  # a brace that starts no quantifier is literal
    ],
)
def test_regex_keys_follow_javascript_exactly(key: str, text: str, fires: bool) -> None:
    compiled = compile_key(key, case_sensitive=False, whole_words=False)
    assert compiled is not None and not compiled.problem
    assert key_matches(compiled, M + text) is fires


def test_regex_sees_the_whole_text() -> None:
    text = M + "x" * 40_000 + "needle"
    regex = compile_key("/needle/", case_sensitive=False, whole_words=True)
    plain = compile_key("needle", case_sensitive=False, whole_words=True)
    assert regex is not None and plain is not None
    assert key_matches(regex, text) is True
    assert key_matches(plain, text) is False  # glued to "x": not a whole word
    assert key_matches(plain, text + " ") is False
    assert key_matches(plain, M + "x " * 20000 + "needle") is True


def test_keys_are_trimmed_like_javascript() -> None:
    bom = compile_key("\ufeffking", case_sensitive=False, whole_words=True)
    unit = compile_key("king\u001f", case_sensitive=False, whole_words=True)
    assert bom is not None and key_matches(bom, M + "the king")
    assert unit is not None and not key_matches(unit, M + "the king")


def test_empty_keys_never_match() -> None:
    assert compile_key("   ", case_sensitive=False, whole_words=True) is None
    assert (
        compile_key(
            "{{char}}",
            case_sensitive=False,
            whole_words=True,
            substitute=lambda t: substitute_names(t, "A", ""),
        )
        is None
    )


def test_split_key_and_required_literals() -> None:
    assert split_key("/abc/gi") == ("abc", "gi")
    assert split_key("/abc/q") is None
    assert split_key("abc") is None
    assert required_literals("(?:艾琳|莉莉)丝的剑") == ("丝的剑",)
    assert required_literals("x|y") == ()
    assert required_literals("ab?cd+e") == ("cd", "a", "e")


# Characters that stress the pair reading: Latin, CJK, emoji and a CJK extension B character
# (outside the BMP: two UTF-16 units), and lone surrogates (bad JSON can carry them).
ALPHABET = st.sampled_from(["a", "b", "村", "长", "老", "😀", "\U00020000", "\ud83d", "\ude00"])
WORDS = st.text(ALPHABET, min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=12), st.text(ALPHABET, max_size=40))
@example(["😀村", "村😀", "长老"], "长老😀村😀")
@example(["\ud83d\ude00", "村\ud83d"], "村\ud83d\ude00")  # lone surrogates, not an emoji
def test_probe_index_finds_exactly_the_strings_a_substring_test_finds(
    probes: list[str], text: str
) -> None:
    index = ProbeIndex(probes)
    assert index.scan(text) == {probe for probe in probes if probe in text}


def test_every_adjacent_pair_is_read_once_whatever_the_length() -> None:
    for size in range(6):
        text = "村长老ab"[:size]
        assert len(list(pair_codes(text) or [])) == max(size - 1, 0)
    assert pair_codes("a😀") is None  # outside the BMP: read pair by pair instead


def test_required_alternatives_spell_out_small_classes() -> None:
    assert required_alternatives("金[表质]") == ("金表", "金质")
    assert required_alternatives("魏[产个]好或") == ("魏产好或", "魏个好或")
    assert required_alternatives("ab+c") == ("ab",)
    assert required_alternatives("a[^b]c") == ("a",)  # a negated class is no choice of three
    assert required_alternatives("x|y") == ()
    assert len(required_alternatives("[ab][cd][ef][gh]x")) == 8  # capped: the longest run kept
    assert compile_js("金[表质]", "").search("金表") and not compile_js("金[表质]", "").search("金")
    assert compile_js("金[表质]", "i").alternatives == ()  # case folding: not spelled out


ATOMS = st.sampled_from(["a", "b", "金", "表", "[ab]", "[金表]", "[^a]", ".", "\\b", "^", "$",
                         "(?:a|b)", "(?=a)", "(b)", "\\1", "\\.", "[]", "-", "x"])  # fmt: skip
QUANTIFIERS = st.sampled_from(["", "", "", "?", "*", "+", "{2}", "{0,1}", "+?"])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(ATOMS, QUANTIFIERS), min_size=1, max_size=6),
    st.text(st.sampled_from(["a", "b", "金", "表", ".", "x", "\n", "-"]), max_size=12),
    st.sampled_from(["", "m", "s", "y", "u"]),
)
def test_a_text_without_the_alternatives_never_matches(
    atoms: list[tuple[str, str]], text: str, flags: str
) -> None:
    body = "".join(atom + quantifier for atom, quantifier in atoms)
    try:
        compiled = compile_js(body, flags)
    except RegexKeyError:
        return  # JavaScript refuses it: a plain key, never searched as a regex
    matched = (compiled.pattern.match if "y" in flags else compiled.pattern.search)(text)
    if matched is not None and compiled.alternatives:
        assert any(alternative in text for alternative in compiled.alternatives), body


def test_probe_index_finds_overlapping_and_single_character_keys() -> None:
    index = ProbeIndex(["村", "村长", "长老", "老村长", "铁匠", "x"])
    assert index.scan("老村长来了") == {"村", "村长", "老村长"}
    assert index.scan("长老们") == {"长老"}
    assert index.scan("") == set()
    assert index.scan("老村长来了") is index.scan("老村长来了")  # memoized
