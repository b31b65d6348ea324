"""The only module that touches the file system for loading: size-capped reads and safe writes.

Every read checks the file exists, is a regular file and is not larger than the cap for its
kind before a single byte is read, so a wrong path or a huge file gives a one-line message
instead of a memory spike. A FIFO, a device or a socket is refused before it is opened
(opening a FIFO blocks until a writer comes; ``/dev/zero`` never ends), and the file is opened
non-blocking and checked again, so swapping the path in between cannot hang us either.
Messages name the path as the user typed it.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from narrative_cli.errors import BadInput, Phrase, worded
from narrative_cli.i18n import has
from narrative_cli.safetext import MAX_JSON_DEPTH, clean_json, clean_surrogates, json_depth

MiB = 1024 * 1024

# Size caps per kind of file (bytes). Real cards are a few MB; chats can grow long.
MAX_CARD_BYTES = 64 * MiB
MAX_JSON_BYTES = 32 * MiB  # lorebooks, presets, regex scripts, settings
MAX_CHAT_BYTES = 256 * MiB
MAX_TEXT_BYTES = 4 * MiB  # persona files

PathLike = str | os.PathLike[str]


def _kind(kind: str) -> Phrase | str:
    """What the file is for (card, lorebook, preset, …), in the reader's language when the
    catalogs know the word."""
    key = "load.kind_" + kind.replace(" ", "_")
    return Phrase(key) if has(key, "en") else kind


def describe_size(size: int) -> str:
    """A size in words: ``12.0 MiB``, ``300 bytes``."""
    for unit, name in ((MiB, "MiB"), (1024, "KiB")):
        if size >= unit:
            value = size / unit
            return f"{value:.0f} {name}" if value.is_integer() else f"{value:.1f} {name}"
    return f"{size} bytes"


def read_bytes(path: PathLike, *, limit: int, error: type[BadInput], kind: str) -> bytes:
    """The bytes of ``path``; ``error`` names the path when it is missing, odd or too large."""
    where = os.fspath(path)
    target = Path(where)
    try:
        info = target.stat()
    except FileNotFoundError:
        raise worded(error, "load.no_such_file", where=where, kind=_kind(kind)) from None
    except OSError as exc:
        raise worded(error, "load.cannot_read", where=where, kind=_kind(kind),
                     why=exc.strerror or exc) from None
    _check_regular(info.st_mode, where, error, kind)
    if info.st_size > limit:
        raise worded(error, "load.too_large", where=where, kind=_kind(kind),
                     size=f"{info.st_size:,}", limit=describe_size(limit))
    try:
        handle = os.fdopen(os.open(where, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb")
        with handle:
            _check_regular(os.fstat(handle.fileno()).st_mode, where, error, kind)
            data = handle.read(info.st_size + 1)  # a buffer of the real size, not of the cap
            if len(data) > info.st_size:  # it grew since stat()
                data += handle.read(limit + 1 - len(data))
    except OSError as exc:
        raise worded(error, "load.cannot_read", where=where, kind=_kind(kind),
                     why=exc.strerror or exc) from None
    if len(data) > limit:  # grew while we looked, or a special file
        raise worded(error, "load.larger_than", where=where, kind=_kind(kind),
                     limit=describe_size(limit))
    return data


def _check_regular(mode: int, where: str, error: type[BadInput], kind: str) -> None:
    """Refuse anything but a regular file, saying what it is."""
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise worded(error, "load.a_directory", where=where, kind=_kind(kind))
    what = Phrase(
        "load.fifo" if stat.S_ISFIFO(mode)
        else "load.device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "load.socket" if stat.S_ISSOCK(mode)
        else "load.irregular"
    )
    raise worded(error, "load.not_regular", where=where, what=what, kind=_kind(kind))


def decode_text(data: bytes, where: str, error: type[BadInput], kind: str) -> str:
    """UTF-8 text (a leading byte-order mark is dropped)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise worded(error, "load.not_utf8", where=where, kind=_kind(kind),
                     offset=exc.start) from None


def parse_json_text(text: str, where: str, error: type[BadInput], kind: str) -> Any:
    """Parsed JSON, or ``error`` naming the line and column of the first problem."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise worded(error, "load.bad_json", where=where, kind=_kind(kind), line=exc.lineno,
                     column=exc.colno, why=exc.msg) from None
    except RecursionError:
        raise worded(error, "load.too_deep", where=where, kind=_kind(kind)) from None
    if json_depth(value) > MAX_JSON_DEPTH:  # later walks of it would recurse that deep too
        raise worded(error, "load.deeper_than", where=where, kind=_kind(kind),
                     levels=MAX_JSON_DEPTH)
    return clean_json(value)  # an escaped lone surrogate would crash the first print of it


def read_text(path: PathLike, *, limit: int, error: type[BadInput], kind: str) -> str:
    """The UTF-8 text of ``path``, size-capped."""
    data = read_bytes(path, limit=limit, error=error, kind=kind)
    return decode_text(data, os.fspath(path), error, kind)


def read_json(path: PathLike, *, limit: int, error: type[BadInput], kind: str) -> Any:
    """The parsed JSON of ``path``, size-capped."""
    return parse_json_text(read_text(path, limit=limit, error=error, kind=kind),
                           os.fspath(path), error, kind)


def is_existing_file(path: PathLike) -> bool:
    """True when ``path`` names an existing regular file (False for odd or overlong text)."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


def is_special_file(path: PathLike) -> bool:
    """True when ``path`` exists but is neither a regular file nor a directory (a FIFO, a
    device, a socket): reading it is refused with a message rather than mistaken for text."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def write_bytes(
    path: PathLike, data: bytes, *, error: type[BadInput], kind: str, force: bool = True
) -> None:
    """Write ``data`` atomically: a temporary file in the same folder, then a rename.

    ``held.check_target`` runs first: never over the open session database (or a link to
    it), never over a directory or FIFO, and over an existing file only with ``force``
    (commands pass their ``--force`` flag; the default suits writers of their own files).
    """
    import secrets  # here, not at the top: reading a card never writes

    from narrative_cli.held import check_target  # (held needs paths, hence platformdirs)

    where = os.fspath(path)
    check_target(where, force=force, error=error, kind=f"{kind} file")
    target = Path(where)
    folder = target.parent if str(target.parent) else Path(".")
    temporary = folder / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # os.open applies the umask, so the file gets the same rights a plain write would give
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
            os.replace(temporary, target)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise error(f"{where}: cannot write the {kind} file ({exc.strerror or exc})") from None


def write_text(
    path: PathLike, text: str, *, error: type[BadInput], kind: str, force: bool = True
) -> None:
    """Write UTF-8 ``text`` atomically (a lone surrogate becomes U+FFFD, never a crash)."""
    data = clean_surrogates(text).encode("utf-8")
    write_bytes(path, data, error=error, kind=kind, force=force)
