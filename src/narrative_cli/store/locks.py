"""One process per session: an OS file lock held while a session is open for play.

Two processes playing one session once both showed every turn and then failed each save.
Now opening a session for play takes an exclusive, non-blocking ``flock`` on
``.<database>-locks/session-<id>.lock`` (hidden, beside the database); a second process is
refused with a message naming the process that holds it. The lock belongs to the open file:
it dies with its process, so a ``kill -9`` or a power cut never leaves a stale lock behind
(the file stays, empty of meaning).
``flock`` locks conflict between two opens in the same process too, so a second
``PlaySession`` on the same session in one program is refused the same way.

Where ``fcntl`` is missing (Windows) ``msvcrt.locking`` on the file's first byte does the same.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import IO

from narrative_cli import held
from narrative_cli.errors import SessionBusy, StoreError

HELD_AS = "a session lock file narrative-cli holds"


def lock_path(database: Path, session_id: int) -> Path:
    """The lock file of a session in ``database``."""
    return database.parent / f".{database.name}-locks" / f"session-{session_id}.lock"


class SessionLock:
    """An exclusive lock on one session, held until :meth:`release` (or the process ends)."""

    def __init__(self, database: Path, session_id: int) -> None:
        self.path = lock_path(database, session_id)
        self.session_id = session_id
        self._handle: IO[str] | None = None

    def acquire(self, name: str = "") -> SessionLock:
        """Take the lock now or raise SessionBusy naming who holds it."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held until release
        except OSError as exc:
            raise StoreError(
                f"cannot create the session lock {self.path} ({exc.strerror or exc})"
            ) from None
        if not _try_lock(handle):
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            label = f"session {self.session_id}" + (f" ({name})" if name else "")
            raise SessionBusy(
                f"{label} is open in another narrative process ({holder})",
                hint="close it there first, or `narrative sessions list` to pick another",
            )
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} on {_host()}\n")
        handle.flush()
        self._handle = handle
        held.hold(self.path, HELD_AS)
        return self

    def release(self) -> None:
        """Let go of the lock (idempotent)."""
        handle, self._handle = self._handle, None
        if handle is None:
            return
        held.release(self.path, HELD_AS)
        try:
            handle.seek(0)
            handle.truncate()
        except OSError:
            pass
        _unlock(handle)
        handle.close()

    @property
    def locked(self) -> bool:
        return self._handle is not None


def _host() -> str:
    """This machine's name for the lock file's note (``os.uname`` where there is one: the
    ``socket`` module is not imported by every command for one name)."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


def is_locked(database: Path, session_id: int) -> bool:
    """True when some process holds the session's lock (probed without keeping it)."""
    path = lock_path(database, session_id)
    if not path.exists():
        return False
    try:
        handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError:
        return False
    with handle:
        if not _try_lock(handle):
            return True
        _unlock(handle)
        return False


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(handle: IO[str]) -> bool:
        try:
            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(handle: IO[str]) -> None:
        try:
            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
        except OSError:
            pass

else:
    import fcntl

    def _try_lock(handle: IO[str]) -> bool:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        return True

    def _unlock(handle: IO[str]) -> None:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        except OSError:
            pass
