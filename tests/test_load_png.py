"""PNG chunks: parsing with checks, text chunks of every kind, and writing card chunks."""

from __future__ import annotations

import base64
import json
import struct
import zlib

import pytest

from narrative_cli.errors import CardError
from narrative_cli.load import card_to_png, load_card, parse_card_bytes
from narrative_cli.load.png import (
    Chunk,
    PngError,
    build_png,
    chunk_bytes,
    encode_rgba,
    parse_chunks,
    placeholder_image,
    text_chunk,
    text_chunks,
)


def b64(value: object) -> str:
    return base64.b64encode(json.dumps(value).encode("utf-8")).decode("ascii")


def card_json(name: str, spec: str = "chara_card_v2") -> dict[str, object]:
    return {"spec": spec, "spec_version": "3.0" if spec.endswith("v3") else "2.0",
            "data": {"name": name, "description": f"{name} is here.", "first_mes": "Hello."}}


def png_with(*chunks: Chunk) -> bytes:
    """A real 2×2 image with extra chunks inserted before IEND."""
    base = parse_chunks(encode_rgba(2, 2, bytes(16)))
    return build_png([*base[:-1], *chunks, base[-1]])


def ztxt(keyword: str, text: str) -> Chunk:
    return Chunk(b"zTXt", keyword.encode() + b"\x00\x00" + zlib.compress(text.encode("latin-1")))


def itxt(keyword: str, text: str, compressed: bool) -> Chunk:
    body = zlib.compress(text.encode()) if compressed else text.encode()
    return Chunk(b"iTXt", keyword.encode() + b"\x00" + bytes([int(compressed), 0]) + b"zh\x00\x00"
                 + body)


def test_encoded_image_parses_back_into_its_chunks() -> None:
    data = encode_rgba(3, 2, bytes(range(24)))
    chunks = parse_chunks(data)
    assert [c.name for c in chunks] == ["IHDR", "IDAT", "IEND"]
    width, height = struct.unpack(">II", chunks[0].data[:8])
    assert (width, height) == (3, 2)
    assert zlib.decompress(chunks[1].data)[:13] == b"\x00" + bytes(range(12))


def test_text_chunks_of_all_three_kinds_are_decoded() -> None:
    data = png_with(text_chunk("Comment", "plain"), ztxt("Author", "squeezed"),
                    itxt("Title", "雾港", compressed=False),
                    itxt("Note", "压缩的文字", compressed=True))
    found = {(c.keyword, c.text, c.chunk_type) for c in text_chunks(data)}
    assert found == {("Comment", "plain", "tEXt"), ("Author", "squeezed", "zTXt"),
                     ("Title", "雾港", "iTXt"), ("Note", "压缩的文字", "iTXt")}


def test_truncated_png_names_the_chunk_that_is_cut() -> None:
    data = png_with(text_chunk("chara", b64(card_json("Ann"))))
    with pytest.raises(PngError, match=r"truncated \(chunk 'tEXt' needs"):
        parse_chunks(data[: len(data) - 40])
    with pytest.raises(PngError, match="ends before its IEND"):
        parse_chunks(data[:33])


def test_a_damaged_text_chunk_fails_its_crc_check() -> None:
    good = chunk_bytes(text_chunk("chara", b64(card_json("Ann"))))
    damaged = good[:-5] + bytes([good[-5] ^ 0xFF]) + good[-4:]
    data = png_with(text_chunk("x", "y")).replace(chunk_bytes(text_chunk("x", "y")), damaged)
    with pytest.raises(PngError, match="bad CRC"):
        parse_chunks(data)


def test_not_a_png_is_refused() -> None:
    with pytest.raises(PngError, match="signature"):
        parse_chunks(b"GIF89a....")


def test_a_compressed_chunk_that_inflates_too_far_is_refused() -> None:
    bomb = Chunk(b"zTXt", b"chara\x00\x00" + zlib.compress(b"A" * (65 * 1024 * 1024), 9))
    assert len(bomb.data) < 200_000
    with pytest.raises(PngError, match="inflates to more than 64 MiB"):
        text_chunks(png_with(bomb))


def test_ccv3_wins_over_chara_whatever_the_keyword_case() -> None:
    data = png_with(text_chunk("Chara", b64(card_json("From chara"))),
                    text_chunk("CCV3", b64(card_json("From ccv3", "chara_card_v3"))))
    card = parse_card_bytes(data, "both.png")
    assert (card.name, card.source, card.spec) == ("From ccv3", "png:ccv3", "chara_card_v3")


def test_cards_in_ztxt_and_itxt_chunks_and_raw_json_payloads_are_read() -> None:
    from_ztxt = parse_card_bytes(png_with(ztxt("chara", b64(card_json("Zed")))), "z.png")
    v3 = json.dumps(card_json("Ivy", "chara_card_v3"))
    from_itxt = parse_card_bytes(png_with(itxt("ccv3", v3, compressed=True)), "i.png")
    raw = json.dumps(card_json("Raw"))
    raw_json = parse_card_bytes(png_with(text_chunk("chara", raw)), "r.png")
    assert [from_ztxt.name, from_itxt.name, raw_json.name] == ["Zed", "Ivy", "Raw"]
    assert from_itxt.source == "png:ccv3"


def test_a_broken_ccv3_chunk_falls_back_to_chara() -> None:
    data = png_with(text_chunk("chara", b64(card_json("Backup"))),
                    text_chunk("ccv3", "@@@not base64"))
    card = parse_card_bytes(data, "fallback.png")
    assert (card.name, card.source) == ("Backup", "png:chara")


def test_an_ordinary_image_is_not_a_card() -> None:
    with pytest.raises(CardError, match="avatar.png: the PNG holds no character card"):
        parse_card_bytes(png_with(text_chunk("parameters", "steps: 20")), "avatar.png")


def test_export_puts_chara_then_ccv3_just_before_iend_and_keeps_other_chunks(tmp_path) -> None:
    image = png_with(text_chunk("prompt", "{comfy graph}"), text_chunk("chara", "old"),
                     ztxt("ccv3", "old too"))
    card = parse_card_bytes(png_with(text_chunk("chara", b64(card_json("Nell")))), "nell.png")
    out = card_to_png(card, image)
    chunks = parse_chunks(out)
    names = [c.name for c in chunks]
    assert names[-3:] == ["tEXt", "tEXt", "IEND"]
    texts = text_chunks(out)
    assert [t.keyword for t in texts] == ["prompt", "chara", "ccv3"]
    chara = json.loads(base64.b64decode(texts[1].text))
    ccv3 = json.loads(base64.b64decode(texts[2].text))
    assert ccv3 == {**chara, "spec": "chara_card_v3", "spec_version": "3.0"}
    assert chara["spec"] == "chara_card_v2"
    assert parse_chunks(image)[1] == chunks[1]  # the image data is untouched
    path = tmp_path / "nell.png"
    path.write_bytes(out)
    assert load_card(path).name == "Nell"


def test_export_without_an_image_uses_a_placeholder_and_v2_only_writes_one_chunk() -> None:
    card = parse_card_bytes(png_with(text_chunk("chara", b64(card_json("Pip")))), "pip.png")
    out = card_to_png(card, ccv3=False)
    assert [t.keyword for t in text_chunks(out)] == ["chara"]
    assert parse_chunks(out)[0] == parse_chunks(placeholder_image())[0]
    with pytest.raises(CardError, match="not a PNG"):
        card_to_png(card, b"GIF89a")
