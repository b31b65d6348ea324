"""Rich views of dice: one roll's panel, the hidden-roll notice and the session's roll ledger.

The panel draws each die: kept ones bold, dropped and rerolled ones struck through and dim,
exploded ones marked ``!``, pool hits ``✓``; then the modifiers, the target and the outcome
level in colour. It reads the roll's JSON (``DiceRoll.to_dict``), so a roll from a stored
turn record draws exactly like a fresh one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from narrative_cli.i18n import has, t
from narrative_cli.tools.dice import DiceRoll
from narrative_cli.ui.console import console as safe_console
from narrative_cli.ui.console import safe_markup


def _named(group: str, name: str, lang: str) -> str:
    """A system, mode or target name in ``lang`` (``dice.system.coc7``); unknown: as is."""
    key = f"{group}.{name}"
    return t(key, lang) if has(key, "en") else name


def outcome_style(data: Mapping[str, Any]) -> str:
    """Yellow for criticals, magenta for fumbles, green for success, red for failure."""
    outcome = str(data.get("outcome") or "")
    critical, success = data.get("critical"), data.get("success")
    if outcome == "critical_success" or critical == "success":
        return "bold yellow"
    if outcome in ("critical_failure", "fumble") or critical == "failure":
        return "bold magenta"
    if success is None:
        return "dim"
    return "bold green" if success else "bold red"


def verdict_style(rolled: DiceRoll) -> str:
    return outcome_style(rolled.to_dict())


def dice_text(data: Mapping[str, Any], lang: str) -> Text:
    """Every die of a roll: kept bold, dropped/rerolled struck, exploded ``!``, hits ``✓``."""
    info = data.get("info") or {}
    if data.get("system") == "coc7" and isinstance(info, Mapping):
        return _coc_dice(info, lang)
    out = Text()
    for index, node in enumerate(data.get("dice") or []):
        if index:
            out.append("  ")
        out.append(f"{node.get('expr', '')}: ", style="dim")
        for position, face in enumerate(node.get("faces") or []):
            if position:
                out.append(" ")
            out.append_text(_face(face, node.get("sides")))
    return out


def _face(face: Mapping[str, Any], sides: object) -> Text:
    value = int(face.get("value", 0))
    shown = ("+" if value > 0 else "-" if value < 0 else "0") if sides == "F" else str(value)
    if face.get("exploded"):
        shown = "!" + shown
    if face.get("hit"):
        shown += "✓"
    if face.get("dropped") or face.get("rerolled"):
        return Text(shown, style="dim strike")
    return Text(shown, style="bold")


def _coc_dice(info: Mapping[str, Any], lang: str) -> Text:
    tens = [int(t) for t in info.get("tens") or []]
    out = Text(f"{t('dice.tens', lang)} ", style="dim")
    out.append(" ".join(f"{t}0" if t else "00" for t in tens), style="bold")
    out.append(f"  {t('dice.units', lang)} ", style="dim")
    out.append(str(info.get("units", "")), style="bold")
    return out


def dice_panel(rolled: DiceRoll | Mapping[str, Any], lang: str = "zh") -> Panel:
    """The panel of one roll (``narrative roll``, ``/roll``, a revealed planner roll)."""
    data = rolled.to_dict() if isinstance(rolled, DiceRoll) else rolled
    table = Table.grid(padding=(0, 2))
    table.add_column(style="dim")
    table.add_column()
    system = str(data.get("system") or "none")
    table.add_row(t("dice.system", lang), _named("dice.system", system, lang))
    mode = str(data.get("mode") or "normal")
    if mode != "normal":
        table.add_row(t("dice.mode", lang), _named("dice.mode", mode, lang))
    table.add_row(t("dice.dice", lang), dice_text(data, lang))
    if data.get("modifier"):
        table.add_row(t("dice.modifier", lang), f"{int(data['modifier']):+d}")
    table.add_row(t("dice.total", lang), Text(str(data.get("total")), style="bold"))
    target = _target(data, lang)
    if target:
        table.add_row(t("dice.target", lang), target)
    verdict = _verdict(data, lang)
    if verdict:
        table.add_row(t("dice.verdict", lang), Text(verdict, style=outcome_style(data)))
    lines = data.get("lines") or {}
    line = str(lines.get("zh" if lang == "zh" else "en", "")) if isinstance(lines, Mapping) else ""
    body = Group(Text(line), Text(""), table) if line else table
    title = f"{t('dice.title', lang)} {data.get('label') or ''} {data.get('expr', '')}".split()
    return Panel(body, title=safe_markup(" ".join(title)), title_align="left", expand=False)


def hidden_panel(lang: str = "zh") -> Panel:
    """What the player sees of a hidden roll."""
    notice = Text(t("dice.hidden_notice", lang), style="dim italic")
    return Panel(notice, title=t("dice.hidden", lang), title_align="left", expand=False)


def ledger_table(rows: Sequence[Mapping[str, Any]], lang: str, *, reveal: bool) -> Table | Text:
    """``/dice``: turn, expression, dice, total, system, outcome, hidden (masked unless
    ``reveal``). ``rows`` are ``{"turn": N, "roll": DiceRoll.to_dict()}``."""
    if not rows:
        return Text(t("dice.empty", lang), style="dim")
    table = Table(title=t("dice.ledger", lang), title_justify="left")
    for name in ("turn", "expr", "dice", "total", "system", "verdict", "hidden"):
        table.add_column(t(f"dice.{name}", lang), no_wrap=name in ("turn", "total"))
    for row in rows:
        data = row.get("roll") or {}
        hidden = bool(data.get("hidden"))
        label = f"{data.get('label')} " if data.get("label") else ""
        expr = safe_markup(f"{label}{data.get('expr', '')}")
        system = str(data.get("system") or "none")
        system_name = _named("dice.system", system, lang)
        if hidden and not reveal:
            masked = Text(t("dice.masked", lang), style="dim")
            table.add_row(str(row.get("turn")), expr, masked, masked, system_name, masked,
                          t("dice.yes", lang))  # fmt: skip
            continue
        verdict = Text(_verdict(data, lang), style=outcome_style(data))
        table.add_row(str(row.get("turn")), expr, dice_text(data, lang), str(data.get("total")),
                      system_name, verdict, t(f"dice.{_yes_no(hidden)}", lang))  # fmt: skip
    return table


def _target(data: Mapping[str, Any], lang: str) -> str:
    dc = data.get("dc")
    if dc is None:
        return ""
    name = str(data.get("target_name") or "DC")
    return f"{_named('dice.target', name, lang)} {dc}"


def _verdict(data: Mapping[str, Any], lang: str) -> str:
    lines = data.get("lines") or {}
    line = str(lines.get("zh" if lang == "zh" else "en", "")) if isinstance(lines, Mapping) else ""
    return line.rsplit(" → ", 1)[1] if " → " in line else ""


def print_roll(rolled: DiceRoll, lang: str = "zh", console: Console | None = None) -> None:
    """Print the roll panel to ``console`` (standard output by default)."""
    (console or safe_console()).print(dice_panel(rolled, lang))


def _yes_no(flag: bool) -> str:
    return "yes" if flag else "no"
