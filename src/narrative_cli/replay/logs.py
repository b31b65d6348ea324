"""Chat logs to replay: SillyTavern ``.jsonl`` chats and narrative-cli's own exports.

A log becomes a ``ReplayLog``: the greeting (turn 0) as the log has it, then one ``UserTurn``
per user message, each with the time it was sent when the log says (time macros such as
``{{time}}`` see that time, so a replay does not depend on the clock of the day it runs).

Formats:

- a SillyTavern chat (``.jsonl``): the first character message before any user message is
  the greeting; every user message is one turn; character replies are the old outputs and
  are not used; hidden (``is_system``) and empty messages are skipped with a warning;
- our ``.jsonl`` export: the same, plus the session's seed from ``chat_metadata.narrative_cli``;
- our JSON dump (``narrative sessions export ID FILE.json``): each turn's selected swipe gives
  the user input, turn 0 the greeting, the header the seed. A session imported from a
  SillyTavern chat starts with imported turns (records without our ``mode``): the log keeps
  their records (``imported``), which the replay stores as they were and catches up on
  (``play.catch_up``) before it plays the turns after them, as the session did.

``read_logs(paths)`` reads many logs at once and gives each a unique, stable ``label`` (the
file name without suffix, with its folder added when two logs share a name).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from narrative_cli.domain_chat import Chat
from narrative_cli.errors import ChatFileError
from narrative_cli.load import files
from narrative_cli.load.chats import parse_chat

NAMESPACE = "narrative_cli"  # our key in chat_metadata and message extras (store/export.py)
DUMP_FORMAT = "narrative-cli-session"

SILLYTAVERN = "sillytavern"
EXPORT_JSONL = "export-jsonl"
EXPORT_JSON = "export-json"


@dataclass(frozen=True)
class UserTurn:
    """One user message to replay, and when it was sent (None: the log does not say)."""

    text: str
    sent: datetime | None = None
    rng_stream: int | None = None  # our dump records which try's random stream the turn used


@dataclass
class ReplayLog:
    """A chat log ready to replay: its greeting, its user turns and where it came from."""

    path: str
    label: str
    kind: str
    content_hash: str
    greeting: str | None
    turns: list[UserTurn]
    seed: int | None = None
    user_name: str | None = None
    started: datetime | None = None
    warnings: list[str] = field(default_factory=list)
    # every character message before the first user message, with its speaker's name: a
    # group chat opens with each member's greeting (``replay.runner.use_log_greeting``)
    greetings: tuple[tuple[str, str], ...] = ()
    # a dump of an imported session: the records of its first turns, taken from SillyTavern
    # and never played here (turns 1..N; ``turns`` holds them too, so numbers line up)
    imported: tuple[dict[str, Any], ...] = ()
    catch_up_through: int = 0  # the last imported turn the session caught up on (0: none)

    @property
    def derived_seed(self) -> int:
        """A seed taken from the log's content, so an unseeded replay is still repeatable."""
        return int(self.content_hash.split(":", 1)[-1][:8], 16) % 2**31


def read_logs(paths: Sequence[str | os.PathLike[str]]) -> list[ReplayLog]:
    """Every log of ``paths``, labelled uniquely; ChatFileError names the first bad file."""
    if not paths:
        raise ChatFileError("no chat logs given: narrative replay LOG... --card CARD")
    logs = [read_log(path) for path in paths]
    for log, label in zip(logs, unique_labels([log.path for log in logs]), strict=True):
        log.label = label
    return logs


def read_log(path: str | os.PathLike[str]) -> ReplayLog:
    """One log: a SillyTavern chat, our ``.jsonl`` export or our JSON dump."""
    where = os.fspath(path)
    data = files.read_bytes(path, limit=files.MAX_CHAT_BYTES, error=ChatFileError, kind="chat")
    text = files.decode_text(data, where, ChatFileError, "chat")
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    dump = _as_dump(text, where)
    if dump is not None and ("turns" in dump or "format" in dump):
        log = _from_dump(dump, where, digest)
    else:
        log = _from_chat(parse_chat(text, where), where, digest)
    if not log.turns:
        raise ChatFileError(f"{where}: the log has no user messages to replay")
    return log


