"""Role-play text rendered (#18 item 2): actions, speech, bold, code fences and lists.

Screens are drawn by a real Rich console with a fixed width and colour system and compared
with the saved screens in tests/golden/screens (``pytest --update-golden`` rewrites them).
Streaming is checked by cutting the same text into chunks at every position: what is printed
for good is the same whatever the cuts, and the stored text is the text received.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from narrative_cli.pipeline.events import TextDelta
from narrative_cli.ui.console import THEME, Consoles, recording_consoles
from narrative_cli.ui.render import story_text
from narrative_cli.ui.status import TurnView
from narrative_cli.ui.story_markup import StoryStyler

SCREENS = Path(__file__).parent / "golden" / "screens"

STORIES = {
    "en": (
        '*Edda sets the lantern on the sill and wipes the soot from its glass.* "Who goes '
        'there?" she calls into the fog, and **nobody** answers. The bell rope sways.\n'
        "She checks her list:\n"
        "- lamp oil, half a flask\n"
        "- *one* spare wick\n"
        "1. trim the wick\n"
        "2. light the lamp\n"
        "```\n"
        "keeper_log: 20:00 *fog thick*\n"
        "```\n"
        "`/state` shows the rest."
    ),
    "zh": (
        "*艾妲把提灯放在窗台上，擦去玻璃上的煤灰。*“谁在那里？”她朝雾里喊道，"
        "**没有人**回答。钟绳轻轻摇晃。「守夜人从不离开灯塔。」她低声说。\n"
        "她看了看清单：\n"
        "- 灯油，半瓶\n"
        "- *一根*备用灯芯\n"
        "1. 修剪灯芯\n"
        "```\n"
        "守夜日志：20:00 *大雾*\n"
        "```"
    ),
}


def colour_console(width: int) -> Console:
    return Console(
        file=io.StringIO(), theme=THEME, color_system="truecolor", force_terminal=True,
        highlight=False, emoji=False, width=width, record=True, no_color=False,
    )  # fmt: skip


def drawn(renderable: Text, width: int = 120) -> str:
    console = colour_console(width)
    console.print(renderable)
    return console.export_text(styles=True)


def plain(text: Text) -> str:
    return text.plain


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("width", [60, 120])
def test_saved_screens_of_styled_story_text(lang: str, width: int, update_golden: bool) -> None:
    screen = drawn(story_text(STORIES[lang], styled=True), width)
    path = SCREENS / f"story-{lang}-{width}.ansi"
    if update_golden:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(screen, encoding="utf-8")
    assert screen == path.read_text(encoding="utf-8"), f"{path} differs (pytest --update-golden)"
    console = colour_console(width)
    console.print(story_text(STORIES[lang], styled=True))
    lines = console.export_text().splitlines()
    assert all(cell_len(line) <= width for line in lines)  # CJK counts two cells
    if lang == "zh" and width == 60:
        assert max(cell_len(line) for line in lines) > 50  # wrapped near the edge, not early


def test_markers_are_dropped_and_spans_styled() -> None:
    text = StoryStyler().line('*she nods* "Who?" **now** `code` and 「好」 “嗯”')
    assert text.plain == 'she nods "Who?" now code and 「好」 “嗯”'
    styled = {text.plain[s.start : s.end]: str(s.style) for s in text.spans}
    assert styled["she nods"] == "story.action"
    assert styled['"Who?"'] == "story.speech"
    assert styled["now"] == "story.bold"
    assert styled["code"] == "story.code"
    assert styled["「好」"] == "story.speech" and styled["“嗯”"] == "story.speech"


def test_speech_inside_an_action_gets_both_styles() -> None:
    text = StoryStyler().line('*she whispers "run"*')
    assert text.plain == 'she whispers "run"'
    styles = [(text.plain[s.start : s.end], str(s.style)) for s in text.spans]
    assert ('"run"', "story.speech") in styles and ('she whispers "run"', "story.action") in styles


def test_lone_markers_lists_and_fences() -> None:
    styler = StoryStyler()
    assert styler.line("2 * 3 = 6, and a lone “quote").plain == "2 * 3 = 6, and a lone “quote"
    assert styler.line("* item").plain == "• item"
    assert styler.line("  12) step").plain == "  12) step"
    assert styler.line("```python").plain == "```python"
    inside = styler.line("x = *y* ** 2")
    assert inside.plain == "x = *y* ** 2" and str(inside.style) == "story.code"
    styler.line("```")
    assert styler.line("*out*").plain == "out"


def test_a_preview_shows_an_unclosed_marker_as_typed_until_its_partner_arrives() -> None:
    styler = StoryStyler()
    assert styler.preview("*she li").plain == "*she li"
    preview = styler.preview("*she lifts the lamp* and")
    assert preview.plain == "she lifts the lamp and"
    assert [str(s.style) for s in preview.spans] == ["story.action"]
    styler.preview("```")  # a preview never opens a fence for the lines after it
    assert styler.line("*out*").plain == "out"


@pytest.mark.parametrize("size", [1, 3, 7, 50])
def test_a_turn_streamed_on_a_colour_terminal_draws_styles_and_keeps_the_text(size: int) -> None:
    console = colour_console(60)
    consoles = Consoles(out=console, err=colour_console(60), color=True, live=True)
    text = STORIES["zh"]
    with TurnView(consoles, "zh") as view:
        for i in range(0, len(text), size):  # chunks that cut markers and CJK text
            view(TextDelta(agent="writing", text=text[i : i + size]))
    assert view.streamed == text  # what is stored is what the model wrote
    shown = console.file.getvalue()  # type: ignore[attr-defined]
    assert "\x1b[3m艾妲把提灯放在窗台上" in shown  # the action in italics, its * gone
    assert "\x1b[96m“谁在那里？”" in shown
    assert "*艾妲" not in shown.split("\x1b[?25h")[-1]  # after the live region: no raw marker


def test_plain_consoles_show_the_text_as_written() -> None:
    consoles = recording_consoles(width=60)  # NO_COLOR and pipes get these: colour off
    with TurnView(consoles, "en") as view:
        for piece in STORIES["en"].split(" "):
            view(TextDelta(agent="writing", text=piece + " "))
    out = consoles.out.file.getvalue()  # type: ignore[attr-defined]
    assert "*Edda sets the lantern" in out and "**nobody**" in out and "```" in out
    assert "\x1b[" not in out
    assert story_text("*a*").plain == "*a*"
