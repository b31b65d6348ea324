"""Both languages on the sub-command report screens (#18 item 7): ``narrative inspect`` and
``narrative lore test`` on a Chinese card print no English UI words; on an English card they
print what they printed before (the other test files compare the English text).
"""

from __future__ import annotations

import re
from typing import Any

from typer.testing import CliRunner

from tests.conftest import SAMPLES

WORD = re.compile(r"[A-Za-z][A-Za-z_-]*(?:'[A-Za-z]+)?")
ZH_CARD = SAMPLES / "qingshi-trpg-zh.json"
ENV = {"COLUMNS": "120", "LANG": "en_US.UTF-8", "LC_ALL": "", "LC_MESSAGES": ""}

# Names the report shows as they are: spec and route identifiers, file formats, products.
IDENTIFIERS = {"chara_card_v2", "chara_card_v3", "json", "png", "chara", "ccv3", "uid",
               "worldinfo1", "worldinfo2", "worldinfo3", "keyword", "outlet", "tool", "ui",
               "initvar", "mvu_update", "disabled", "unrouted", "InitVar", "MVU", "MagVarUpdate",
               "zh", "EJS", "ST-Prompt-Template", "getvar", "setvar", "C", "S", "worldinfo"}  # fmt: skip


def _run(*args: str) -> Any:
    from narrative_cli.cli.app import app

    return CliRunner().invoke(app, list(args), prog_name="narrative", env=ENV)


def _leaks(shown: str, *allowed_texts: str) -> list[str]:
    allowed = IDENTIFIERS | set(WORD.findall(" ".join(allowed_texts)))
    return sorted({w for w in WORD.findall(shown) if w not in allowed})


def _card_words(path: Any) -> str:
    """Every word the card's own file holds (names, comments, keys, tools: shown as written)."""
    return f"{path.read_text(encoding='utf-8')} {path}"


def test_inspect_on_a_chinese_card_speaks_chinese() -> None:
    done = _run("inspect", str(ZH_CARD))
    assert done.exit_code == 0, done.output
    assert "词元估算" in done.output and "Token estimates" not in done.output
    assert _leaks(done.output, _card_words(ZH_CARD)) == [], done.output


def test_inspect_on_an_english_card_stays_english_in_a_chinese_locale() -> None:
    from narrative_cli.cli.app import app

    card = str(SAMPLES / "lantern-keeper.png")
    english = _run("inspect", card)
    chinese_locale = CliRunner().invoke(app, ["inspect", card], prog_name="narrative",
                                        env={**ENV, "LANG": "zh_CN.UTF-8"})  # fmt: skip
    assert english.exit_code == chinese_locale.exit_code == 0
    assert "Token estimates" in english.output
    assert chinese_locale.output == english.output  # the card's language wins over the locale
