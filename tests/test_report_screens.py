"""Saved screens of the author tools' reports and the session list in Chinese and English at
60 and 120 columns (#18 item 7): ``inspect``, ``lore test``, ``lore lint``, ``lore check``,
``sessions list`` and ``sessions show``, drawn by the real CLI (CliRunner, the terminal width in
``COLUMNS``) from the sample cards, compared with tests/golden/screens/reports
(``pytest --update-golden`` rewrites them). Each screen also keeps the layout rule of a narrow
terminal: no line wider than the terminal, no border cut off, no identifier folded inside.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.cells import cell_len

from tests.conftest import ROOT

REPORTS = Path(__file__).parent / "golden" / "screens" / "reports"
WIDTHS = (60, 120)
LANGS = ("zh", "en")
LOCALES = {"zh": "zh_CN.UTF-8", "en": "en_US.UTF-8"}
ZH_CARD = "sample_cards/qingshi-trpg-zh.json"
EN_CARD = "sample_cards/lantern-keeper.png"
WORLD = "sample_cards/sample-world.json"

# The command of each screen, per language (a Chinese card speaks Chinese, an English one
# English; the suite and the session list follow the locale).
SCREENS: dict[str, dict[str, list[str]]] = {
    "inspect": {"zh": ["inspect", ZH_CARD],
                "en": ["inspect", EN_CARD, "--lorebook", WORLD]},
    "lore-test": {"zh": ["lore", "test", ZH_CARD, "我去沈家旧宅找账房老陈，顺便看看那口古井"],
                  "en": ["lore", "test", EN_CARD, "--lorebook", WORLD,
                         "The inspector from Saltmarsh village asks about the lamp and the sky."]},
    "lore-lint": {"zh": ["lore", "lint", ZH_CARD], "en": ["lore", "lint", EN_CARD]},
    "lore-check": {lang: ["lore", "check", "sample_cards/lantern-keeper.lore-tests.yaml"]
                   for lang in LANGS},
    "sessions-list": {lang: ["sessions", "list"] for lang in LANGS},
    "sessions-show": {lang: ["sessions", "show", "1"] for lang in LANGS},
}  # fmt: skip
WHEN = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d")  # a session's dates: the day the test ran
CARD_LINE = re.compile(r"\s+(card|角色卡)\s*[:：]")
SEED = re.compile(r"(seed: |种子：)\d+")  # an imported chat's seed is drawn at random


@pytest.fixture
def sample_session(clean_environ: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sample chat imported as session 1, with the sample card, paths relative to the
    repository (so the screens do not name a temporary folder)."""
    from narrative_cli.cli.app import app

    monkeypatch.chdir(ROOT)
    done = CliRunner().invoke(app, ["sessions", "import", "sample_cards/sample-chat.jsonl",
                                    "--card", EN_CARD, "--name", "雾中灯塔 fog watch"])
    assert done.exit_code == 0, done.output


def unwrap_card_path(text: str) -> str:
    """The card's line of ``sessions show`` on one line: it names the card by its absolute
    path, which wraps where this checkout's folder puts it, not where the layout does."""
    lines, out = text.splitlines(), []
    while lines:
        line = lines.pop(0)
        if CARD_LINE.match(line):
            while lines and not line.rstrip().endswith((")", "）")):
                line += lines.pop(0)
        out.append(line)
    return "\n".join(out) + "\n"


def draw(name: str, lang: str, width: int) -> tuple[int, str]:
    from narrative_cli.cli.app import app

    env = {"COLUMNS": str(width), "LANG": LOCALES[lang], "LC_ALL": "", "LC_MESSAGES": "",
           "NO_COLOR": "1"}  # fmt: skip
    done = CliRunner().invoke(app, SCREENS[name][lang], prog_name="narrative", env=env)
    text = unwrap_card_path(WHEN.sub("2026-01-02 03:04", done.output))
    text = text.replace(str(ROOT) + "/", "")
    text = SEED.sub(lambda found: found.group(1) + "123456789", text)
    return done.exit_code, "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


@pytest.mark.usefixtures("sample_session")
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", list(SCREENS))
def test_saved_report_screens(name: str, lang: str, width: int, update_golden: bool) -> None:
    code, screen = draw(name, lang, width)
    assert code in (0, 1), screen  # lore lint and check exit 1 on a finding
    path = REPORTS / f"{name}-{lang}-{width}.txt"
    if update_golden:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(screen, encoding="utf-8")
    assert screen == path.read_text(encoding="utf-8"), f"{path} differs (pytest --update-golden)"


FINDINGS = ("warning: ", "error: ", "警告：", "错误：")
IDENTIFIERS = ("worldinfo1", "worldinfo2", "worldinfo3", "keyword", "outlet", "initvar",
               "mvu_update", "roll_dice", "planning", "chara_card_v2", "chara_card_v3",
               "description", "first_mes", "creator_notes", "lantern-keeper.png")  # fmt: skip


@pytest.mark.usefixtures("sample_session")
@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", list(SCREENS))
def test_report_screens_hold_at_60_columns(name: str, lang: str) -> None:
    screen = draw(name, lang, 60)[1]
    lines = screen.splitlines()
    if name == "lore-lint":  # one finding a line, as a compiler prints them (grep-able)
        lines = [line for line in lines if not line.startswith(FINDINGS)]
    lines = [line for line in lines if not CARD_LINE.match(line)]  # unwrapped by draw()
    assert all(cell_len(line) <= 60 for line in lines), screen
    boxed = [line for line in lines if line and line[0] in "│┌└╭╰┏┃┡┗"]
    assert all(line[-1] in "│┐┘╮╯┓┃┩┛" for line in boxed), screen  # no border cut off
    wide = draw(name, lang, 120)[1]
    for word in IDENTIFIERS:  # an identifier shown whole at 120 is whole at 60
        assert wide.count(word) == screen.count(word), (word, screen)
    assert screen.count("…") <= wide.count("…"), screen  # nothing cut that was whole
