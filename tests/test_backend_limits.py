"""Issue #13 items 13, 17, 18: a bounded call, visible retries, and /retry only when it can help.

Against the scripted loopback server: a stream of keep-alive comments only, server errors that
retry, and refusals (bad key, content filter, quota) that must not be retried.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from narrative_cli.backends import ChatRequest, open_backend
from narrative_cli.config import load_settings
from narrative_cli.domain_chat import Message
from narrative_cli.errors import BackendError, BackendTimeout, ConfigError
from narrative_cli.pipeline.events import CallRetrying
from narrative_cli.ui.console import recording_consoles
from narrative_cli.ui.status import TurnView
from tests import servers
from tests.conftest import ROOT, SAMPLES
from tests.servers import Reply, ScriptedServer, quick_retrier
from tests.story_replies import NARRATIVES, StoryScript

scripted_server = servers.scripted_server
CARD = str(SAMPLES / "lantern-keeper.png")
MESSAGES = [Message("system", "Narrate."), Message("user", "Open the door.")]


def narrative(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "narrative_cli", *args], input=stdin,
                          capture_output=True, text=True, cwd=ROOT, env=dict(os.environ),
                          timeout=120)


def write_config(home: Path, server: ScriptedServer, **profile: object) -> None:
    config = {"default_profile": "scripted",
              "profiles": {"scripted": {"provider": "openai", "base_url": server.base_url,
                                        "model": "m", **profile}}}
    (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


# --- item 13: one whole call is bounded -------------------------------------------------------
def test_a_keep_alive_only_stream_fails_when_the_call_timeout_runs_out(
    scripted_server: ScriptedServer,
) -> None:
    scripted_server.queue_fault("keepalive", seconds=20, interval=0.05)
    waits: list[float] = []
    backend = open_backend(scripted_server.profile("openai", timeout=0.6, name="slowpoke"),
                           retrier=quick_retrier(0, waits))
    with pytest.raises(BackendTimeout) as caught:
        backend.complete(ChatRequest(MESSAGES, stream=True), lambda text: None)
    assert "slowpoke" in caught.value.message and "0.6 s" in caught.value.message
    assert "timeout" in caught.value.message
    assert scripted_server.disconnected.wait(5)  # we hung up; the server saw it


def test_the_call_timeout_also_bounds_a_silent_server(scripted_server: ScriptedServer) -> None:
    scripted_server.queue_fault("hang", seconds=20)
    backend = open_backend(scripted_server.profile("openai", timeout=0.5, read_timeout=60),
                           retrier=quick_retrier(0))
    with pytest.raises(BackendTimeout):
        backend.complete(ChatRequest(MESSAGES))


def test_timeout_is_a_profile_setting_with_a_default_and_is_checked(
    clean_environ: Path, scripted_server: ScriptedServer
) -> None:
    write_config(clean_environ, scripted_server)
    assert load_settings().profiles["scripted"].timeout == 300.0
    write_config(clean_environ, scripted_server, timeout=42)
    assert load_settings().profiles["scripted"].timeout == 42.0
    write_config(clean_environ, scripted_server, timeout=-1)
    with pytest.raises(ConfigError, match="profiles.scripted.timeout"):
        load_settings()


def test_a_keep_alive_only_turn_ends_in_line_mode_naming_provider_and_timeout(
    clean_environ: Path, scripted_server: ScriptedServer
) -> None:
    write_config(clean_environ, scripted_server, timeout=0.8, max_retries=0)
    script = StoryScript()

    def hook(body: object, request: servers.RecordedRequest) -> object:
        if request.agent in ("writing", "merged_writing"):
            return Reply(fault="keepalive", options={"seconds": 30, "interval": 0.05})
        return script(body, request)

    scripted_server.reply_with(hook)
    done = narrative("run", CARD, stdin="I wait.\n")
    assert done.returncode == 1, done.stderr
    assert "scripted: no complete reply within 0.8 s" in done.stderr
    assert "/retry" in done.stderr  # a timeout is transient


# --- item 18: retries are shown ---------------------------------------------------------------
def test_each_retry_is_shown_on_stderr_in_line_mode(
    clean_environ: Path, scripted_server: ScriptedServer
) -> None:
    write_config(clean_environ, scripted_server)
    scripted_server.reply_with(StoryScript(fail_writing=2))  # two 500s, then the story
    done = narrative("run", CARD, stdin="I wait.\n")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "attempt" in line]
    assert len(lines) == 2, done.stderr
    assert lines[0].startswith("! Writing: attempt 1/3 failed (scripted: server error (HTTP 500)")
    assert "retrying in" in lines[0] and lines[1].startswith("! Writing: attempt 2/3 failed")
    assert NARRATIVES[0] in done.stdout


def test_a_retry_shows_in_the_status_line_until_the_call_ends() -> None:
    view = TurnView(recording_consoles(), "en")
    view(CallRetrying("writing", 1, 3, "scripted: server error (HTTP 500)", 0.5))
    assert "retry 2/3" in view.status.text().plain
    from narrative_cli.pipeline.events import CallFinished

    view(CallFinished("writing", 1, 0, 0, 0, 10.0))
    assert "retry" not in view.status.text().plain


def test_the_backend_reports_each_retry_with_attempt_reason_and_wait(
    scripted_server: ScriptedServer,
) -> None:
    scripted_server.queue_fault("server_error")
    scripted_server.queue_fault("rate_limit", retry_after=0)
    scripted_server.queue_text("ok")
    seen: list[tuple[int, int, str, float]] = []

    def on_retry(attempt: int, attempts: int, error: BackendError, wait: float) -> None:
        seen.append((attempt, attempts, error.message, wait))

    backend = open_backend(scripted_server.profile("openai"), retrier=quick_retrier(2))
    assert backend.complete(ChatRequest(MESSAGES, on_retry=on_retry)).text == "ok"
    assert [(a, n) for a, n, _, _ in seen] == [(1, 3), (2, 3)]
    assert "HTTP 500" in seen[0][2] and "HTTP 429" in seen[1][2] and seen[1][3] == 0.0


# --- item 17: the provider's hint, and /retry only when it can help ---------------------------
@pytest.mark.parametrize(
    ("fault", "hint"),
    [
        ("unauthorized", "check the key"),
        ("content_filter", "edit or drop the flagged message"),
        ("quota", "top up the account"),
    ],
)
def test_a_refusal_shows_the_providers_reason_and_no_retry_offer(
    clean_environ: Path, scripted_server: ScriptedServer, fault: str, hint: str
) -> None:
    write_config(clean_environ, scripted_server)
    scripted_server.reply_with(lambda body, request: Reply(fault=fault))
    done = narrative("run", CARD, stdin="I wait.\n")
    assert done.returncode == 1
    assert hint in done.stderr
    assert "/retry" not in done.stderr
    assert "attempt" not in done.stderr  # never retried


def test_a_bad_request_gets_no_retry_offer(
    clean_environ: Path, scripted_server: ScriptedServer
) -> None:
    write_config(clean_environ, scripted_server)
    body = {"error": {"message": "max_tokens is too large for this model", "type": "invalid"}}
    scripted_server.reply_with(lambda b, r: Reply(fault="status", status=400, body=body))
    done = narrative("run", CARD, stdin="I wait.\n")
    assert done.returncode == 1
    assert "max_tokens is too large for this model" in done.stderr
    assert "/retry" not in done.stderr


def test_a_server_error_after_the_retries_offers_retry(
    clean_environ: Path, scripted_server: ScriptedServer
) -> None:
    write_config(clean_environ, scripted_server, max_retries=0)
    scripted_server.reply_with(StoryScript(fail_writing=1))
    done = narrative("run", CARD, stdin="I wait.\n/retry\n")
    assert done.returncode == 0, done.stderr
    assert "HTTP 500" in done.stderr and "type /retry" in done.stderr
    assert NARRATIVES[0] in done.stdout


def test_streamed_tokens_with_unicode_line_separators_arrive_whole(
    scripted_server: ScriptedServer,
) -> None:
    text = "灯\x85塔\u2028光\u2029 end"  # raw in the server's JSON (ensure_ascii=False)
    scripted_server.queue_text(text, chunks=["灯\x85", "塔\u2028光", "\u2029 end"])
    seen: list[str] = []
    backend = open_backend(scripted_server.profile("openai"), retrier=quick_retrier(0))
    reply = backend.complete(ChatRequest(MESSAGES, stream=True), seen.append)
    assert reply.text == text and "".join(seen) == text


def test_the_timeout_message_never_shows_credentials_of_the_base_url(
    scripted_server: ScriptedServer,
) -> None:
    scripted_server.queue_fault("keepalive", seconds=20, interval=0.05)
    url = scripted_server.base_url.replace("http://", "http://user:s3cretPassw0rd@")
    backend = open_backend(scripted_server.profile("openai", base_url=url, timeout=0.5),
                           retrier=quick_retrier(0))
    with pytest.raises(BackendTimeout) as caught:
        backend.complete(ChatRequest(MESSAGES, stream=True), lambda text: None)
    assert "no complete reply within 0.5 s" in caught.value.message
    assert "s3cretPassw0rd" not in caught.value.message
