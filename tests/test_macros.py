"""SillyTavern macros: the core set, deterministic clock and rng, variables, unknown macros."""

from __future__ import annotations

import random
from datetime import datetime, timezone
from typing import Any

import pytest

from narrative_cli.context.macro_names import MACRO_NAMES, known_macro
from narrative_cli.context.macro_scan import unknown_macros
from narrative_cli.context.macros import _HANDLERS, MacroEnv, env_for, expand
from narrative_cli.domain import Card
from narrative_cli.domain_chat import Persona

CLOCK = datetime(2026, 5, 3, 15, 5, tzinfo=timezone.utc)  # a Sunday afternoon


def _env(**overrides: Any) -> MacroEnv:
    card = Card(
        name="Mira",
        description="{{char}} tends the lighthouse for {{user}}.",
        personality="patient, wry",
        scenario="  A storm over the harbour.  ",
        mes_example="<START>\n{{user}}: Hello?\n{{char}}: Come in.",
        system_prompt="Card prompt. {{original}}",
        post_history_instructions="Stay brief.",
        creator_notes="by someone",
        character_version="1.2",
        extensions={"depth_prompt": {"prompt": "Mira hums.", "depth": 2}},
    )
    defaults: dict[str, Any] = {
        "clock": CLOCK,
        "rng": random.Random(7),
        "outlets": {"Weather": ["Rain.", "Wind."]},
    }
    return env_for(card, Persona("Tom", "A sailor called {{user}}."), **{**defaults, **overrides})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{{user}} meets {{char}}", "Tom meets Mira"),
        ("{{USER}} / {{Char}} / {{ user }}", "Tom / Mira / Tom"),
        ("<USER> and <BOT> and <char>", "Tom and Mira and Mira"),
        ("{{description}}", "Mira tends the lighthouse for Tom."),
        ("{{personality}}|{{scenario}}", "patient, wry|A storm over the harbour."),
        ("{{persona}}", "A sailor called Tom."),
        ("{{charVersion}} {{creatorNotes}}", "1.2 by someone"),
        ("{{charDepthPrompt}}|{{charJailbreak}}", "Mira hums.|Stay brief."),
        ("{{mesExamples}}", "<START>\nTom: Hello?\nMira: Come in."),
        ("a{{newline}}b{{newline::2}}c", "a\nb\n\nc"),
        ("keep\n\n{{trim}}\n\nthis together", "keepthis together"),
        ("{{// an author's note to themselves }}visible", "visible"),
        ("x{{noop}}y", "xy"),
        ("{{outlet::Weather}}", "Rain.\nWind."),
        ("{{outlet::Nothing}}.", "."),
        ("{{reverse:abc}}", "cba"),
        ("\\{\\{user\\}\\} stays literal", "{{user}} stays literal"),
    ],
)
def test_core_macros(text: str, expected: str) -> None:
    assert expand(text, _env()) == expected


@pytest.mark.parametrize(
    "text",
    ["{{unknownMacro}}", "{{if description}}x{{/if}}", "{{ spaced unknown }}", "{{unclosed", "}}"],
)
def test_unknown_or_broken_macros_are_left_as_written(text: str) -> None:
    assert expand(text, _env()) == text


def test_the_scanners_list_of_macros_is_the_engines() -> None:
    """``inspect`` asks ``macro_names`` (light) whether a macro runs; the engine runs
    ``_HANDLERS``: a macro added to one and not the other would be reported wrongly."""
    assert set(_HANDLERS) == MACRO_NAMES
    assert known_macro("CharIfNotGroup") and not known_macro("charx")
    text = "{{user}} {{Char}} {{GetVar::x}} {{lastMessage}} {{wat}} {{random::a,b}}"
    assert unknown_macros(text) == ["wat"]
    assert expand("{{wat}}", _env()) == "{{wat}}"  # what the scan calls unknown stays as written


def test_inner_macros_resolve_inside_an_unknown_one() -> None:
    assert expand("{{whatever::{{user}}}}", _env()) == "{{whatever::Tom}}"


@pytest.mark.parametrize(
    ("text", "en", "zh"),
    [
        ("{{time}}", "3:05 PM", "15:05"),
        ("{{date}}", "May 3, 2026", "2026年5月3日"),
        ("{{weekday}}", "Sunday", "星期日"),
        ("{{isotime}} {{isodate}}", "15:05 2026-05-03", "15:05 2026-05-03"),
        ("{{time_UTC+2}}", "5:05 PM", "17:05"),
        ("{{time::UTC-5}}", "10:05 AM", "10:05"),
    ],
)
def test_time_macros_use_the_injected_clock(text: str, en: str, zh: str) -> None:
    assert expand(text, _env()) == en
    assert expand(text, _env(lang="zh")) == zh


def test_random_and_roll_draw_from_the_session_rng_reproducibly() -> None:
    text = "{{random::red::green::blue}} {{random:a, b, c}} {{roll:3d6+2}} {{roll 20}}"
    first = expand(text, _env(rng=random.Random(42)))
    again = expand(text, _env(rng=random.Random(42)))
    assert first == again
    colour, letter, total, d20 = first.split()
    assert colour in {"red", "green", "blue"} and letter in {"a", "b", "c"}
    assert 5 <= int(total) <= 20 and 1 <= int(d20) <= 20
    seeds = {
        expand("{{random::1::2::3::4::5::6::7::8}}", _env(rng=random.Random(s))) for s in range(30)
    }
    assert len(seeds) > 3  # the rng really decides


def test_random_splits_on_commas_with_escapes() -> None:
    picks = {expand("{{random:x\\,y,z}}", _env(rng=random.Random(s))) for s in range(40)}
    assert picks == {"x,y", "z"}


@pytest.mark.parametrize(
    "text", ["{{roll:0d6}}", "{{roll:d0}}", "{{roll:banana}}", "{{roll:1d6x}}"]
)
def test_invalid_rolls_are_empty(text: str) -> None:
    assert expand(text, _env()) == ""


def test_pick_is_stable_for_the_same_text_and_session() -> None:
    text = "{{pick::north::south::east::west}}"
    one = expand(text, _env(pick_seed="session-1", rng=random.Random(1)))
    assert expand(text, _env(pick_seed="session-1", rng=random.Random(99))) == one
    picks = {expand(text, _env(pick_seed=f"s{k}")) for k in range(30)}
    assert len(picks) > 1


def test_variables_are_read_and_written_left_to_right() -> None:
    variables: dict[str, Any] = {"gold": 5}
    env = _env(variables=variables)
    assert expand("{{getvar::gold}}{{setvar::gold::7}}{{getvar::gold}}", env) == "57"
    assert (
        expand("{{incvar::gold}} {{decvar::gold}} {{addvar::gold::10}}{{getvar::gold}}", env)
        == "8 7 17"
    )
    assert expand("{{addvar::log::a}}{{addvar::log::b}}{{getvar::log}}", env) == "ab"
    assert expand("{{getvar::missing}}|{{hasvar::gold}}", env) == "|true"
    assert variables["gold"] == 17


def test_original_expands_once() -> None:
    env = _env(original="PRESET MAIN")
    assert expand("{{original}} + {{original}}", env) == "PRESET MAIN + "


def test_a_field_that_quotes_itself_does_not_loop() -> None:
    env = _env()
    env.description = "I am {{description}}"
    assert expand("{{description}}", env).startswith("I am I am")


def test_plain_text_is_returned_untouched() -> None:
    text = "No macros here, just <b>markup</b> and a backslash \\ and braces { }."
    assert expand(text, _env()) == text
