"""EJS templates inside regex replacement strings, rendered as ST-Prompt-Template renders them.

ST-Prompt-Template evaluates templates in the text SillyTavern has already rewritten with its
regex scripts: in every prompt message before it is sent, and in a message's HTML before it is
shown. So a replacement string such as ``<%= getvar('stat_data.好感度') %>`` becomes the value,
in the prompt and on screen alike. Here the scripts mark what each templated replacement
produced (``quickjs_run.TEMPLATE_OPEN`` … ``TEMPLATE_CLOSE``, with the script's name), and
only those pieces are rendered, in the same QuickJS sandbox with the same limits as every other
template of the turn (``tools.templates``). The model's own text is never evaluated: a reply
that holds ``<%`` stays as written (docs/templates.md).

A piece whose template fails is left out (never shown or sent as code) and the renderer says
which script it came from; text with no marked piece costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from narrative_cli.regex.quickjs_run import TEMPLATE_CLOSE, TEMPLATE_NAMED, TEMPLATE_OPEN
from narrative_cli.tools.templates import TemplateJob

# Renders jobs in one sandbox call; an output of None means the template failed (the
# renderer has said so) and the piece is left out.
Renderer = Callable[[Sequence[TemplateJob]], Sequence[str | None]]


def has_marks(text: str) -> bool:
    return TEMPLATE_OPEN in text


def _pieces(text: str) -> list[tuple[str, str] | str]:
    """``text`` split into plain strings and (script name, template) pieces; a piece inside
    another (a later script captured an earlier one's output) is part of the outer one."""
    out: list[tuple[str, str] | str] = []
    plain: list[str] = []
    index = 0
    while index < len(text):
        start = text.find(TEMPLATE_OPEN, index)
        if start < 0:
            plain.append(text[index:])
            break
        plain.append(text[index:start])
        end, depth, cursor = -1, 0, start
        while cursor < len(text):
            char = text[cursor]
            depth += char == TEMPLATE_OPEN
            depth -= char == TEMPLATE_CLOSE
            if depth == 0:
                end = cursor
                break
            cursor += 1
        if end < 0:  # unbalanced (cannot happen from the runner): keep the text, unmarked
            plain.append(_unmarked(text[start:]))
            break
        name, _, body = text[start + 1 : end].partition(TEMPLATE_NAMED)
        out.append("".join(plain))
        plain = []
        out.append((name, _unmarked(body)))
        index = end + 1
    out.append("".join(plain))
    return [p for p in out if p]


def _unmarked(text: str) -> str:
    """``text`` without marks (a nested piece's name is dropped with its marks)."""
    while TEMPLATE_OPEN in text:
        start = text.index(TEMPLATE_OPEN)
        named = text.find(TEMPLATE_NAMED, start)
        text = text[:start] + text[named + 1 :] if named > 0 else text[:start] + text[start + 1 :]
    return text.replace(TEMPLATE_CLOSE, "").replace(TEMPLATE_NAMED, "")


def render_marked(texts: Sequence[str], render: Renderer) -> list[str]:
    """``texts`` with every marked piece rendered (all pieces in one ``render`` call)."""
    if not any(has_marks(t) for t in texts):
        return list(texts)
    split = [_pieces(t) if has_marks(t) else [t] for t in texts]
    jobs = [TemplateJob(f"regex script {p[0]!r}", p[1]) for parts in split for p in parts
            if isinstance(p, tuple)]  # fmt: skip
    outputs = iter(render(jobs))
    done = []
    for parts in split:
        text = []
        for part in parts:
            text.append(part if isinstance(part, str) else next(outputs) or "")
        done.append("".join(text))
    return done
