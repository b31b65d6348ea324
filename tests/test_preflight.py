"""Preflight before the greeting (#18 item 3): ``narrative run`` in line mode, as a subprocess.

A missing key, a base URL that does not answer or a model the server does not list stop the
run before the greeting is shown, with one line naming what is wrong, and leave no session
behind. ``--provider openai|anthropic`` reads the provider's usual key variable.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from narrative_cli.store import SessionStore
from tests import servers
from tests.conftest import ROOT, SAMPLES
from tests.servers import ScriptedServer
from tests.story_replies import NARRATIVES, StoryScript

scripted_server = servers.scripted_server  # until tests/conftest.py imports the fixtures
CARD = str(SAMPLES / "lantern-keeper.png")
GREETING = "Three days of fog"
FAKE_KEY = "sk-preflight-0123456789abcdef"


def narrative(
    *args: str, stdin: str = "I listen.\n", **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "narrative_cli", "run", CARD, *args],
        input=stdin, capture_output=True, text=True, cwd=ROOT,
        env={**os.environ, **env}, timeout=120,
    )  # fmt: skip


def sessions(home: Path) -> int:
    with SessionStore(home / "sessions.db") as store:
        return len(store.list_sessions())


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unset_key_variable_is_named_before_the_greeting_and_nothing_is_stored(
    clean_environ: Path,
) -> None:
    done = narrative("--provider", "openai", "--model", "gpt-4o-mini")
    assert done.returncode == 2
    assert "OPENAI_API_KEY is not set" in done.stderr.splitlines()[0]
    assert "Traceback" not in done.stderr
    assert GREETING not in done.stdout
    assert sessions(clean_environ) == 0


def test_a_named_variable_that_is_unset_is_named(clean_environ: Path) -> None:
    done = narrative("--provider", "openai", "--base-url", "http://127.0.0.1:9/v1",
                     "--api-key-env", "MY_PROXY_KEY")  # fmt: skip
    assert done.returncode == 2
    assert "MY_PROXY_KEY is not set" in done.stderr
    assert GREETING not in done.stdout and sessions(clean_environ) == 0


def test_a_base_url_that_does_not_answer_stops_the_run_before_the_greeting(
    clean_environ: Path,
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    done = narrative("--provider", "openai", "--base-url", url, "--model", "m")
    assert done.returncode == 1
    assert f"{url}/models does not answer" in done.stderr
    assert "--base-url" in done.stderr  # the hint says what to check
    assert GREETING not in done.stdout and sessions(clean_environ) == 0


def test_a_model_the_server_does_not_list_is_named_with_what_it_lists(
    scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    scripted_server.models = ["qwen2.5-7b", "llama3.1-8b"]
    done = narrative("--provider", "openai", "--base-url", scripted_server.base_url,
                     "--model", "gpt-5")  # fmt: skip
    assert done.returncode == 2
    assert "no model 'gpt-5'" in done.stderr and "qwen2.5-7b, llama3.1-8b" in done.stderr
    assert scripted_server.requests == []  # no model call, no greeting, nothing stored
    assert GREETING not in done.stdout and sessions(clean_environ) == 0


def test_a_listed_model_plays_and_a_server_without_the_list_passes(
    scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    scripted_server.reply_with(StoryScript())
    scripted_server.models = ["models/gemini-2.0-flash"]  # Gemini's spelling of its ids
    listed = narrative("--provider", "openai", "--base-url", scripted_server.base_url,
                       "--model", "gemini-2.0-flash")  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert GREETING in listed.stdout and NARRATIVES[0] in listed.stdout
    # the list is asked for once; the lore budget then asks llama.cpp's /props for the context
    assert [g.path for g in scripted_server.gets] == ["/v1/models", "/props"]
    scripted_server.models = None  # GET /models: 404
    unlisted = narrative("--provider", "openai", "--base-url", scripted_server.base_url,
                         "--model", "anything", "--seed", "3")  # fmt: skip
    assert unlisted.returncode == 0, unlisted.stderr
    assert sessions(clean_environ) == 2


def test_provider_openai_sends_OPENAI_API_KEY_and_never_shows_it(
    scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    scripted_server.reply_with(StoryScript())
    done = narrative("--provider", "openai", "--base-url", scripted_server.base_url,
                     "--model", "m", OPENAI_API_KEY=FAKE_KEY)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert scripted_server.gets[0].headers["authorization"] == f"Bearer {FAKE_KEY}"
    assert {r.headers["authorization"] for r in scripted_server.requests} == {f"Bearer {FAKE_KEY}"}
    assert FAKE_KEY not in done.stdout + done.stderr


def test_provider_anthropic_sends_ANTHROPIC_API_KEY(
    scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    scripted_server.reply_with(StoryScript())
    done = narrative("--provider", "anthropic", "--base-url", scripted_server.base_url,
                     "--model", "claude-x", ANTHROPIC_API_KEY=FAKE_KEY)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert scripted_server.gets[0].path == "/v1/models"
    assert scripted_server.gets[0].headers["x-api-key"] == FAKE_KEY
    assert {r.headers["x-api-key"] for r in scripted_server.requests} == {FAKE_KEY}
    assert NARRATIVES[0] in done.stdout


def test_a_resumed_session_is_checked_too(
    scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    scripted_server.reply_with(StoryScript())
    first = narrative("--provider", "openai", "--base-url", scripted_server.base_url,
                      "--model", "m", "--session", "watch")  # fmt: skip
    assert first.returncode == 0, first.stderr
    scripted_server.models = ["other"]
    again = narrative("--session", "watch", stdin="I wait.\n")
    assert again.returncode == 2 and "no model 'm'" in again.stderr
    assert NARRATIVES[0] not in again.stdout  # the last exchange is not shown either
