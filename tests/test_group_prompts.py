"""Saved reference prompts of a group turn (issue 19): the planning call and both writers.

The sample group (night ferry, English and Chinese) plays one turn on the scripted server; the
requests the model was sent are compared with ``tests/golden/prompts/<agent>/group-*.txt``
(``pytest --update-golden`` rewrites them; read the diff before committing). The single-card
reference prompts next to them stay byte-identical (``tests/test_prompts.py``).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.group.loading import group_from_cards
from narrative_cli.pipeline.orchestrator import run_turn
from narrative_cli.pipeline.story import open_story

from .conftest import SAMPLES
from .pipeline_support import PLAN, Script, backends_for, settings_for
from .servers import RecordedRequest, ScriptedServer

GOLDEN = Path(__file__).parent / "golden" / "prompts"
CASES = {
    "en": ("night-ferry-wren.json", "night-ferry-pip.json", "Is the fog lifting?"),
    "zh": ("night-ferry-wenlan-zh.json", "night-ferry-aqi-zh.json", "雾要散了吗？"),
}


def rendered(request: RecordedRequest) -> str:
    """A request as the model got it: each message under its role."""
    parts = [f"# agent: {request.agent}", ""]
    for message in request.messages:
        parts += [f"=== {message['role']} ===", str(message["content"]), ""]
    return "\n".join(parts)


def check(path: Path, text: str, update: bool) -> None:
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"missing golden file {path}; run pytest --update-golden"
    assert text == path.read_text(encoding="utf-8"), f"{path} differs (pytest --update-golden)"


def writer_reply(request: RecordedRequest) -> str:
    text = "\n".join(str(m["content"]) for m in request.messages)
    first = "Write only Wren's reply" in text or "本轮只写温岚的回应" in text
    return "The compass swings, then settles." if first else "Pip holds up the firefly jar."


@pytest.mark.parametrize(("lang", "mode"), [("en", "swap"), ("zh", "swap"), ("en", "join")])
def test_group_turn_reference_prompts(lang: str, mode: str, update_golden: bool) -> None:
    first, second, said = CASES[lang]
    group = group_from_cards([SAMPLES / first, SAMPLES / second])
    group = replace(group, generation_mode=mode,
                    join_prefix="### {{char}} (<FIELDNAME>):\n" if mode == "join" else "")
    names = [m.name for m in group.members]
    plan: dict[str, Any] = {**PLAN, "speakers": [
        {"name": names[0], "intent": "keep the passenger calm"},
        {"name": names[1], "intent": "show off the fireflies"}]}
    with ScriptedServer() as server:
        story = open_story("", group=group, settings=settings_for(server), seed=11, lang=lang)
        story.clock = lambda: datetime(2026, 5, 3, 21, 30)
        Script({"planning": plan, "writing": writer_reply}).install(server)
        run_turn(story, said, backends_for(server, story.settings))
        requests = list(server.requests)
    planning = [r for r in requests if r.agent == "planning"]
    writers = [r for r in requests if r.agent == "writing"]
    assert len(planning) == 1 and len(writers) == 2
    case = f"group-{lang}-{mode}"
    check(GOLDEN / "planning" / f"{case}.txt", rendered(planning[0]), update_golden)
    for request, name in zip(writers, ("first", "second"), strict=True):
        check(GOLDEN / "writing" / f"{case}-{name}.txt", rendered(request), update_golden)
