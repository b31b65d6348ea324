"""The real REPL in Chinese at 60 columns (#18 item 7): tmux runs ``narrative run --lang zh``
on a card with several greetings; the greeting menu and its prompt, the toolbar, /help, the
footer and /cost are Chinese and hold at 60 columns. Skipped when tmux is missing."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.cells import cell_len

from tests import servers
from tests.conftest import ROOT, SAMPLES
from tests.servers import ScriptedServer
from tests.story_replies import NARRATIVES, StoryScript
from tests.test_repl_tmux import Terminal, at_prompt, exit_code

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
scripted_server = servers.scripted_server


class Narrow(Terminal):
    """A 60-column tmux window."""

    def __init__(self, socket: str, command: str) -> None:
        self.socket = socket
        self.tmux("new-session", "-d", "-s", "repl", "-x", "60", "-y", "40", command)


@pytest.fixture
def terminal(
    tmp_path: Path, clean_environ: Path, scripted_server: ScriptedServer
) -> Iterator[tuple[Terminal, Path]]:
    marker = tmp_path / "exit-code"
    env = f"NARRATIVE_HOME={shlex.quote(str(clean_environ))} NO_COLOR=1 TERM=xterm-256color"
    run = (
        f"{shlex.quote(sys.executable)} -m narrative_cli run "
        f"{shlex.quote(str(SAMPLES / 'lantern-keeper.png'))} --lang zh --seed 4 "
        f"--provider openai --base-url {scripted_server.base_url} --model scripted"
    )
    command = (f"cd {shlex.quote(str(ROOT))} && env -u COLUMNS {env} {run}; "
               f"echo $? > {marker}; sleep 30")  # the terminal's own width, not COLUMNS
    term = Narrow(f"narrative-zh-{os.getpid()}", command)
    try:
        yield term, marker
    finally:
        term.close()


def test_the_chinese_repl_at_60_columns(
    terminal: tuple[Terminal, Path], scripted_server: ScriptedServer
) -> None:
    term, marker = terminal
    scripted_server.reply_with(StoryScript())
    menu = term.wait_for(lambda s: "开场白 [0-" in s, "the greeting menu and its prompt")
    assert "回车选 0" in menu and "Greeting [" not in menu
    term.keys("Enter")
    toolbar = " 会话 1 · 第 0 轮 · scripted"
    opened = term.wait_for(lambda s: "/help 列出所有命令" in s and toolbar in s,
                           "the opening and the toolbar")  # fmt: skip
    assert all(cell_len(line.rstrip()) <= 60 for line in opened.splitlines())

    term.type("我爬上灯塔的楼梯。")
    term.keys("Enter")
    done = term.wait_for(lambda s: "调用 5 · 令牌" in s and at_prompt(s.split("调用 5")[-1]),
                         "the turn and its footer")  # fmt: skip
    assert NARRATIVES[0][:20] in done

    term.type("/help")
    term.keys("Enter")
    shown = term.wait_for(lambda s: "按键：" in s and at_prompt(s.split("按键：")[-1]), "the help")
    assert "/swipe [N]\n  列出上一轮的回复" in shown  # stacked: one command per block
    term.type("/cost")
    term.keys("Enter")
    note = "中设置）"  # the unpriced note: once after the first turn, once under /cost
    cost = term.wait_for(lambda s: s.count(note) == 2 and at_prompt(s.split("本会话用量")[-1]),
                         "/cost and the prompt")  # fmt: skip
    assert all(cell_len(line.rstrip()) <= 60 for line in cost.splitlines())
    assert "合计" in cost and "代理" in cost and " 秒 │" in cost
    assert "scripted 没有价格" in cost

    term.keys("C-d")
    assert exit_code(term, marker) == "0"
