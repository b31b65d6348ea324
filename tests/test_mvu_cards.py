"""Real MVU cards played as a user would: variables from the greeting, the writer's update applied.

Each card from ``../shared/fixtures`` is opened in a real PlaySession (SQLite file, Rich screen on
recording consoles) against the scripted server. The writer's reply ends with the card's own
``<UpdateVariable>`` format. Skipped when ``../shared`` is absent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from narrative_cli.play import PlayOptions, PlaySession
from narrative_cli.play.commands import Dispatcher, Outcome
from narrative_cli.store import SessionStore
from narrative_cli.ui.console import Consoles, captured, recording_consoles
from narrative_cli.ui.screen import RichScreen
from tests import servers
from tests.conftest import fixture_file
from tests.pipeline_support import Script, block, message, requests_of
from tests.servers import ScriptedServer

scripted_server = servers.scripted_server


@dataclass(frozen=True)
class CardCase:
    file: str
    variable: str  # a line /vars shows at the greeting
    command: str  # the writer's _.set
    change: str  # the state-diff line after it
    after: str  # a line /vars shows after it


CASES = [
    CardCase("zh/nun-ninja-anime.png", "持有资金: 30",
             "_.set('教堂.持有资金', 30, 45);//募捐", "/教堂/持有资金: 30 → 45", "持有资金: 45"),
    CardCase("mvu/magvar-riri-mvu-update.png", "当前位置: 教堂",
             "_.set('User.当前位置', '教堂', '小镇街道');//移动",
             "/User/当前位置: 教堂 → 小镇街道", "当前位置: 小镇街道"),
    CardCase("zh/ai-v3.json", "当前地点: 玄天宗",
             "_.set('系统.当前地点', '玄天宗', '后山');//去后山", "/系统/当前地点: 玄天宗 → 后山",
             "当前地点: 后山"),
]  # fmt: skip
STORY = "你推开门，晨光洒进来。"
SECOND = "午后的钟声响了三下。"


@dataclass
class Session:
    play: PlaySession
    dispatcher: Dispatcher
    consoles: Consoles
    store: SessionStore

    def run(self, line: str) -> tuple[Outcome, str]:
        before = len(captured(self.consoles.out))
        outcome = self.dispatcher.handle(line)
        return outcome, captured(self.consoles.out)[before:]


def open_session(tmp_path: Path, server: ScriptedServer, card: Path) -> Session:
    options = PlayOptions(card=str(card), provider="openai", base_url=server.base_url,
                          model="scripted-model", seed=7, session="mvu")  # fmt: skip
    store = SessionStore(tmp_path / "sessions.db")
    play = PlaySession.open(store, options)
    consoles = recording_consoles(width=120)
    return Session(play, Dispatcher(play, RichScreen.for_play(play, consoles)), consoles, store)


@pytest.fixture
def sessions(tmp_path: Path) -> Iterator[list[Session]]:
    opened: list[Session] = []
    yield opened
    for session in opened:
        session.play.close()


def reply(text: str, block: str) -> str:
    return f"{text}\n\n<UpdateVariable>\n<Analysis>时间推进</Analysis>\n{block}\n</UpdateVariable>"


@pytest.mark.parametrize("case", CASES, ids=[c.file for c in CASES])
def test_real_mvu_card_starts_with_variables_and_applies_the_writers_set(
    case: CardCase, tmp_path: Path, scripted_server: ScriptedServer, sessions: list[Session]
) -> None:
    card = fixture_file(case.file)
    writes = [reply(STORY, case.command), SECOND]
    Script({"writing": list(writes), "merged_writing": list(writes)}).install(scripted_server)
    game = open_session(tmp_path, scripted_server, card)
    sessions.append(game)

    _, shown = game.run("/vars")
    assert "（空状态）" not in shown and case.variable in shown

    outcome, shown = game.run("我走出门去。")
    assert outcome == Outcome()
    assert STORY in shown
    assert "<UpdateVariable>" not in shown and "_.set(" not in shown and "时间推进" not in shown
    assert case.change in shown
    _, shown = game.run("/vars")
    assert case.after in shown

    record = game.store.record(game.play.session_id, 1)
    assert record["narrative"] == STORY
    assert case.command in record["mvu_block"]
    assert record["mvu_applied"] == [{"patch": case.command, "accepted": True}]

    game.play.export(tmp_path / "chat.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "chat.jsonl").read_text("utf-8").splitlines()]
    reply_line = next(line for line in lines[1:] if STORY in str(line.get("mes")))
    assert case.command in reply_line["mes"]  # SillyTavern's MVU finds the block in the message
    game.play.export(tmp_path / "dump.json")
    dump = json.loads((tmp_path / "dump.json").read_text("utf-8"))
    snapshot = dump["turns"][-1]["swipes"][0]["snapshot"]
    assert case.after.split(": ")[1] in json.dumps(snapshot["mvu"], ensure_ascii=False)

    game.run("我回到教堂。")
    second = requests_of(scripted_server, "writing") or requests_of(
        scripted_server, "merged_writing"
    )
    history = block(message(second[-1], "user"), "recent_turns") or ""
    assert STORY in history
    assert "<UpdateVariable>" not in history and "_.set(" not in history
    assert "（空状态）" not in history


BAD_BLOCK = "\n".join([
    "_.set('教堂.持有资金, 45);//引号不配对",
    "_.set('教堂.不存在', 1);//未知路径",
    "_.set('教堂.修缮进度', 5, '很多');//类型不对",
    "_.set('教堂.民声', 15, NaN);//非数字",
    "_.add('教堂.累计捐款', Infinity);//无穷大",
    "_.set('环境.时段', '清晨', '上午');//正常",
])  # fmt: skip


def test_malformed_updates_are_rejected_with_reasons_and_the_turn_goes_on(
    tmp_path: Path, scripted_server: ScriptedServer, sessions: list[Session]
) -> None:
    card = fixture_file("zh/nun-ninja-anime.png")
    writes = [reply(STORY, BAD_BLOCK)]
    Script({"writing": writes, "merged_writing": list(writes)}).install(scripted_server)
    game = open_session(tmp_path, scripted_server, card)
    sessions.append(game)

    outcome, shown = game.run("我打扫礼拜堂。")
    assert outcome == Outcome() and STORY in shown
    assert "/环境/时段: 清晨 → 上午" in shown
    assert "5 条变量更新被拒绝 · /vars" in shown
    assert game.store.resume(game.play.session_id).number == 1

    _, shown = game.run("/vars")
    assert "时段: 上午" in shown
    assert "修缮进度: 5" in shown and "民声: 15" in shown and "累计捐款: 0" in shown
    reasons = ["引号或括号不配对", "路径 教堂.不存在 不存在"]
    reasons += ["教堂.修缮进度 是数字，'很多' 不是数字"]
    reasons += [f"教堂.{name} 的新值不是有限数字" for name in ("民声", "累计捐款")]
    for reason in reasons:
        assert reason in shown


def test_continue_keeps_the_update_of_the_reply_it_extends(
    tmp_path: Path, scripted_server: ScriptedServer, sessions: list[Session]
) -> None:
    card = fixture_file("zh/nun-ninja-anime.png")
    writes = [reply(STORY, "_.set('教堂.持有资金', 30, 45);//募捐"), SECOND]
    Script({"writing": list(writes), "merged_writing": list(writes)}).install(scripted_server)
    game = open_session(tmp_path, scripted_server, card)
    sessions.append(game)
    game.run("我去募捐。")
    outcome, shown = game.run("/continue")
    assert outcome == Outcome() and SECOND in shown and "<UpdateVariable>" not in shown
    record = game.store.record(game.play.session_id, 1)
    assert record["narrative"] == f"{STORY}\n\n{SECOND}"
    assert "_.set('教堂.持有资金', 30, 45);" in record["mvu_block"]
    _, shown = game.run("/vars")
    assert "持有资金: 45" in shown


def test_inspect_says_mvu_is_detected_shows_its_variables_and_marks_disabled_entries() -> None:
    from click.testing import CliRunner

    from narrative_cli.cli.app import app

    card = fixture_file("zh/nun-ninja-anime.png")
    result = CliRunner().invoke(app, ["inspect", str(card), "--json"])
    assert result.exit_code == 0, result.output
    mvu = json.loads(result.output)["mvu"]
    assert mvu["detected"] is True and mvu["problems"] == []
    assert mvu["variables"]["教堂"]["持有资金"] == 30
    assert [row["disabled"] for row in mvu["initvar"]] == [True]

    shown = CliRunner().invoke(app, ["inspect", str(card)], env={"COLUMNS": "160"}).output
    # a Chinese card's report is in Chinese (#18 item 7)
    assert "检测到 MVU：1 个 [InitVar] 条目（1 个已禁用" in shown
    assert "持有资金: 30" in shown
    assert "initvar（已禁用）" in shown


def test_commands_the_player_types_apply_before_the_writer_sees_the_state(
    tmp_path: Path, scripted_server: ScriptedServer, sessions: list[Session]
) -> None:
    card = fixture_file("zh/nun-ninja-anime.png")
    Script({"writing": STORY, "merged_writing": STORY}).install(scripted_server)
    game = open_session(tmp_path, scripted_server, card)
    sessions.append(game)
    outcome, shown = game.run("我数了数钱。_.set('教堂.持有资金', 30, 99);//盘点")
    assert outcome == Outcome() and "/教堂/持有资金: 30 → 99" in shown
    writer = requests_of(scripted_server, "writing") or requests_of(
        scripted_server, "merged_writing"
    )
    assert "持有资金: 99" in (block(message(writer[-1], "user"), "state_summary") or "")
