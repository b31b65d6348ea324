"""Editing and control in line mode (#18 item 6): ``/edit --reply``, ``/edit`` in ``$EDITOR``,
``/impersonate``, ``/continue`` with a preset, ``/model`` and ``/profile``.

A real ``narrative run`` subprocess reads stdin against the scripted server; the requests the
server saw, the trace and the SQLite file say what happened.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from narrative_cli.pipeline.records import TurnRecord
from narrative_cli.store import SessionStore
from tests import servers
from tests.conftest import SAMPLES
from tests.servers import ScriptedServer
from tests.story_replies import NARRATIVES, StoryScript
from tests.test_preset_pipeline import PRESET, write_preset

scripted_server = servers.scripted_server  # until tests/conftest.py imports the fixtures
CARD = str(SAMPLES / "lantern-keeper.png")
EDITED = "Edda gives you the iron key and points at the cellar."
DRAFT = "I take the lamp and follow Edda up the stairs."
ST_IMPERSONATION = (
    "[Write your next reply from the point of view of User, using the chat history so far as a"
    " guideline for the writing style of User. Don't write as Edda or system. Don't describe"
    " actions of Edda.]"
)


class Script(StoryScript):
    """The story script, with an analyst that reads the reply and an impersonating writer."""

    def __call__(self, body: Any, request: Any) -> Any:
        if request.agent == "impersonation":
            return DRAFT
        if request.agent == "analysis" and "iron key" in json.dumps(body, ensure_ascii=False):
            return {"events": [{"type": "move", "params": {"location": "Cellar"}}],
                    "summary_entries": ["Edda sent the apprentice to the cellar."]}  # fmt: skip
        return super().__call__(body, request)


def narrative(
    server: ScriptedServer, cwd: Path, *args: str, stdin: str, env: dict[str, str] | None = None,
    model: str = "m",
) -> subprocess.CompletedProcess[str]:
    flags = ["--provider", "openai", "--base-url", server.base_url, "--model", model]
    return subprocess.run(
        [sys.executable, "-m", "narrative_cli", "run", *args, *flags],
        input=stdin, capture_output=True, text=True, cwd=cwd,
        env={**os.environ, **(env or {})}, timeout=120,
    )  # fmt: skip


def turns(home: Path) -> list[tuple[TurnRecord, int, str]]:
    """Every stored turn of the first session: (record, swipes, snapshot as JSON)."""
    with SessionStore(home / "sessions.db") as store:
        info = store.list_sessions()[0]
        return [
            (TurnRecord.read(store.record(info.id, t.number)), len(t.swipes),
             json.dumps(store.snapshot(info.id, t.number), ensure_ascii=False))
            for t in store.iter_turns(info.id)
        ]  # fmt: skip


def agents(server: ScriptedServer) -> list[str]:
    return [request.agent for request in server.requests]


def test_edit_reply_inline_reanalyses_the_edited_text_and_the_state_follows(
    scripted_server: ScriptedServer, clean_environ: Path, tmp_path: Path
) -> None:
    scripted_server.reply_with(Script())
    lines = f"I climb the stairs.\n/state\n/edit --reply {EDITED}\n/state\n"
    done = narrative(scripted_server, tmp_path, CARD, "--session", "e", "--mode", "serial",
                     stdin=lines)  # fmt: skip
    assert done.returncode == 0, done.stderr
    calls = agents(scripted_server)
    assert calls.count("planning") == 1 and calls.count("writing") == 1  # no new plan or prose
    assert calls.count("analysis") == 2  # the edited text analysed again
    last = [r for r in scripted_server.requests if r.agent == "analysis"][-1]
    assert EDITED in json.dumps(last.json, ensure_ascii=False)
    (_, _, _), (record, swipes, snapshot) = turns(clean_environ)
    assert record.narrative == EDITED and swipes == 2  # the old reply stays as a swipe
    assert "Cellar" in snapshot and record.rng_stream == 0  # state follows; same dice stream
    before, after = done.stdout.split("/edit --reply")
    assert "[Turn 1] Edda sent the apprentice to the cellar." in after  # the new summary
    rolls = [line for line in done.stdout.splitlines() if "Check: 1d20+2" in line]
    assert len(rolls) == 2 and rolls[0] == rolls[1]  # the stored plan: the same roll


def test_edit_in_editor_for_the_input_and_for_the_reply(
    scripted_server: ScriptedServer, clean_environ: Path, tmp_path: Path
) -> None:
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nprintf \'%s\' "$EDIT_TO" > "$1"\n', encoding="utf-8")
    editor.chmod(0o755)
    scripted_server.reply_with(Script())
    env = {"EDITOR": str(editor), "VISUAL": "", "EDIT_TO": "I climb the stairs slowly."}
    done = narrative(scripted_server, tmp_path, CARD, "--session", "v", stdin="I climb.\n/edit\n",
                     env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert turns(clean_environ)[1][0].user_input == "I climb the stairs slowly."

    env["EDIT_TO"] = EDITED
    done = narrative(scripted_server, tmp_path, CARD, "--session", "v", stdin="/edit --reply\n",
                     env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    record, swipes, _ = turns(clean_environ)[1]
    assert record.narrative == EDITED and swipes == 3


def test_edit_without_an_editor_names_the_variable_and_the_inline_form(
    scripted_server: ScriptedServer, clean_environ: Path, tmp_path: Path
) -> None:
    scripted_server.reply_with(Script())
    env = {"EDITOR": "", "VISUAL": ""}
    done = narrative(scripted_server, tmp_path, CARD, stdin="I climb.\n/edit --reply\n", env=env)
    assert done.returncode == 2
    assert "error: no editor: set $EDITOR (or $VISUAL)" in done.stderr
    assert "hint: /edit --reply TEXT replaces the last reply with TEXT" in done.stderr
    assert "Traceback" not in done.stderr


def test_impersonate_drafts_the_next_line_with_sillytaverns_prompt_and_plays_nothing(
    scripted_server: ScriptedServer, clean_environ: Path, tmp_path: Path
) -> None:
    scripted_server.reply_with(Script())
    trace = tmp_path / "trace"
    done = narrative(scripted_server, tmp_path, CARD, "--trace", str(trace),
                     stdin="I climb the stairs.\n/impersonate\n")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Draft of your next line" in done.stdout and DRAFT in done.stdout
    assert len(turns(clean_environ)) == 2  # the greeting and the one played turn
    asked = [r for r in scripted_server.requests if r.agent == "impersonation"]
    assert len(asked) == 1
    assert asked[0].messages[-1] == {"role": "system", "content": ST_IMPERSONATION}
    assert NARRATIVES[0] in json.dumps(asked[0].json)  # the story so far is in the prompt
    traced = [json.loads(line)["agent"] for line in
              (trace / "calls.jsonl").read_text(encoding="utf-8").splitlines()]  # fmt: skip
    assert traced[-1] == "impersonation"


def test_a_presets_impersonation_and_continue_nudge_prompts_are_used(
    scripted_server: ScriptedServer, clean_environ: Path, tmp_path: Path
) -> None:
    preset = {**PRESET, "impersonation_prompt": "[Speak as {{user}} to {{char}}.]",
              "continue_nudge_prompt": "[Go on from: {{lastChatMessage}}]"}  # fmt: skip
    path = write_preset(tmp_path, preset)
    scripted_server.reply_with(Script())
    lines = "I climb the stairs.\n/impersonate\n/continue\n"
    done = narrative(scripted_server, tmp_path, CARD, "--preset", str(path), stdin=lines)
    assert done.returncode == 0, done.stderr
    asked = [r for r in scripted_server.requests if r.agent == "impersonation"]
    assert asked[0].messages[-1] == {"role": "system", "content": "[Speak as User to Edda.]"}
    writers = [r for r in scripted_server.requests if r.agent in ("writing", "merged_writing")]
    nudge = writers[-1].messages[-1]
    assert nudge == {"role": "system", "content": f"[Go on from: {NARRATIVES[0]}]"}
    assert all(m.get("content") != NARRATIVES[0] for m in writers[-1].messages[:-1])
    record = turns(clean_environ)[1][0]
    assert record.narrative == f"{NARRATIVES[0]} {NARRATIVES[1]}"  # SillyTavern's space


def test_model_switches_mid_story_is_stored_and_refuses_an_unknown_model(
    scripted_server: ScriptedServer, clean_environ: Path, tmp_path: Path
) -> None:
    scripted_server.models = ["m", "m2"]
    scripted_server.reply_with(Script())
    lines = "I climb the stairs.\n/model nope\n/model m2\nI trim the wick.\n/model\n"
    done = narrative(scripted_server, tmp_path, CARD, "--session", "s", stdin=lines)
    assert done.returncode == 2  # the refused /model nope
    assert "error: profile 'adhoc': the server has no model 'nope' (it lists m, m2)" in (
        done.stderr
    )
    assert "Model: m2 from the next call on" in done.stdout and "Model: m2." in done.stdout
    writers = [r.json["model"] for r in scripted_server.requests if r.agent.endswith("writing")]
    assert writers == ["m", "m2"]

    scripted_server.requests.clear()
    resumed = subprocess.run(
        [sys.executable, "-m", "narrative_cli", "run", "--resume", "s"],
        input="I light the lamp.\n", capture_output=True, text=True, cwd=tmp_path,
        env=dict(os.environ), timeout=120,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert {r.json["model"] for r in scripted_server.requests} == {"m2"}


def test_profile_switches_to_a_config_profile_and_refuses_an_unknown_one(
    scripted_server: ScriptedServer, clean_environ: Path, tmp_path: Path
) -> None:
    (clean_environ / "config.yaml").write_text(
        "profiles:\n"
        f"  alt: {{provider: openai, base_url: '{scripted_server.base_url}', model: m3}}\n",
        encoding="utf-8",
    )
    scripted_server.reply_with(Script())
    lines = "I climb the stairs.\n/profile nowhere\n/profile alt\nI trim the wick.\n"
    done = narrative(scripted_server, tmp_path, CARD, "--session", "p", stdin=lines)
    assert done.returncode == 2, done.stderr
    assert "no profile named 'nowhere'" in done.stderr and "alt" in done.stderr
    assert "Profile: alt, model m3, from the next call on" in done.stdout
    writers = [r.json["model"] for r in scripted_server.requests if r.agent.endswith("writing")]
    assert writers == ["m", "m3"]
    with SessionStore(clean_environ / "sessions.db") as store:
        kept = store.list_sessions()[0].settings
    assert kept["profile"] == "alt" and "model" not in kept
