"""How a group turn looks (issue 19, item 4): names over replies, in a colour fixed per member,
the status line naming the speaker, the roster panel; in both languages."""

from __future__ import annotations

from rich.console import Console

from narrative_cli.pipeline.events import SpeakerStarted, StageFinished, StageStarted, TextDelta
from narrative_cli.ui.console import THEME, Consoles, recording_consoles
from narrative_cli.ui.render import roster_panel, speaker_colour, speaker_header
from narrative_cli.ui.status import StatusLine, TurnView


def test_each_speakers_text_streams_under_its_name() -> None:
    consoles = recording_consoles()
    with TurnView(consoles, "en") as view:
        view(StageStarted("writing"))
        view(SpeakerStarted("Wren", "wren.png", 0))
        view(TextDelta("writing", "The compass "))
        view(TextDelta("writing", "settles."))
        view(SpeakerStarted("Pip", "pip.png", 1))
        view(TextDelta("writing", "Pip grins."))
        view(StageFinished("writing", 1.0))
    out = consoles.out.file.getvalue()  # type: ignore[attr-defined]
    assert out == "Wren:\nThe compass settles.\n\nPip:\nPip grins.\n"


def test_the_status_line_names_the_speaker_only_while_writing() -> None:
    line = StatusLine("zh", clock=lambda: 0.0)
    line.enter("writing")
    line.speaker = "温岚"
    assert line.text().plain.endswith("写作 · 温岚 · 0.0 秒")
    line.leave("writing")
    line.enter("analysis")
    assert "温岚" not in line.text().plain


def test_a_members_colour_is_fixed_by_its_key_and_off_without_colour() -> None:
    assert speaker_colour("wren.png") == speaker_colour("wren.png")
    assert len({speaker_colour(f"member-{n}.png") for n in range(12)}) > 1
    assert speaker_header("Wren", "wren.png").style == f"bold {speaker_colour('wren.png')}"
    assert speaker_header("Wren", "wren.png", color=False).style == ""
    console = Console(theme=THEME, color_system="truecolor", force_terminal=True, width=40,
                      record=True)
    console.print(speaker_header("[bold]Wren", "wren.png"))
    assert "[bold]Wren:" in console.export_text()  # a name is text, never markup


def test_the_roster_panel_in_both_languages() -> None:
    rows = (("Wren", "wren.png", "muted"), ("Pip", "pip.png", ""))
    for lang, title in (("en", "Group"), ("zh", "群组")):
        consoles = recording_consoles()
        consoles.out.print(roster_panel(rows, (("strategy", "natural"),), lang, color=False))
        text = consoles.out.export_text()
        assert title in text and "Wren" in text and "muted" in text and "natural" in text


def test_consoles_of_a_real_terminal_colour_the_name() -> None:
    console = Console(theme=THEME, color_system="truecolor", force_terminal=True, width=60,
                      record=True)
    consoles = Consoles(out=console, err=console, color=True, live=False)
    with TurnView(consoles, "en") as view:
        view(SpeakerStarted("Pip", "pip.png", 0))
        view(TextDelta("writing", "Hi."))
    assert "\x1b[1;" in console.export_text(styles=True)  # bold and coloured
