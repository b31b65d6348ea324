"""Stable keys for resuming a replay: which stored session is the replay of which log.

A replayed log is stored as a session whose settings carry a ``replay`` entry with its key:
the hash of the log's absolute path, the log's content hash, the card's content hash and the
*settings hash*. The settings hash covers everything else that shapes the result: the
companion files (lorebooks, preset, persona) and their contents, the user name, language,
mode and seed flags, the effective pipeline, lore and agent settings, the profiles the agents
call (never a key: only the name of the variable holding it), where the responses come from
(``--responses``) and where the trace goes (``--trace``). Run the same command again and
finished logs are skipped, half-finished ones continue at their last committed turn; change
any of these and the log is replayed afresh.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from narrative_cli.agents.table import agent_names
from narrative_cli.config import Settings
from narrative_cli.errors import BadInput, LorebookError, PresetError
from narrative_cli.load import files
from narrative_cli.play.opening import file_hash
from narrative_cli.play.options import PlayOptions
from narrative_cli.replay.logs import ReplayLog
from narrative_cli.store.models import SessionInfo
from narrative_cli.store.sessions import SessionStore

AGENTS = agent_names()
REPLAY_KEY = "replay"


def digest(value: Any) -> str:
    """``sha256:`` of ``value`` as canonical JSON."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def settings_hash(
    options: PlayOptions,
    settings: Settings,
    *,
    responses: str | None = None,
    trace: str | None = None,
) -> str:
    """The hash of everything besides the log and the card that shapes a replay's result."""
    return digest(
        {
            "options": options.session_settings(),
            "seed": options.seed,
            "files": _file_hashes(options),
            "pipeline": asdict(settings.pipeline),
            "lore": settings.lore,
            "agents": {name: asdict(value) for name, value in sorted(settings.agents.items())},
            "profiles": {agent: _profile(settings, agent) for agent in AGENTS},
            "responses": _absolute(responses),
            "trace": _absolute(trace),
        }
    )


def replay_key(log: ReplayLog, card_hash: str, settings_digest: str) -> str:
    """The stable key of one log's replay: log path + content hash + card hash + settings."""
    return digest([_absolute(log.path), log.content_hash, card_hash, settings_digest])


def replay_entry(log: ReplayLog, key: str, seed: int) -> dict[str, Any]:
    """What a replayed session keeps under ``settings["replay"]``."""
    return {
        "key": key,
        "log": _absolute(log.path),
        "log_hash": log.content_hash,
        "label": log.label,
        "turns": len(log.turns),
        "seed": seed,
    }


def find_replay(store: SessionStore, key: str) -> SessionInfo | None:
    """The stored replay session with ``key`` that got furthest (None: never replayed)."""
    found = [info for info in store.list_sessions() if _key_of(info) == key]
    return max(found, key=lambda info: (info.last_turn, info.id)) if found else None


def _key_of(info: SessionInfo) -> str | None:
    entry = info.settings.get(REPLAY_KEY)
    return str(entry.get("key")) if isinstance(entry, dict) and entry.get("key") else None


def _profile(settings: Settings, agent: str) -> dict[str, Any]:
    profile = asdict(settings.profile_for(agent))
    profile.pop("api_key_file", None)  # where a key lives is not part of the result
    return profile


def _file_hashes(options: PlayOptions) -> dict[str, str | None]:
    hashes: dict[str, str | None] = {}
    for path in options.lorebooks:
        hashes[_absolute(path) or path] = file_hash(path, LorebookError, "lorebook")
    if options.preset:
        hashes[_absolute(options.preset) or options.preset] = file_hash(
            options.preset, PresetError, "preset"
        )
    if options.persona and files.is_existing_file(Path(options.persona).expanduser()):
        hashes["persona"] = _hash_or_none(options.persona)
    return hashes


def _hash_or_none(path: str) -> str | None:
    try:
        return file_hash(path, BadInput, "persona")
    except BadInput:
        return None


def _absolute(path: str | None) -> str | None:
    return str(Path(path).expanduser().resolve()) if path else None
