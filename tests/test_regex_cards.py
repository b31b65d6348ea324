"""Real cards' regex scripts on real turns: what the model is sent, what the player sees.

Each card from ``../shared/fixtures`` is played for two turns in a real PlaySession against the
scripted server; the writer's replies carry the card's own ``<UpdateVariable>`` block and the
MVU status placeholder, as real models answer these cards. Skipped when ``../shared`` is absent.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from narrative_cli.play import PlayOptions, PlaySession
from narrative_cli.play.commands import Dispatcher
from narrative_cli.store import SessionStore
from narrative_cli.ui.console import captured, recording_consoles
from narrative_cli.ui.screen import RichScreen
from tests import servers
from tests.conftest import fixture_file
from tests.pipeline_support import Script, block, message
from tests.servers import ScriptedServer

scripted_server = servers.scripted_server

CARDS = {
    "zh/nun-ninja-anime.png": "_.set('教堂.持有资金', 30, 45);//募捐",
    "mvu/magvar-riri-mvu-update.png": "_.set('User.当前位置', '教堂', '小镇街道');//移动",
    "zh/ai-v3.json": "_.set('系统.当前地点', '玄天宗', '后山');//去后山",
}
FORBIDDEN = ("<StatusPlaceHolderImpl", "<UpdateVariable", "</UpdateVariable>", "_.set(")
STORY = ("你推开门，晨光洒进来。", "午后的钟声响了三下。", "夜深了。")
ANALYSIS = "<Analysis>时间推进</Analysis>"  # the reply's own update block, never the card's


def reply(text: str, command: str) -> str:
    update = f"<UpdateVariable>\n<Analysis>时间推进</Analysis>\n{command}\n</UpdateVariable>"
    return f"{text}\n\n{update}\n<StatusPlaceHolderImpl/>"


@pytest.fixture
def opened() -> Iterator[list[PlaySession]]:
    plays: list[PlaySession] = []
    yield plays
    for play in plays:
        play.close()


def _play(tmp_path: Path, server: ScriptedServer, card: Path, plays: list[PlaySession]) -> str:
    options = PlayOptions(card=str(card), provider="openai", base_url=server.base_url,
                          model="scripted-model", seed=7, session="regex")  # fmt: skip
    store = SessionStore(tmp_path / "sessions.db")
    play = PlaySession.open(store, options)
    plays.append(play)
    consoles = recording_consoles(width=100)
    dispatcher = Dispatcher(play, RichScreen.for_play(play, consoles))
    dispatcher.handle("我走出门去。")
    dispatcher.handle("我回到教堂。")
    dispatcher.handle("我坐下休息。")
    return captured(consoles.out)


@pytest.mark.parametrize("file", list(CARDS))
def test_no_placeholder_or_update_block_reaches_any_prompt(
    file: str, tmp_path: Path, scripted_server: ScriptedServer, opened: list[PlaySession]
) -> None:
    card = fixture_file(file)
    writes = [reply(STORY[0], CARDS[file]), reply(STORY[1], ""), STORY[2]]
    Script({"writing": list(writes), "merged_writing": list(writes)}).install(scripted_server)
    _play(tmp_path, scripted_server, card, opened)
    assert len(scripted_server.requests) >= 6
    for request in scripted_server.requests:
        text = "\n".join(str(m["content"]) for m in request.messages)
        assert ANALYSIS not in text and CARDS[file] not in text, request.agent
        history = block(message(request, "user"), "recent_turns") or ""
        for story in STORY:  # the card's own lore may teach the format; the history must not
            at = text.find(story)
            after = text[at : at + len(story) + 200] if at >= 0 else ""
            assert not any(f in after for f in FORBIDDEN), f"{request.agent}: {after!r}"
        assert not any(f in history for f in FORBIDDEN), f"{request.agent}: {history!r}"
    writers = [r for r in scripted_server.requests if r.agent.endswith("writing")]
    assert STORY[1] in "\n".join(str(m["content"]) for m in writers[-1].messages)


LOADING = ("正在读取变量", "MVU 已加载", "click to start", "<div", "<script", "StatusPlaceHolder")


@pytest.mark.parametrize("file", list(CARDS))
def test_the_status_bar_shows_as_a_panel_of_the_variables_not_loose_words(
    file: str, tmp_path: Path, scripted_server: ScriptedServer, opened: list[PlaySession]
) -> None:
    card = fixture_file(file)
    writes = [reply(STORY[0], CARDS[file]), reply(STORY[1], ""), STORY[2]]
    Script({"writing": list(writes), "merged_writing": list(writes)}).install(scripted_server)
    shown = _play(tmp_path, scripted_server, card, opened)
    first_turn = shown[shown.index(STORY[0]) : shown.index(STORY[1])]
    assert re.search(f"{STORY[0]}\n+╭─ 状态", first_turn)  # the native panel, where the bar goes
    new_value = CARDS[file].split(", ")[-1].split(")")[0].strip("'")
    assert f"● {new_value}" in first_turn  # the value this turn changed, marked
    assert not any(marker in shown for marker in LOADING)
    panel = first_turn[first_turn.index("╭─ 状态") : first_turn.index("╯") + 1].splitlines()
    assert all(line.startswith(("╭", "│", "╰")) for line in panel)  # one box, no loose words


def test_inspect_says_which_scripts_run_here_and_why_the_others_do_not() -> None:
    from narrative_cli.load.cards import load_card
    from narrative_cli.play.inspect import inspect_report

    card = load_card(fixture_file("mvu/magvar-riri-mvu-update.png"))
    report = inspect_report(card)
    runs = {row["name"]: row["runs"] for row in report["regex_scripts"]}
    assert runs["去除变量更新"] == "prompt and display (AI output)"
    assert runs["对ai隐藏状态栏"] == "prompt (AI output)"
    assert runs["状态栏"].startswith("display (AI output); with MVU variables the native")
    assert runs["去除10楼内摘要"] == "no: disabled"
    helpers = {row["name"]: row for row in report["tavern_helper_scripts"]}
    assert helpers["var_update"]["runs"].startswith("no: MagVarUpdate's script")
    assert helpers["日替"]["runs"].startswith("no: browser JavaScript")
    assert not helpers["测测喵"]["enabled"] and helpers["测测喵"]["buttons"] == ["测测喵"]


def test_slash_command_and_reasoning_scripts_are_named_as_not_running_here() -> None:
    from narrative_cli.domain import Card
    from narrative_cli.play.inspect_scripts import regex_rows

    scripts = [
        {"scriptName": "slash", "findRegex": "/a/g", "placement": [3]},
        {"scriptName": "both", "findRegex": "/a/g", "placement": [2, 6]},
        {"scriptName": "bad", "findRegex": "/(?<=a/g", "placement": [2]},
    ]
    card = Card(name="c", extensions={"regex_scripts": scripts})
    runs = {row["name"]: row["runs"] for row in regex_rows(card)}
    assert runs["slash"] == "no: only slash commands (a terminal has none)"
    assert runs["both"] == (
        "prompt and display (AI output); not reasoning (neither shown nor sent here)"
    )
    assert runs["bad"].startswith("no: invalid regex:")
