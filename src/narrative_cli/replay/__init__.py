"""replay: ``narrative replay``, chat logs played through the pipeline in batch (issue 9).

``logs`` reads SillyTavern chats and our exports into user turns; ``runner.replay_logs`` plays
them as stored sessions (``--jobs`` under one shared ``limiter.TokenBucket``, resumable by the
keys of ``keys``), against the configured models (``sources``) or a recorded trace
(``recorded.RecordedBackend``, which raises ``ReplayMismatch`` with the first differing block
found by ``drift``); ``report`` turns a run into ``--report`` JSON and ``diff`` compares two.
"""

from __future__ import annotations

from narrative_cli.replay.logs import ReplayLog, UserTurn, read_log, read_logs
from narrative_cli.replay.runner import (
    LogOutcome,
    Progress,
    ReplayOptions,
    ReplayRun,
    replay_logs,
)

__all__ = [
    "LogOutcome",
    "Progress",
    "ReplayLog",
    "ReplayOptions",
    "ReplayRun",
    "UserTurn",
    "read_log",
    "read_logs",
    "replay_logs",
]