def unique_labels(paths: Sequence[str]) -> list[str]:
    """Short names for logs: the file stem, with parent folders added until names differ."""
    parts = [Path(path).with_suffix("").parts or (path,) for path in paths]
    depth = [1] * len(paths)
    for _ in range(max((len(p) for p in parts), default=1)):
        labels = ["/".join(p[-d:]) for p, d in zip(parts, depth, strict=True)]
        counts = Counter(labels)
        clashes = [i for i, label in enumerate(labels) if counts[label] > 1]
        if not clashes:
            return labels
        for i in clashes:
            depth[i] = min(depth[i] + 1, len(parts[i]))
    labels = ["/".join(p[-d:]) for p, d in zip(parts, depth, strict=True)]
    seen: Counter[str] = Counter()
    unique = []
    for label in labels:
        seen[label] += 1
        unique.append(label if seen[label] == 1 else f"{label}-{seen[label]}")
    return unique


# -- SillyTavern chats and our .jsonl export ------------------------------------------------


def _from_chat(chat: Chat, where: str, digest: str) -> ReplayLog:
    ours = chat.chat_metadata.get(NAMESPACE)
    kind = EXPORT_JSONL if isinstance(ours, dict) else SILLYTAVERN
    session = ours.get("session") if isinstance(ours, dict) else None
    greeting: str | None = None
    greetings: list[tuple[str, str]] = []
    turns: list[UserTurn] = []
    warnings: list[str] = []
    for number, message in enumerate(chat.messages, start=1):
        if message.is_system:
            warnings.append(f"message {number} is hidden (is_system) and was skipped")
        elif not message.is_user:
            if not turns:
                greetings.append((message.name, message.mes))
            if greeting is None and not turns:
                greeting = message.mes
            elif turns and kind == EXPORT_JSONL:
                turns[-1] = _with_stream(turns[-1], message.extra)
        elif not message.mes.strip():
            warnings.append(f"message {number} is an empty user message and was skipped")
        else:
            turns.append(UserTurn(message.mes, parse_when(message.send_date)))
    if chat.skipped_lines:
        warnings.append(f"{chat.skipped_lines} line(s) that are not chat messages were skipped")
        warnings.extend(f"{where}: {problem}; skipped" for problem in chat.problems)
    return ReplayLog(
        path=where,
        label=Path(where).stem,
        kind=kind,
        content_hash=digest,
        greeting=greeting,
        turns=turns,
        seed=_seed(session),
        user_name=chat.user_name or None,
        started=parse_when(chat.create_date) or (turns[0].sent if turns else None),
        warnings=warnings,
        greetings=tuple(greetings),
    )


def _with_stream(turn: UserTurn, extra: object) -> UserTurn:
    """The user turn with the random stream our export recorded with the chosen reply."""
    ours = extra.get(NAMESPACE) if isinstance(extra, dict) else None
    record = ours.get("record") if isinstance(ours, dict) else None
    stream = record.get("rng_stream") if isinstance(record, dict) else None
    return replace(turn, rng_stream=stream) if isinstance(stream, int) else turn


# -- our JSON dump --------------------------------------------------------------------------


