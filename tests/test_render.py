"""Renderables and the live turn view, printed as text at a fixed width."""

from __future__ import annotations

import io

from rich.cells import cell_len
from rich.console import RenderableType

from narrative_cli.pipeline.accounting import AgentUsage
from narrative_cli.pipeline.events import (
    StageFinished,
    StageStarted,
    TextDelta,
    ToolResultEvent,
    TurnWarning,
)
from narrative_cli.state.engine import EventRecord
from narrative_cli.state.mvu import PatchRecord
from narrative_cli.ui import render
from narrative_cli.ui.console import captured, make_consoles, recording_consoles
from narrative_cli.ui.status import StatusLine, TurnView, stage_label
from narrative_cli.ui.trace_view import share_bar

WIDTH = 60


def text_of(renderable: RenderableType, width: int = WIDTH) -> str:
    consoles = recording_consoles(width)
    consoles.out.print(renderable)
    return captured(consoles.out)


def test_footer_shows_calls_tokens_cached_share_and_time() -> None:
    usage = AgentUsage(calls=5, prompt_tokens=1234, completion_tokens=210, cached_tokens=500)
    line = text_of(render.footer(usage, "en", elapsed_s=3.24))
    assert line.strip() == "calls 5 · tokens 1,234 in / 210 out · cached 41% · 3.2 s"


def test_footer_marks_estimates_failures_and_speaks_chinese() -> None:
    usage = AgentUsage(calls=3, failed_calls=1, prompt_tokens=90, completion_tokens=10,
                       estimated=True, latency_ms=1500)
    line = text_of(render.footer(usage, "zh"), width=120).strip()
    assert line == "调用 3 · 1 次失败 · 令牌 输入 ~90 / 输出 ~10 · 缓存 0% · 1.5 秒"
    narrow = text_of(render.footer(usage, "zh"), width=40).splitlines()  # broken between parts
    assert len(narrow) > 1 and all(cell_len(row.rstrip()) <= 40 for row in narrow)
    assert " · ".join(row.rstrip() for row in narrow) == line


def test_state_changes_list_changes_and_dim_rejected_events() -> None:
    rejected = [EventRecord.from_dict({"type": "remove_item", "event": {"type": "remove_item",
                 "params": {"item": "rope"}}, "reason": 'not enough "rope"'})]
    patches = [PatchRecord.from_dict({"patch": "_.add('x', 1);", "reason": "x does not exist"}),
               PatchRecord.from_dict({"patch": "_.set('y', 2);", "reason": "y does not exist"})]
    text = render.state_changes(["Location: Start → Lamp room"], rejected, patches, "en")
    printed = text_of(text, width=100)
    assert printed.splitlines() == [
        "State",
        "  Location: Start → Lamp room",
        "  ✗ 1 change rejected · /state",  # one line, never the event's raw JSON (#18)
        "  ✗ 2 variable updates rejected · /vars",
    ]
    dimmed = [span for span in text.spans if span.style == "rejected"]
    assert len(dimmed) == 2
    assert "✗ 1 change rejected" in text.plain[dimmed[0].start : dimmed[0].end]
    zh = text_of(render.state_changes([], rejected * 3, [], "zh"), width=100)
    assert zh.splitlines()[1] == "  ✗ 3 条状态变更被拒绝 · /state"


def test_rejected_variable_updates_fold_into_one_line_in_chinese() -> None:
    patches = [PatchRecord.from_dict({"patch": "_.set('y', 2);", "reason": "路径 y 不存在"})]
    printed = text_of(render.state_changes([], [], patches, "zh"), width=100)
    assert "1 条变量更新被拒绝 · /vars" in printed and "路径 y 不存在" not in printed


def test_state_changes_say_so_when_nothing_changed() -> None:
    assert "状态无变化" in text_of(render.state_changes([], [], [], "zh"))


def test_dice_panel_is_titled_with_the_expression_and_coloured_by_the_verdict() -> None:
    result = {
        "tool": "roll_dice", "kind": "dice", "ok": True,
        "text": "Check: 1d20+2 = [15]+2 = 17 (DC 10) → success",
        "data": {"expr": "1d20+2", "success": True, "critical": None},
    }
    panel = render.tool_panel(result, "en")
    printed = text_of(panel)
    assert "Dice 1d20+2" in printed.splitlines()[0]
    assert "→ success" in printed
    assert panel.renderable.style == "bold green"  # type: ignore[union-attr]
    failed = render.tool_panel({**result, "data": {"expr": "d20", "success": False}}, "en")
    assert failed.renderable.style == "bold red"  # type: ignore[union-attr]


