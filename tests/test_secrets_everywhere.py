"""One distinctive key fed through every output path must appear in none of them.

The keys: one in the variable ``--api-key-env`` names, one as the password of the base URL's
user information (``http://user:KEY@host/v1``), one as its ``?key=`` query parameter. The
paths: what ``run`` prints (line mode, with ``-vv`` logs on stderr), the ``--trace`` files
(calls.jsonl and turn-NNNN.md), the SQLite file (with its WAL), ``sessions export`` as JSON and
as a SillyTavern chat, ``config show``, the error a 401 gives (the scripted server's
``unauthorized`` fault echoes the credentials it received, as some proxies do) and the error a
refused connection gives. Each path is also checked to have been taken, so that the test fails
if, say, no turn was stored or no error was printed.
"""

from __future__ import annotations

import base64
import os
import random
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.credentials import is_secret_name, remember_url, scrub, scrub_text, scrub_url
from narrative_cli.store import SessionStore
from tests import servers
from tests.conftest import ROOT, SAMPLES
from tests.servers import Reply, ScriptedServer
from tests.story_replies import NARRATIVES, StoryScript

scripted_server = servers.scripted_server
CARD = str(SAMPLES / "lantern-keeper.png")
ENV_KEY = "envkey-7Qz1-lanternleak-Xw42"
URL_KEY = "urlkey-9Kp3-foghornleak-Vb17"
QUERY_KEY = "qrykey-2Hn8-kittiwakeleak-Ld55"
BASIC = base64.b64encode(f"keeper:{URL_KEY}".encode()).decode()
SECRETS = (ENV_KEY, URL_KEY, QUERY_KEY, BASIC)


def narrative(home: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NARRATIVE_HOME=str(home), LEAK_TEST_KEY=ENV_KEY, NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "narrative_cli", "-vv", *args],
        input=stdin, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
    )  # fmt: skip


def backend_flags(base_url: str) -> list[str]:
    return ["--provider", "openai", "--base-url", base_url, "--model", "m",
            "--api-key-env", "LEAK_TEST_KEY"]  # fmt: skip


class FailSecondTurn:
    """The story script for the first turn's calls, then a 401 for everything after."""

    def __init__(self) -> None:
        self.story = StoryScript()
        self.turn_calls = 0

    def __call__(self, body: Any, request: Any) -> Any:
        if request.agent == "planning":
            self.turn_calls += 1
        if self.turn_calls > 1:
            return Reply(fault="unauthorized")
        return self.story(body, request)


