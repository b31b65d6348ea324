"""A Rich panel for one dice roll: the result line, the dice, and the verdict in colour."""

from __future__ import annotations

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from narrative_cli.tools.dice import DiceRoll

_LABELS = {
    "zh": {"title": "掷骰", "mode": "模式", "dice": "骰子", "total": "总计", "verdict": "结果"},
    "en": {"title": "Dice", "mode": "mode", "dice": "dice", "total": "total", "verdict": "verdict"},
}
_MODES_ZH = {"normal": "普通", "advantage": "优势", "disadvantage": "劣势", "exploding": "爆炸"}


def verdict_style(rolled: DiceRoll) -> str:
    """Bold yellow for criticals, green for success, red for failure, dim without a DC."""
    if rolled.critical is not None:
        return "bold yellow" if rolled.critical == "success" else "bold magenta"
    if rolled.success is None:
        return "dim"
    return "bold green" if rolled.success else "bold red"


def dice_panel(rolled: DiceRoll, lang: str = "zh") -> Panel:
    """The panel ``narrative roll`` prints (and the REPL can show for a roll_dice result)."""
    labels = _LABELS["zh" if lang == "zh" else "en"]
    mode = _MODES_ZH.get(rolled.mode, rolled.mode) if lang == "zh" else rolled.mode
    table = Table.grid(padding=(0, 2))
    table.add_column(style="dim")
    table.add_column()
    table.add_row(labels["mode"], mode)
    table.add_row(labels["dice"], ", ".join(map(str, rolled.rolls + rolled.explosions)))
    table.add_row(labels["total"], Text(str(rolled.total), style="bold"))
    table.add_row(labels["verdict"], Text(rolled.verdict(lang), style=verdict_style(rolled)))
    body = Group(Text(rolled.line(lang)), Text(""), table)
    return Panel(body, title=f"{labels['title']} {rolled.expr}", expand=False)


def print_roll(rolled: DiceRoll, lang: str = "zh", console: Console | None = None) -> None:
    """Print the roll panel to ``console`` (standard output by default)."""
    (console or Console()).print(dice_panel(rolled, lang))
