"""Files narrative-cli must never write over: the session database it has open, and friends.

``narrative sessions export 1 ~/.../sessions.db`` once wrote a chat over the live database and
every session was gone. Every path we write to on the user's behalf (exports, reports,
``--trace``) goes through :func:`check_target` first, which refuses:

- a **held** file: one the project holds open (the session database with its ``-wal``,
  ``-shm`` and ``-journal`` files, and the session lock files), compared by resolved path
  (so a symlink to it is caught) and by device and inode (so a hard link is caught too);
- the default session database of this ``NARRATIVE_HOME`` even when no process has it open,
  and the home's own ``config.yaml`` and REPL history;
- anything that exists but is not a regular file (a directory, a FIFO), and any SQLite
  database (another process's session database under a name of its own, say);
- an existing regular file, unless the user said ``--force``.

``--force`` never makes a held file writable: there is no flag that loses the sessions.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from pathlib import Path

from narrative_cli import paths
from narrative_cli.errors import BadInput

SIDECARS = ("", "-wal", "-shm", "-journal")
SQLITE_MAGIC = b"SQLite format 3\x00"

_lock = threading.Lock()
_held: Counter[tuple[str, str]] = Counter()  # (resolved path, what it is) → open count


def hold(path: Path | str, what: str, *, sidecars: bool = False) -> None:
    """Mark ``path`` (and its SQLite side files when ``sidecars``) as not to be written over."""
    with _lock:
        for name in _names(path, sidecars):
            _held[(name, what)] += 1


def release(path: Path | str, what: str, *, sidecars: bool = False) -> None:
    """Undo one :func:`hold` of ``path``."""
    with _lock:
        for name in _names(path, sidecars):
            key = (name, what)
            _held[key] -= 1
            if _held[key] <= 0:
                del _held[key]


def protected(path: Path | str) -> str | None:
    """What ``path`` is when it names a held file (or the home's database), else None."""
    target = Path(path).expanduser()
    resolved = _resolve(target)
    identity = _identity(target)
    for name, what in _candidates():
        if resolved == name:
            return what
        if identity is not None and identity == _identity(Path(name)):
            return what
    return None


def check_target(
    path: Path | str, *, force: bool, error: type[BadInput] = BadInput, kind: str = "output"
) -> None:
    """Refuse to write ``path`` when that would destroy something (see the module doc)."""
    where = os.fspath(path)
    what = protected(path)
    if what is not None:
        raise error(
            f"{where}: refusing to write the {kind} over {what}",
            hint="choose another file name; --force cannot override this",
        )
    target = Path(where).expanduser()
    if not os.path.lexists(target):
        return
    if target.is_dir():
        raise error(f"{where}: is a directory, not a file to write the {kind} to")
    if not target.is_file():
        raise error(f"{where}: is not a regular file; refusing to write the {kind} to it")
    if _is_sqlite(target):  # another process's session database, say: not ours to replace
        raise error(
            f"{where}: is a SQLite database; refusing to write the {kind} over it",
            hint="choose another file name; --force cannot override this",
        )
    if not force:
        raise error(f"{where}: the file already exists", hint="pass --force to overwrite it")


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def _names(path: Path | str, sidecars: bool) -> list[str]:
    base = _resolve(Path(path).expanduser())
    return [base + suffix for suffix in SIDECARS] if sidecars else [base]


def _candidates() -> list[tuple[str, str]]:
    with _lock:
        found = list(_held)
    try:
        home_db = paths.database_file()
        own = [(paths.config_file(), "narrative-cli's config file"),
               (paths.history_file(), "the REPL's input history")]  # fmt: skip
    except Exception:  # noqa: BLE001 - an odd HOME only means there is no default to protect
        return found
    found += [(name, "the session database") for name in _names(home_db, True)]
    found += [(name, what) for path, what in own for name in _names(path, False)]
    return found


def _resolve(path: Path) -> str:
    try:
        return str(path.resolve())
    except (OSError, RuntimeError):  # a symlink loop: compare as written
        return os.path.abspath(path)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except (OSError, ValueError):
        return None
    return info.st_dev, info.st_ino
