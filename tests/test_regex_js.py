"""Regex scripts mean what they mean in JavaScript and SillyTavern: they run in QuickJS."""

from __future__ import annotations

from narrative_cli.domain import RegexScript
from narrative_cli.regex.scripts import RegexScripts


def script(find: str, replace: str, name: str = "s", **fields: object) -> RegexScript:
    values: dict[str, object] = {"placement": [2]}
    values.update(fields)
    return RegexScript(script_name=name, find_regex=find, replace_string=replace, **values)  # type: ignore[arg-type]


def run(find: str, replace: str, text: str, **fields: object) -> str:
    return RegexScripts([script(find, replace, **fields)], target="prompt").ai_output(text)


def test_named_groups_and_lookbehind_are_javascript_syntax() -> None:
    # Python's re spells a named group (?P<n>…) and refuses variable-width lookbehind
    assert run(r"/(?<=HP:\s*)(?<hp>\d+)/g", "[$<hp>]", "HP: 12, HP:7") == "HP: [12], HP:[7]"
    assert run(r"/(?<!\d)(?<n>\d{2,})/g", "<$<n>>", "a12 b3 c456") == "a<12> b3 c<456>"


def test_dollar_specials_follow_string_replace() -> None:
    assert run("/b/", "[$`|$&|$']", "abc") == "a[a|b|c]c"
    assert run("/b/", "$$1", "abc") == "a$1c"
    assert run("/(b)/", "{{match}}-$1-$0", "abc") == "ab-b-bc"


def test_missing_groups_and_unknown_names_give_nothing() -> None:
    assert run("/a(x)?/", "[$1|$<nope>|$7]", "ab") == "[||]b"


def test_without_g_only_the_first_match_changes_and_flags_mean_javascript() -> None:
    assert run("/o/", "0", "foo") == "f0o"
    assert run("/o/g", "0", "foo") == "f00"
    assert run("/a.b/s", "X", "a\nb") == "X"  # s: the dot takes a newline
    assert run("/^b/my", "X", "ab\nb") == "ab\nb"  # y: sticky at lastIndex 0
    assert run(r"/\u{1F600}/gu", ":)", "hi \U0001f600") == "hi :)"  # u: code points


def test_trim_strings_leave_groups_but_not_the_js_match() -> None:
    found = run(r"/<b>(.*?)<\/b>/g", "[$1|$&]", "<b>x**y</b>", trim_strings=["**"])
    assert found == "[xy|<b>x**y</b>]"


def test_macros_in_the_find_pattern_raw_and_escaped() -> None:
    macros = {"{{char}}": "A.B"}.get

    def expand(text: str) -> str:
        for key in ("{{char}}",):
            text = text.replace(key, macros(key) or key)
        return text

    raw = RegexScripts([script("/{{char}}/g", "X", substitute_regex=1)], expand, "prompt")
    escaped = RegexScripts([script("/{{char}}/g", "X", substitute_regex=2)], expand, "prompt")
    kept = RegexScripts([script("/{{char}}/g", "X", substitute_regex=0)], expand, "prompt")
    assert raw.ai_output("A.B AxB") == "X X"
    assert escaped.ai_output("A.B AxB") == "X AxB"
    assert kept.ai_output("A.B {{char}}") == "A.B X"  # 0: the macro is literal pattern text


def test_a_runaway_regex_stops_at_its_limit_is_named_and_skipped_after() -> None:
    scripts = RegexScripts(
        [script("/(a+)+$/", "X", name="runaway"), script("/!/g", "?", name="fine")],
        target="prompt",
    )
    text = "a" * 40 + "!"
    assert scripts.ai_output(text) == "a" * 40 + "?"  # the other script still ran
    assert any("runaway" in p and "ran longer than" in p for p in scripts.problems)
    assert scripts.ai_output("aaa!") == "aaa?"  # skipped now: no second wait
    assert len([p for p in scripts.problems if "runaway" in p]) == 1


def test_prompt_and_display_targets_pick_scripts_as_sillytavern() -> None:
    both = script("/a/g", "b", name="both")
    prompt_only = script("/c/g", "d", name="p", prompt_only=True)
    shown_only = script("/e/g", "f", name="m", markdown_only=True)
    off = script("/x/g", "y", name="off", disabled=True)
    prompt = RegexScripts([both, prompt_only, shown_only, off], target="prompt")
    display = RegexScripts([both, prompt_only, shown_only, off], target="display")
    assert prompt.ai_output("acex") == "bdex"
    assert display.ai_output("acex") == "bcfx"


def test_depth_limits_prompt_scripts_and_world_info_placement() -> None:
    deep = script("/a/g", "b", prompt_only=True, min_depth=2)
    lore = script("/secret/g", "", placement=[5], prompt_only=True)
    prompt = RegexScripts([deep, lore], target="prompt")
    assert prompt.ai_output("a", depth=1) == "a"
    assert prompt.ai_output("a", depth=3) == "b"
    assert prompt.world_info("the secret door") == "the  door"
    assert prompt.ai_output("secret") == "secret"


def test_many_texts_in_one_call_give_what_each_gives_alone() -> None:
    scripts = [
        script("/a/g", "b", name="deep", prompt_only=True, min_depth=2),
        script("/u/g", "U", name="user", placement=[1]),
        script("/(?<x>o)/g", "[$<x>]", name="named"),
    ]
    prompt = RegexScripts(scripts, target="prompt")
    items: list[tuple[str, int, int | None]] = [
        ("a o u", 2, 1), ("a o u", 1, 2), ("", 2, 3), ("a o u", 2, 3), ("plain", 2, None)
    ]
    assert prompt.apply_many(items) == [prompt.apply(t, p, d) for t, p, d in items]
    assert prompt.apply_many(items) == ["a [o] u", "a o U", "", "b [o] u", "plbin"]  # None: any


def test_a_runaway_regex_in_a_batch_of_texts_is_found_and_skipped() -> None:
    prompt = RegexScripts(
        [script("/(a+)+$/", "X", name="runaway"), script("/!/g", "?", name="fine")],
        target="prompt",
    )
    texts = prompt.apply_many([("a" * 40 + "!", 2, 1), ("b!", 2, 2)])
    assert texts == ["a" * 40 + "?", "b?"]
    assert [p for p in prompt.problems if "runaway" in p and "ran longer than" in p]
