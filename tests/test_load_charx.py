"""CHARX cards: real zip files, bytes before the zip, and every way an archive can be hostile."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from narrative_cli.errors import CardError
from narrative_cli.load import load_card
from narrative_cli.load.charx import read_charx, unsafe_member
from narrative_cli.load.png import encode_rgba

CARD = {"spec": "chara_card_v3", "spec_version": "3.0",
        "data": {"name": "Risu", "first_mes": "Hello from a zip.", "group_only_greetings": [],
                 "assets": [{"type": "icon", "uri": "embeded://assets/icon/images/main.png",
                             "name": "main", "ext": "png"}]}}


def make_charx(path: Path, members: dict[str, bytes], prefix: bytes = b"") -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    if prefix:
        path.write_bytes(prefix + path.read_bytes())
    return path


def standard_members() -> dict[str, bytes]:
    return {"card.json": json.dumps(CARD).encode(),
            "assets/icon/images/main.png": encode_rgba(1, 1, b"\x10\x20\x30\xff"),
            "module.risum": b"\x00risu module"}


def test_charx_card_is_read_with_its_assets_listed(tmp_path: Path) -> None:
    path = make_charx(tmp_path / "risu.charx", standard_members())
    card = load_card(path)
    assert (card.name, card.spec, card.source) == ("Risu", "chara_card_v3", "charx")
    assert card.assets[0]["uri"] == "embeded://assets/icon/images/main.png"
    contents = read_charx(path.read_bytes(), "risu.charx")
    assert sorted(contents.members) == ["assets/icon/images/main.png", "card.json",
                                        "module.risum"]


def test_bytes_before_the_zip_are_skipped(tmp_path: Path) -> None:
    jpeg_front = b"\xff\xd8\xff\xe0" + b"JFIF" + bytes(200)
    path = make_charx(tmp_path / "cover.jpg", standard_members(), prefix=jpeg_front)
    assert load_card(path).first_mes == "Hello from a zip."


@pytest.mark.parametrize("name", ["../evil.txt", "/etc/evil", "assets/../../evil", "C:/evil",
                                  "assets\\..\\evil"])
def test_path_traversal_is_refused(tmp_path: Path, name: str) -> None:
    assert unsafe_member(name)
    path = make_charx(tmp_path / "evil.charx", {**standard_members(), name: b"x"})
    with pytest.raises(CardError, match=r"evil\.charx: unsafe path .* \(path traversal\)"):
        load_card(path)


def test_safe_nested_names_are_allowed() -> None:
    assert not unsafe_member("assets/other/..hidden/file..txt")


def test_zip_bomb_is_refused_before_inflating(tmp_path: Path) -> None:
    members = {**standard_members(), "assets/other/bomb.bin": bytes(40 * 1024 * 1024)}
    path = make_charx(tmp_path / "bomb.charx", members)
    assert path.stat().st_size < 200_000
    with pytest.raises(CardError, match=r"bomb\.charx: 'assets/other/bomb\.bin' would inflate "
                                        r"\d+-fold .*\(a zip bomb\)"):
        load_card(path)


def test_too_many_files_are_refused(tmp_path: Path) -> None:
    members = {f"assets/other/{i}.txt": b"" for i in range(10_001)}
    path = make_charx(tmp_path / "many.charx", {**standard_members(), **members})
    with pytest.raises(CardError, match="holds 10004 files"):
        load_card(path)


def test_missing_card_json_and_missing_spec(tmp_path: Path) -> None:
    no_card = make_charx(tmp_path / "empty.charx", {"readme.txt": b"hi"})
    with pytest.raises(CardError, match=r"empty\.charx: the CHARX archive has no card\.json"):
        load_card(no_card)
    no_spec = make_charx(tmp_path / "nospec.charx", {"card.json": b'{"name": "X"}'})
    with pytest.raises(CardError, match="has no 'spec' field"):
        load_card(no_spec)


def test_damaged_archive(tmp_path: Path) -> None:
    path = make_charx(tmp_path / "cut.charx", standard_members())
    path.write_bytes(path.read_bytes()[:60])
    with pytest.raises(CardError, match=r"cut\.charx: the CHARX zip archive is damaged"):
        load_card(path)