def _as_dump(text: str, where: str) -> Any | None:
    """The parsed dump when ``text`` is one JSON object (not JSON lines), else None."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        if where.lower().endswith(".json"):
            files.parse_json_text(text, where, ChatFileError, "session dump")  # names the line
        return None
    return value if isinstance(value, dict) and "messages" not in value else None


def _from_dump(dump: Any, where: str, digest: str) -> ReplayLog:
    if not isinstance(dump, dict) or dump.get("format") != DUMP_FORMAT:
        raise ChatFileError(
            f"{where}: not a narrative-cli session dump (no format {DUMP_FORMAT!r})"
        )
    raw_turns = dump.get("turns")
    if not isinstance(raw_turns, list):
        raise ChatFileError(f"{where}: the session dump has no 'turns' list")
    greeting: str | None = None
    turns: list[UserTurn] = []
    warnings: list[str] = []
    imported: list[dict[str, Any]] = []
    for position, turn in enumerate(raw_turns):
        number, record, created = _dump_turn(turn, where, position)
        if number == 0:
            greeting = str(record.get("narrative") or "") or None
            continue
        text = str(record.get("user_input") or "")
        if is_imported(record) and len(imported) == len(turns) == number - 1:
            imported.append(record)  # read by the catch-up, not played: empty input or not
            turns.append(UserTurn(text, parse_when(created)))
            continue
        if text.strip():
            stream = record.get("rng_stream")
            turns.append(
                UserTurn(text, parse_when(created), stream if isinstance(stream, int) else None)
            )
        else:
            warnings.append(f"turn {number} has no user input and was skipped")
    session = dump.get("session")
    return ReplayLog(
        path=where,
        label=Path(where).stem,
        kind=EXPORT_JSON,
        content_hash=digest,
        greeting=greeting,
        turns=turns,
        seed=_seed(session),
        user_name=_dump_user(session, bool(imported)),
        started=parse_when(session.get("created_at")) if isinstance(session, dict) else None,
        warnings=warnings,
        imported=tuple(imported),
        catch_up_through=_caught_up(dump.get("catch_up"), len(imported)),
    )


def _dump_user(session: Any, imported: bool) -> str | None:
    """The name the session played the user under, as ``run --resume`` opens it: the name
    its settings give; else, for an imported chat without a persona, the chat's own user
    (the header's name); else the header's name for a session played here."""
    settings = session.get("settings") if isinstance(session, dict) else None
    if not imported:
        return _text(session, "user_name")
    if _text(settings, "user_name") or _text(settings, "persona"):
        return _text(settings, "user_name")
    return _text(session, "user_name")


def _caught_up(progress: Any, imported: int) -> int:
    """How far the dumped session's catch-up read (``through``; 0 when it never ran or the
    player declined before it read anything), within its imported turns."""
    through = progress.get("through") if isinstance(progress, dict) else None
    if not isinstance(through, int) or isinstance(through, bool):
        return 0
    return max(0, min(through, imported))


def is_imported(record: dict[str, Any]) -> bool:
    """A turn taken from a SillyTavern chat and never played here (we write ``mode``)."""
    return "imported" in record and "mode" not in record


def _dump_turn(turn: Any, where: str, position: int) -> tuple[int, dict[str, Any], Any]:
    """(number, selected record, created_at) of one dumped turn."""
    problem = f"{where}: turns[{position}]"
    if not isinstance(turn, dict) or not isinstance(turn.get("number"), int):
        raise ChatFileError(f"{problem}: not a turn (no number)")
    swipes = turn.get("swipes")
    selected = turn.get("swipe_id", 0)
    if not isinstance(swipes, list) or not isinstance(selected, int):
        raise ChatFileError(f"{problem}: no swipes list")
    if not 0 <= selected < len(swipes) or not isinstance(swipes[selected], dict):
        raise ChatFileError(f"{problem}: swipe_id {selected} is not one of its swipes")
    record = swipes[selected].get("record")
    if not isinstance(record, dict):
        raise ChatFileError(f"{problem}: the selected swipe has no record")
    return int(turn["number"]), record, turn.get("created_at")


def _text(session: Any, key: str) -> str | None:
    value = session.get(key) if isinstance(session, dict) else None
    return value if isinstance(value, str) and value.strip() else None


def _seed(session: Any) -> int | None:
    if isinstance(session, dict):
        seed = session.get("seed")
        if isinstance(seed, int) and not isinstance(seed, bool):
            return seed
    return None


# -- dates ----------------------------------------------------------------------------------

_ST_FORMATS = ("%B %d, %Y %I:%M%p", "%B %d, %Y %I:%M %p", "%Y-%m-%d %H:%M:%S")
_HUMANIZED = re.compile(
    r"^(\d{4})-(\d{1,2})-(\d{1,2})@(\d{1,2})h(\d{1,2})m(\d{1,2})s(?:(\d{1,3})ms)?$"
)


def parse_when(value: Any) -> datetime | None:
    """A message date as SillyTavern writes it (epoch ms, ISO, ``April 22, 2025 6:00pm``,
    ``2025-04-22@18h00m52s123ms``); None when it cannot be read. A date written without a
    zone stays naive, so time macros show the wall-clock time the log shows."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        seconds = value / 1000 if value > 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    text = str(value).strip()
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return _st_date(text)


def _st_date(text: str) -> datetime | None:
    humanized = _HUMANIZED.match(text)
    try:
        if humanized:
            y, mo, d, h, mi, sec, ms = (int(g or 0) for g in humanized.groups())
            return datetime(y, mo, d, h, mi, sec, ms * 1000)
        for pattern in _ST_FORMATS:
            try:
                return datetime.strptime(text, pattern)
            except ValueError:
                continue
    except ValueError:
        return None
    return None
