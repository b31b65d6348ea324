"""The variable macros real cards use (TavernHelper's get/format_*_variable, SillyTavern's
global variables) and the scan that reports macros we do not run."""

from __future__ import annotations

from narrative_cli.context.macro_scan import card_sources, scan, unknown_macros
from narrative_cli.context.macros import MacroEnv, expand
from narrative_cli.domain import Card, LoreEntry

STAT = {"理": {"好感度": [65, "0-100"], "情绪": "平静"}, "地点": "教堂"}


def env(**fields: object) -> MacroEnv:
    return MacroEnv(user="阿明", char="理", message_variables={"stat_data": STAT},
                    **fields)  # type: ignore[arg-type]


def test_get_message_variable_reads_mvu_paths() -> None:
    e = env()
    assert expand("{{get_message_variable::stat_data.理.好感度[0]}}", e) == "65"
    assert expand("{{get_message_variable::stat_data.地点}}", e) == "教堂"
    assert expand("{{get_message_variable::stat_data.理}}", e) == (
        '{"好感度": [65, "0-100"], "情绪": "平静"}')
    assert expand("[{{get_message_variable::stat_data.nothing}}]", e) == "[null]"


def test_format_message_variable_is_yaml_lined_up_under_the_macro() -> None:
    text = expand("{{format_message_variable::stat_data}}", env())
    assert text.splitlines() == ["理:", "  好感度:", "    - 65", "    - 0-100", "  情绪: 平静",
                                 "地点: 教堂"]
    text = expand("状态：{{format_message_variable::stat_data.理}}", env())
    # three characters before the macro: continuation lines get three more spaces
    assert text.splitlines() == ["状态：好感度:", "     - 65", "     - 0-100", "   情绪: 平静"]


def test_meta_keys_are_not_shown() -> None:
    e = MacroEnv(message_variables={"stat_data": {"a": {"$meta": {"extensible": True}, "b": 1}}})
    assert expand("{{get_message_variable::stat_data}}", e) == '{"a": {"b": 1}}'
    assert expand("{{format_message_variable::stat_data.a}}", e) == "b: 1"


def test_chat_and_global_variables_are_separate() -> None:
    e = env(variables={"mood": "好"})
    text = ("{{setglobalvar::g::1}}{{incglobalvar::g}}{{addglobalvar::g::3}}"
            "{{getglobalvar::g}}/{{getvar::g}}/{{getvar::mood}}/{{get_chat_variable::mood}}"
            "/{{hasglobalvar::g}}")
    assert expand(text, e) == "25//好/好/true"  # {{incglobalvar}} prints the new value
    assert e.global_variables == {"g": 5}


def test_last_messages() -> None:
    e = env(last_user_message="你好", last_char_message="欢迎")
    assert expand("{{lastUserMessage}}|{{lastCharMessage}}", e) == "你好|欢迎"


def test_unknown_macros_are_named_once_each() -> None:
    text = "{{user}} {{sim_tracker}} {{roll:1d6}} {{// note}} {{#if x}}{{/if}} {{sim_tracker}}"
    assert unknown_macros(text) == ["sim_tracker", "#if", "/if"]
    assert unknown_macros("<% if (a) {{ go(); }} %> {{words}}") == ["words"]


def test_scan_skips_disabled_entries_and_initvar_but_reports_the_rest() -> None:
    card = Card(name="理", description="{{words}}")
    entries = [
        LoreEntry(uid=1, comment="off", content="{{hidden}}", disabled=True),
        LoreEntry(uid=2, comment="[InitVar]", content="{{init_only}}"),
        LoreEntry(uid=3, comment="on", content="{{task}} <% getchar() %>"),
    ]
    report = scan(card_sources(card, entries, None))
    assert report.unknown == {"words": "card field description", "task": 'lore entry "on" (uid 3)'}
    lines = report.problems("en")
    assert lines[0].startswith("macros not run here")
    assert "getchar" in lines[1] and 'lore entry "on" (uid 3)' in lines[1]
    assert report.problems("zh")[0].startswith("未知宏")


def test_last_user_message_is_this_turns_input_when_a_turn_is_built() -> None:
    from narrative_cli.context.expand import apply_macros
    from narrative_cli.context.inputs import HistoryTurn, PromptInputs

    inputs = PromptInputs(
        card=Card(name="理", description="{{lastUserMessage}}|{{lastCharMessage}}|{{lastMessage}}"),
        user_input="我回来了",
        history=[HistoryTurn(0, "", "欢迎"), HistoryTurn(1, "你好", "你好呀")],
    )
    assert apply_macros(inputs).card.description == "我回来了|你好呀|我回来了"


def test_special_entries_of_the_template_extension_are_reported() -> None:
    entries = [
        LoreEntry(uid=1, comment="[RENDER:AFTER]状态栏", content="x"),
        LoreEntry(uid=2, comment="[GENERATE:0:BEFORE]", content="x"),
        LoreEntry(uid=3, comment="plain", content="x", decorators=["@@preprocessing"]),
        LoreEntry(uid=4, comment="[RENDER:BEFORE] off", content="x", disabled=True),
        LoreEntry(uid=5, comment="普通条目", content="x"),
    ]
    report = scan([], entries)
    assert report.special == ['lore entry "[RENDER:AFTER]状态栏" (uid 1)',
                              'lore entry "[GENERATE:0:BEFORE]" (uid 2)',
                              'lore entry "plain" (uid 3)']
    assert "ordinary entry" in report.problems("en")[0]
