"""Bad input through the CLI: exit code 2 and one line naming the file and the problem."""

from __future__ import annotations

import base64
import json
import os
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from narrative_cli.cli.app import app
from narrative_cli.load.files import MAX_CARD_BYTES
from narrative_cli.load.png import Chunk, build_png, encode_rgba, parse_chunks, text_chunk

CARD = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Ann", "first_mes": "Hi"}}


def png_with(*chunks: Chunk) -> bytes:
    base = parse_chunks(encode_rgba(4, 4, bytes(64)))
    return build_png([*base[:-1], *chunks, base[-1]])


def card_png(payload: str) -> bytes:
    return png_with(text_chunk("chara", payload))


def b64(value: object) -> str:
    return base64.b64encode(json.dumps(value).encode()).decode()


def charx(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def inspect_fails(*args: str) -> str:
    """Run ``narrative inspect``; assert exit 2 and one clean line; return that line."""
    result = CliRunner().invoke(app, ["inspect", *args])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def test_truncated_png(tmp_path: Path) -> None:
    path = tmp_path / "cut.png"
    path.write_bytes(card_png(b64(CARD))[:-30])
    line = inspect_fails(str(path))
    assert str(path) in line and "truncated" in line


def test_png_without_card_chunk(tmp_path: Path) -> None:
    path = tmp_path / "avatar.png"
    path.write_bytes(png_with(text_chunk("Software", "paint")))
    line = inspect_fails(str(path))
    assert str(path) in line and "holds no character card" in line


def test_bad_base64(tmp_path: Path) -> None:
    path = tmp_path / "b64.png"
    path.write_bytes(card_png("eyJuYW1lIjo*not-base64*"))
    line = inspect_fails(str(path))
    assert str(path) in line and "'chara' is not valid base64" in line


def test_invalid_json(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"spec": "chara_card_v2", "data": {"name": "Ann",}}', encoding="utf-8")
    line = inspect_fails(str(path))
    assert str(path) in line and "invalid JSON" in line and "line 1, column" in line


def test_invalid_json_inside_a_png(tmp_path: Path) -> None:
    path = tmp_path / "json.png"
    path.write_bytes(card_png(base64.b64encode(b'{"spec": ').decode()))
    line = inspect_fails(str(path))
    assert str(path) in line and "does not hold valid JSON" in line


def test_unknown_spec(tmp_path: Path) -> None:
    path = tmp_path / "future.json"
    path.write_text(json.dumps({**CARD, "spec": "chara_card_v9"}), encoding="utf-8")
    line = inspect_fails(str(path))
    assert str(path) in line and "unknown card spec 'chara_card_v9'" in line


def test_charx_with_path_traversal(tmp_path: Path) -> None:
    path = charx(tmp_path / "evil.charx", {"card.json": json.dumps(CARD).encode(),
                                           "../../.bashrc": b"echo owned"})
    line = inspect_fails(str(path))
    assert str(path) in line and "'../../.bashrc'" in line and "path traversal" in line


def test_zip_bomb(tmp_path: Path) -> None:
    path = charx(tmp_path / "bomb.charx", {"card.json": json.dumps(CARD).encode(),
                                           "assets/x.bin": bytes(30 * 1024 * 1024)})
    line = inspect_fails(str(path))
    assert str(path) in line and "zip bomb" in line


def test_charx_without_card_json(tmp_path: Path) -> None:
    path = charx(tmp_path / "nocard.charx", {"assets/readme.txt": b"hello"})
    line = inspect_fails(str(path))
    assert str(path) in line and "no card.json" in line


@pytest.mark.parametrize(("entry", "problem"), [
    ({"key": [{}]}, "entry 0: 'key' must be a list of strings, but holds an object"),
    ({"content": {"text": "x"}}, "entry 0: 'content' must be text, got object"),
    ({"order": "first"}, "entry 0: 'order' must be a number, got string"),
])
def test_lorebook_entries_with_wrong_types(tmp_path: Path, entry: dict[str, object],
                                           problem: str) -> None:
    card = tmp_path / "ann.json"
    card.write_text(json.dumps(CARD), encoding="utf-8")
    world = tmp_path / "world.json"
    world.write_text(json.dumps({"entries": {"0": {"uid": 0, "key": ["a"], **entry}}}),
                     encoding="utf-8")
    line = inspect_fails(str(card), "--lorebook", str(world))
    assert line == f"error: {world}: {problem}"


def test_oversized_card_file(tmp_path: Path) -> None:
    path = tmp_path / "huge.png"
    with path.open("wb") as handle:
        handle.write(card_png(b64(CARD)))
        handle.truncate(MAX_CARD_BYTES + 1)  # sparse: nothing of it is ever read
    assert os.path.getsize(path) > MAX_CARD_BYTES
    line = inspect_fails(str(path))
    assert str(path) in line and "too large (67,108,865 bytes; the limit is 64 MiB)" in line


def test_missing_file(tmp_path: Path) -> None:
    line = inspect_fails(str(tmp_path / "nowhere.png"))
    assert line == f"error: {tmp_path / 'nowhere.png'}: no such card file"
