"""Write the samples of ``sample_cards/``: ``python sample_cards/make_samples.py``.

All text here is ours. The output is deterministic: running the script twice gives the same
bytes, and a test checks the committed files match it.

- lantern-keeper.png: an English V2 PNG card (one ``chara`` chunk) whose embedded book
  exercises every route the design document gives (constant positions 4, 0 and 1, keyword
  entries with secondary keys and selectiveLogic, a roll_dice planning tool, a custom code
  tool, a post_pipeline llm tool with output_tag/tag_lookback, [initvar], [mvu_update], [UI],
  and a disabled entry).
- fog-harbor-zh.json: a Chinese V3 JSON card (雾港) with its own book.
- qingshi-trpg-zh.json: a Chinese TRPG card (青石巷怪谈, Call of Cthulhu style) whose book
  states check rules and declares roll_dice, so its checks go through the dice engine.
- sample-world.json: a SillyTavern world file, full 1.18 fields on some entries, legacy on others.
- sample-chat.jsonl: a short SillyTavern 1.18 chat with lantern-keeper.
- night-ferry-wren.json + night-ferry-pip.json (English) and night-ferry-wenlan-zh.json +
  night-ferry-aqi-zh.json (Chinese): the sample group, two characters each with a book of
  their own (``narrative run night-ferry-wren.json night-ferry-pip.json``), and
  night-ferry.group.json, a SillyTavern group file of the English pair in join mode.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "src")]

from group_texts import GROUP_CARDS, GROUP_FILE  # noqa: E402
from sample_texts import (  # noqa: E402
    FOG_HARBOR,
    LANTERN_KEEPER,
    SAMPLE_CHAT,
    SAMPLE_WORLD,
)
from trpg_texts import TRPG_CARD  # noqa: E402

from narrative_cli.load import card_to_png, parse_card_object  # noqa: E402
from narrative_cli.load.png import encode_rgba  # noqa: E402

Pixel = tuple[int, int, int]


def _blend(base: Pixel, top: Pixel, amount: float) -> Pixel:
    a = max(0.0, min(1.0, amount))
    r, g, b = (round(x * (1 - a) + y * a) for x, y in zip(base, top, strict=True))
    return r, g, b


def _lantern_pixel(x: int, y: int) -> Pixel:
    """One pixel of a 64×64 lantern glowing in night fog."""
    sky = _blend((18, 26, 46), (52, 64, 88), y / 63)
    glow = math.hypot(x - 32, (y - 33) * 0.9)
    color = _blend(sky, (255, 196, 92), 0.55 * (1 - glow / 26))
    metal = (44, 42, 48)
    if 4 <= y <= 12 and abs(math.hypot(x - 32, y - 9) - 4) < 1.1:
        return metal  # the handle ring
    if 13 <= y <= 19 and abs(x - 32) <= 5 + (y - 13):
        return _blend(metal, (90, 84, 80), (19 - y) / 10)  # the cap
    if 20 <= y <= 44 and abs(x - 32) <= 10:
        if abs(x - 32) >= 9 or y in (20, 44) or abs(x - 32) == 3 and y % 2 == 0:
            return metal  # the frame and its bars
        flame = math.hypot((x - 32) * 1.6, y - 34)
        if flame < 7:
            return _blend((255, 250, 215), (255, 150, 50), flame / 7)
        return _blend((255, 222, 140), (250, 180, 80), abs(x - 32) / 9)
    if 45 <= y <= 49 and abs(x - 32) <= 12:
        return metal  # the base
    if 50 <= y <= 52 and abs(x - 32) <= 14:
        return (30, 28, 34)
    return color


def lantern_image() -> bytes:
    """The card picture: a small lantern, drawn pixel by pixel and zlib-encoded."""
    pixels = bytearray()
    for y in range(64):
        for x in range(64):
            pixels.extend((*_lantern_pixel(x, y), 255))
    return encode_rgba(64, 64, bytes(pixels))


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2) + "\n"


def _chat_text(lines: list[dict[str, Any]]) -> str:
    return "\n".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) for line in lines)


def outputs() -> dict[str, bytes]:
    """File name → bytes of every generated sample."""
    lantern = parse_card_object(LANTERN_KEEPER, "lantern-keeper.png")
    fog = parse_card_object(FOG_HARBOR, "fog-harbor-zh.json")  # validates the card
    assert fog.spec == "chara_card_v3"
    trpg = parse_card_object(TRPG_CARD, "qingshi-trpg-zh.json")
    assert trpg.spec == "chara_card_v3"
    return {
        "lantern-keeper.png": card_to_png(lantern, lantern_image(), ccv3=False),
        "fog-harbor-zh.json": _json_text(FOG_HARBOR).encode("utf-8"),
        "qingshi-trpg-zh.json": _json_text(TRPG_CARD).encode("utf-8"),
        "sample-world.json": _json_text(SAMPLE_WORLD).encode("utf-8"),
        "sample-chat.jsonl": _chat_text(SAMPLE_CHAT).encode("utf-8"),
        **{name: _group_card(name, card) for name, card in GROUP_CARDS.items()},
        "night-ferry.group.json": _json_text(GROUP_FILE).encode("utf-8"),
    }


def _group_card(name: str, card: dict[str, Any]) -> bytes:
    """One card of the sample group (issue 19), checked by the card loader first."""
    parse_card_object(card, name)
    return _json_text(card).encode("utf-8")


def main() -> None:
    for name, data in outputs().items():
        (HERE / name).write_bytes(data)
        print(f"wrote sample_cards/{name} ({len(data)} bytes)")


if __name__ == "__main__":
    main()