def test_outputs_panel_lists_each_tool_and_is_absent_without_outputs() -> None:
    assert render.outputs_panel({"keeper_log": "  "}, "en") is None
    printed = text_of(render.outputs_panel({"keeper_log": "20:00 fog"}, "en") or "")
    assert "After the turn" in printed and "keeper_log" in printed and "20:00 fog" in printed


def test_greeting_menu_numbers_greetings_and_cuts_long_ones() -> None:
    printed = text_of(render.greeting_menu(["Short hello.", "word " * 40], "en", width=30))
    lines = [line for line in printed.splitlines() if "│" in line]
    assert "0" in lines[0] and "Short hello." in lines[0]
    assert "1" in lines[1] and "…" in lines[1]


def test_card_header_shows_facts_and_problems() -> None:
    facts = render.header_facts("en", session="3 · night", turn=2, model="m", lore=14,
                                tools=["roll_dice"])
    printed = text_of(render.card_header("Edda", facts, ["entry 9: bad tool"]))
    assert "Edda" in printed.splitlines()[0]
    for expected in ("session", "3 · night", "lore entries", "14", "roll_dice", "! entry 9"):
        assert expected in printed


def test_status_line_shows_the_stage_in_the_story_language_and_elapsed_time() -> None:
    now = [100.0]
    line = StatusLine("zh", clock=lambda: now[0])
    line.enter("planning")
    line.enter("tools")
    now[0] = 102.5
    assert line.text().plain.endswith("工具 · 2.5 秒")
    line.leave("tools")
    assert "规划" in line.text().plain
    assert stage_label("writing", "en") == "Writing" and stage_label("analysis", "zh") == "分析"


def test_turn_view_without_live_terminal_prints_tools_then_streams_text() -> None:
    consoles = recording_consoles(WIDTH)
    with TurnView(consoles, "en") as view:
        view(StageStarted("tools"))
        view(ToolResultEvent("roll_dice", "planning", True, "Check: d20 = [4] = 4"))
        view(StageFinished("tools", 1.0))
        for piece in ("The lamp ", "flares.", "\nFog."):
            view(TextDelta("writing", piece))
        view(TextDelta("planning", "not story text"))
        view(TurnWarning("analysis", "analysis reply did not parse"))
    printed = consoles.out.file.getvalue()  # type: ignore[attr-defined]
    assert printed.index("Check: d20") < printed.index("The lamp flares.\nFog.")
    assert "not story text" not in printed
    assert "! analysis reply did not parse" in printed
    assert view.printed_story and view.shown_warnings == ["analysis reply did not parse"]


def test_turn_view_holding_for_display_scripts_prints_nothing_of_the_story() -> None:
    consoles = recording_consoles(WIDTH)
    with TurnView(consoles, "en", hold=True) as view:
        view(TextDelta("writing", "raw <status>x</status>"))
    assert "raw" not in consoles.out.file.getvalue()  # type: ignore[attr-defined]
    assert not view.printed_story and view.streamed == "raw <status>x</status>"


def test_consoles_honour_no_color_flag_environment_and_plain_streams(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("COLUMNS", "72")
    plain = make_consoles(stdout=io.StringIO(), stderr=io.StringIO())
    assert not plain.color and not plain.live and plain.out.width == 72

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setenv("TERM", "xterm-256color")
    assert make_consoles(stdout=Tty(), stderr=Tty()).color
    assert make_consoles(stdout=Tty(), stderr=Tty()).live
    assert not make_consoles(True, stdout=Tty(), stderr=Tty()).color
    monkeypatch.setenv("NO_COLOR", "1")
    assert not make_consoles(stdout=Tty(), stderr=Tty()).color
    monkeypatch.setenv("TERM", "dumb")
    assert not make_consoles(stdout=Tty(), stderr=Tty()).live


def test_share_bar_fills_in_proportion() -> None:
    assert share_bar(0.5, 10) == "█████·····"
    assert share_bar(0.0, 4) == "····" and share_bar(1.5, 4) == "████"
