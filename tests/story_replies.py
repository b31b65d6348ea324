"""Scripted replies that play whole turns of the sample card on the ScriptedServer.

``StoryScript`` is a reply hook keyed on the ``X-Narrative-Agent`` header: the planner asks
for a dice roll, the writer streams the next queued narrative (in small chunks, optionally
slowly), the analyst proposes one event that applies and one that the state engine rejects,
the keeper_log tool writes a log line and mvu_extract lowers the lamp oil. Tests read what
the user should see from the same object (``script.narratives``, ``script.summary``).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from tests.servers import Reply

NARRATIVES = (
    "Edda hands you the brass key. The lamp room smells of oil and salt.",
    "You trim the wick together while the fog horn groans below.",
    "The Kittiwake's light blinks once, far out in the grey.",
    "Edda laughs, a short bark, and writes your name in the log.",
)


def folded(request: Any) -> str:
    """A scripted ``compaction`` reply: the first words of each line it is asked to fold, cut
    to 600 characters (the agent's own limit cuts it further), as a chapter summary would be."""
    text = "\n".join(str(m["content"]) for m in request.messages)
    inside = text.split("<summary_to_fold>\n", 1)[-1].split("\n</summary_to_fold>", 1)[0]
    words = " / ".join(line.split("]", 1)[-1].strip()[:40] for line in inside.splitlines())
    return json.dumps({"summary": words[:600]}, ensure_ascii=False)


@dataclass
class StoryScript:
    """A reply hook for every agent of a turn (see the module doc)."""

    narratives: deque[str] = field(default_factory=lambda: deque(NARRATIVES))
    chunk_delay: float = 0.0
    hold: threading.Event | None = None  # the first reply stops after 3 chunks until it is set
    fail_writing: int = 0  # the next N writer calls answer 500 (after the retries too)
    location: str = "Lamp room"
    summary: str = "The apprentice climbed to the lamp room with Edda."
    log_line: str = "<keeper_log>20:00. Fog thick. Lamp lit.</keeper_log>"
    written: list[str] = field(default_factory=list)

    def __call__(self, body: Any, request: Any) -> Reply | str | dict[str, Any] | None:
        agent = request.agent
        if agent == "planning":
            return self.plan()
        if agent in ("writing", "merged_writing"):
            return self.writing()
        if agent == "analysis":
            return self.analysis()
        if agent.startswith("tool:"):
            return self.log_line
        if agent == "mvu_extract":
            return "<UpdateVariable>\n_.add('keeper.lamp_oil', -1);//a night\n</UpdateVariable>"
        return None

    def plan(self) -> dict[str, Any]:
        return {
            "narrative_direction": "Edda shows the apprentice the lamp.",
            "key_points": ["the lamp", "the fog"],
            "tool_calls": [{"tool": "roll_dice", "params": {"expr": "1d20+2", "dc": 10}}],
        }

    def writing(self) -> Reply:
        if self.fail_writing > 0:
            self.fail_writing -= 1
            return Reply(fault="server_error")
        text = self.narratives.popleft() if self.narratives else "The fog rolls on."
        self.written.append(text)
        pieces = [text[i : i + 6] for i in range(0, len(text), 6)]
        hold, self.hold = self.hold, None
        delay = self.chunk_delay
        return Reply(text=text, chunks=pieces, chunk_delay=delay, hold=hold, hold_after=4)

    def analysis(self) -> dict[str, Any]:
        return {
            "events": [
                {"type": "move", "params": {"location": self.location}},
                {"type": "remove_item", "params": {"item": "ghost lantern", "quantity": 1}},
            ],
            "summary_entries": [self.summary],
        }
