"""Where user files live. ``NARRATIVE_HOME`` relocates all of them.

``usable_dir`` is how a folder of ours comes into use: created when missing, then checked to
be a writable directory, so a ``NARRATIVE_HOME`` that is a file, sits under a file, is
read-only or forbidden is one clear line (exit 2) naming the folder and the reason, never an
``internal error: OSError``.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from narrative_cli.errors import ConfigError

APP_NAME = "narrative-cli"


def home() -> Path | None:
    value = os.environ.get("NARRATIVE_HOME")
    return Path(value).expanduser() if value else None


def config_dir() -> Path:
    base = home()
    if base:
        return base
    import platformdirs  # here, not at the top: a command that never asks pays nothing

    return Path(platformdirs.user_config_dir(APP_NAME))


def data_dir() -> Path:
    base = home()
    if base:
        return base
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME))


def config_file() -> Path:
    return config_dir() / "config.yaml"


def database_file() -> Path:
    return data_dir() / "sessions.db"


def history_file() -> Path:
    return data_dir() / "history.txt"


def models_dir() -> Path:
    return data_dir() / "models"


def logs_dir() -> Path:
    return data_dir() / "logs"


def usable_dir(directory: Path, what: str = "the data folder") -> Path:
    """``directory``, created if needed; ConfigError says which folder and why it is unusable."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _unusable(directory, what, _why(directory, exc)) from None
    if not directory.is_dir():
        raise _unusable(directory, what, "it is a file, not a folder")
    if not os.access(directory, os.W_OK | os.X_OK):
        read_only = _read_only_fs(directory)
        why = "it is on a read-only file system" if read_only else "it is not writable"
        raise _unusable(directory, what, why)
    return directory


def _why(directory: Path, exc: OSError) -> str:
    if isinstance(exc, FileExistsError) or (directory.exists() and not directory.is_dir()):
        return "it is a file, not a folder"
    if isinstance(exc, NotADirectoryError) or exc.errno == errno.ENOTDIR:
        parent = next((p for p in directory.parents if p.exists() and not p.is_dir()), None)
        return f"{parent or 'a parent'} is a file, not a folder"
    if isinstance(exc, PermissionError):
        return "no permission to create it"
    if exc.errno == errno.EROFS:
        return "it is on a read-only file system"
    return exc.strerror or str(exc)


def _read_only_fs(directory: Path) -> bool:
    try:
        return bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        return False


def _unusable(directory: Path, what: str, why: str) -> ConfigError:
    source = " (from NARRATIVE_HOME)" if home() is not None else ""
    return ConfigError(
        f"cannot use {what} {directory}{source}: {why}",
        hint="set NARRATIVE_HOME to a folder you can write to, or unset it",
    )
