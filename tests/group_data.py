"""A SillyTavern user data folder with a group, built by the group tests (#19).

``install_group(tmp_path)`` lays out ``data/default-user`` as SillyTavern 1.18 does: PNG cards
in ``characters/``, ``groups/<id>.json`` written the way its ``/api/groups/create`` writes it
(``JSON.stringify(group, null, 4)``), and the group's chat in ``group chats/<chat id>.jsonl``
with the 1.18 header and the fields SillyTavern puts on group messages.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from narrative_cli.domain import Card
from narrative_cli.load.card_export import card_to_png

GROUP_ID = "1714000000000"
CHAT_ID = "1714000000000"


def st_json(value: Any) -> str:
    """``JSON.stringify(value, null, 4)``."""
    return json.dumps(value, ensure_ascii=False, indent=4)


def write_png_card(folder: Path, file: str, name: str, talkativeness: Any = None,
                   first_mes: str = "") -> Path:
    extensions = {} if talkativeness is None else {"talkativeness": talkativeness}
    card = Card(name=name, description=f"{{{{char}}}} is {name}.", first_mes=first_mes,
                extensions=extensions)
    path = folder / file
    path.write_bytes(card_to_png(card))
    return path


def group_file(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": GROUP_ID,
        "name": "Tea Party",
        "members": ["alice.png", "bob.png", "露米.png"],
        "avatar_url": "",
        "allow_self_responses": True,
        "activation_strategy": 3,
        "generation_mode": 1,
        "disabled_members": ["露米.png", "bob.png"],
        "fav": False,
        "chat_id": CHAT_ID,
        "chats": [CHAT_ID, "1713000000000"],
        "auto_mode_delay": 5,
        "generation_mode_join_prefix": "<{{char}}>",
        "generation_mode_join_suffix": "</{{char}}>",
        "hideMutedSprites": False,
        "some_extension": {"kept": [1, 2, 3]},
    }
    data.update(changes)
    return data


def chat_lines(scenario: str = "A rainy afternoon.") -> list[dict[str, Any]]:
    """A group chat as SillyTavern 1.18 saves it: header, two greetings, two rounds."""
    def reply(name: str, avatar: str, text: str, gen_id: int, **more: Any) -> dict[str, Any]:
        return {"name": name, "is_user": False, "is_system": False,
                "send_date": "2026-05-03T10:00:00.000Z", "mes": text,
                "extra": {"gen_id": gen_id, "api": "openai", "model": "gpt"},
                "force_avatar": f"/thumbnail?type=avatar&file={quote(avatar)}",
                "original_avatar": avatar, **more}

    return [
        {"chat_metadata": {"integrity": "6d1f6a1c-0000-4000-8000-000000000000",
                           "scenario": scenario, "note_prompt": "", "tainted": True},
         "user_name": "unused", "character_name": "unused"},
        reply("Alice", "alice.png", "Alice pours tea.", 1),
        reply("Bob", "bob.png", "Bob waves.", 2),
        {"name": "You", "is_user": True, "is_system": False,
         "send_date": "2026-05-03T10:01:00.000Z", "mes": "Hello, Alice and Bob!",
         "extra": {}, "force_avatar": "User Avatars/user-default.png"},
        reply("Alice", "alice.png", "Alice smiles.", 3,
              send_date="2026-05-03T10:02:30.000Z",  # the selected swipe's, as ST keeps it
              swipes=["Alice nods.", "Alice smiles."], swipe_id=1,
              swipe_info=[{"send_date": "2026-05-03T10:02:00.000Z", "extra": {"gen_id": 3}},
                          {"send_date": "2026-05-03T10:02:30.000Z",
                           "extra": {"gen_id": 3, "api": "openai", "model": "gpt"}}]),
        reply("Bob", "bob.png", "Bob grins.", 3),
        {"name": "You", "is_user": True, "is_system": False,
         "send_date": "2026-05-03T10:03:00.000Z", "mes": "露米?", "extra": {}},
        reply("露米埃尔", "露米.png", "露米埃尔点点头。", 4,
              swipes=["露米埃尔摇摇头。", "露米埃尔点点头。"], swipe_id=1,
              swipe_info=[{"send_date": "2026-05-03T10:00:00.000Z", "extra": {"gen_id": 4}},
                          {"send_date": "2026-05-03T10:00:00.000Z",
                           "extra": {"gen_id": 4, "api": "openai", "model": "gpt"}}]),
    ]


def write_chat(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines),
                    encoding="utf-8")
    return path


def install_group(tmp_path: Path, **changes: Any) -> Path:
    """``SillyTavern/data/default-user`` with three cards, the group and its chat."""
    root = tmp_path / "SillyTavern" / "data" / "default-user"
    for sub in ("characters", "groups", "group chats", "chats", "worlds"):
        (root / sub).mkdir(parents=True)
    write_png_card(root / "characters", "alice.png", "Alice", "0.9", "Alice pours tea.")
    write_png_card(root / "characters", "bob.png", "Bob", 0.2, "Bob waves.")
    write_png_card(root / "characters", "露米.png", "露米埃尔", None, "露米埃尔行礼。")
    (root / "groups" / f"{GROUP_ID}.json").write_text(st_json(group_file(**changes)),
                                                      encoding="utf-8")
    write_chat(root / "group chats" / f"{CHAT_ID}.jsonl", chat_lines())
    return root