def assert_clean(where: str, text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{where} shows a key"


def assert_files_clean(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            assert_clean(str(path), path.read_bytes().decode("utf-8", "replace"))


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_key_reaches_no_output_path(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    home, trace = tmp_path / "home", tmp_path / "trace"
    home.mkdir()
    hook = FailSecondTurn()
    scripted_server.reply_with(hook)
    played = narrative(
        home, "run", CARD, "--seed", "3", "--session", "leak", "--trace", str(trace),
        *backend_flags(f"{scripted_server.base_url}?key={QUERY_KEY}"),
        stdin="I climb the stairs.\nI ring the bell.\n/quit\n",
    )  # fmt: skip
    sent = scripted_server.requests
    assert sent[0].headers["authorization"] == f"Bearer {ENV_KEY}"  # the key did go out
    assert sent[0].path.endswith(f"/chat/completions?key={QUERY_KEY}")
    assert NARRATIVES[0] in played.stdout  # turn 1 played and was shown
    assert "HTTP 401" in played.stderr and "Incorrect API key provided: Bearer ***" in played.stderr
    assert "HTTP Request: POST" in played.stderr and "key=***" in played.stderr  # -vv logs
    assert_clean("run stdout", played.stdout)
    assert_clean("run stderr", played.stderr)

    calls = (trace / "calls.jsonl").read_text(encoding="utf-8")
    assert '"error": "adhoc: the API key was refused' in calls
    assert (trace / "turn-0001.md").exists() and (trace / "turn-0002.md").exists()
    assert_files_clean(trace)

    for name in ("leak.json", "leak.jsonl"):
        exported = narrative(home, "sessions", "export", "leak", str(tmp_path / name))
        assert exported.returncode == 0, exported.stderr
        assert_clean("export output", exported.stdout + exported.stderr)
        assert NARRATIVES[0] in (tmp_path / name).read_text(encoding="utf-8")
        assert_clean(name, (tmp_path / name).read_text(encoding="utf-8"))
    with SessionStore(home / "sessions.db") as store:
        session = store.find("leak")
        assert [turn.record.get("narrative") for turn in store.turns(session.id)][1:] == [
            NARRATIVES[0]
        ]
        assert store.session(session.id).settings["base_url"].endswith("?key=***")
    database = b"".join(p.read_bytes() for p in home.iterdir() if p.name.startswith("sessions"))
    assert_clean("the SQLite files", database.decode("utf-8", "replace"))

    shown = narrative(
        home, "config", "show", *backend_flags(f"http://keeper:{URL_KEY}@h/v1?key={QUERY_KEY}")
    )
    assert shown.returncode == 0 and "base_url: http://***@h/v1?key=***" in shown.stdout
    assert_clean("config show", shown.stdout + shown.stderr)


def test_credentials_in_the_base_url_reach_no_output(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    home, trace = tmp_path / "home", tmp_path / "trace"
    home.mkdir()
    scripted_server.queue_fault("unauthorized")
    host = scripted_server.base_url.split("://", 1)[1]
    played = narrative(
        home, "run", CARD, "--session", "userinfo", "--trace", str(trace),
        *backend_flags(f"http://keeper:{URL_KEY}@{host}?key={QUERY_KEY}"),
        stdin="I climb the stairs.\n/quit\n",
    )  # fmt: skip
    echoed = scripted_server.requests[0].headers["authorization"]
    assert echoed == f"Basic {BASIC}"  # httpx turns the user information into Basic auth
    assert "HTTP 401" in played.stderr and "Incorrect API key provided: Basic ***" in played.stderr
    assert_clean("run output", played.stdout + played.stderr)
    assert_files_clean(trace)
    assert_files_clean(home)

    resumed = narrative(home, "run", "--resume", "userinfo", stdin="/quit\n")
    assert resumed.returncode == 2 and "pass --base-url again" in resumed.stderr
    assert_clean("resume output", resumed.stdout + resumed.stderr)


def test_a_connection_error_does_not_print_the_base_urls_credentials(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    url = f"http://keeper:{URL_KEY}@127.0.0.1:{closed_port()}/v1?key={QUERY_KEY}"
    played = narrative(home, "run", CARD, *backend_flags(url), stdin="I climb the stairs.\n")
    assert "http://***@127.0.0.1:" in played.stderr  # preflight: before the greeting
    assert "/v1/models?key=*** does not answer" in played.stderr
    assert_clean("run output", played.stdout + played.stderr)
    assert_files_clean(home)


@pytest.mark.parametrize(
    ("name", "secret"),
    [("api_key", True), ("Authorization", True), ("x-api-key", True), ("secret-key", True),
     ("password", True), ("token", True), ("X-Goog-Api-Key", True), ("deepseek_api_key", True),
     ("api_key_env", False), ("api_key_file", False), ("key", False), ("prompt_tokens", False),
     ("max_tokens", False), ("keys", False)],
)  # fmt: skip
def test_what_is_a_secret_name(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_scrub_masks_urls_tokens_and_named_values_but_not_story_words() -> None:
    assert scrub_url("https://u:p4ss@api.x.com/v1?key=abc&model=m") == (
        "https://***@api.x.com/v1?key=***&model=m"
    )
    assert scrub_text("Authorization: Bearer abc123def456") == "Authorization: Bearer ***"
    story = "The bearer of the basic lantern keeps the key; sk-one is a name."
    assert scrub_text(story) == story
    chinese = "他是 Bearer 一个很长很长的中文句子超过二十个字符的那种句子而且没有空格"
    assert scrub_text(chinese) == chinese
    assert scrub({"profiles": {"p": {"api_key": "x", "api_key_env": "VAR", "n": 1}}}) == {
        "profiles": {"p": {"api_key": "***", "api_key_env": "VAR", "n": 1}}
    }
    record = {"api_key": "", "token": None, "note": "Bearer abc123def456", 3: "sk-" + "a" * 20}
    for _ in range(2):  # a text scrubbed before is taken from memory the second time
        assert scrub(record) == {"api_key": "", "token": None, "note": "Bearer ***", 3: "***"}


def test_a_url_key_is_remembered_but_a_user_name_beside_a_password_is_not() -> None:
    remember_url("http://storyteller:pw-5Lq9-remembered@h/v1?api_key=qv-8Rt2-remembered")
    remember_url("http://uk-3Nb7-remembered@h/v1")
    text = "storyteller pw-5Lq9-remembered qv-8Rt2-remembered uk-3Nb7-remembered"
    assert scrub_text(text) == "storyteller *** *** ***"


def test_a_text_scrubbed_before_a_key_was_read_is_scrubbed_of_it_afterwards() -> None:
    """Scrubbed texts are remembered (#17, session five) only until a new secret is."""
    from narrative_cli.credentials import REDACTED, remember, scrub, scrub_text

    key = "lantern" + "".join(random.choice("QWERTYUPKX23456789") for _ in range(20))
    text = f"Edda reads the key {key} aloud."
    assert scrub_text(text) == text and scrub({"note": text}) == {"note": text}
    remember(key)
    assert scrub_text(text) == f"Edda reads the key {REDACTED} aloud."
    assert scrub({"note": text, "api_key": "x"}) == {"note": scrub_text(text), "api_key": REDACTED}
