"""Issue #17 item 3: a catch-up leaves the memory a played story would have.

- batches fitted to the profile's context window, a too-long message cut with a note;
- on an MVU card the catch_up prompt carries the card's ``[mvu_update]`` rules and the MVU
  command list, and ``/vars`` shows what the old turns changed (line mode, a subprocess);
- a long chat's summary is folded into chapters by the compaction agent exactly as a played
  story of the same turns folds it.

Real SQLite files, chats imported with ``store.chat_import``, the scripted server for every
model call; fixtures from ``../shared`` skip cleanly when it is absent.
"""

from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from narrative_cli import paths
from narrative_cli.context.blocks import MESSAGE_OVERHEAD_TOKENS
from narrative_cli.errors import BadInput
from narrative_cli.load import load_card
from narrative_cli.play import PlayOptions, PlaySession, catch_up
from narrative_cli.store import SessionStore
from narrative_cli.store.chat_import import import_chat_file
from narrative_cli.tokens import estimate_tokens
from narrative_cli.ui.console import recording_consoles
from narrative_cli.ui.screen import RichScreen
from tests import servers
from tests.conftest import SAMPLES, fixture_file
from tests.servers import RecordedRequest, Reply, ScriptedServer
from tests.test_run_linemode import narrative

scripted_server = servers.scripted_server  # until tests/conftest.py imports the fixtures
CARD = SAMPLES / "lantern-keeper.png"
_TURN = re.compile(r"\[(?:Turn |轮)(\d+)\] AI:")
_FOLD = re.compile(r"(?:turns|第) ?(\d+) ?(?:to|至|到|-|–) ?第?(\d+)")


def write_config(server: ScriptedServer, **extra: Any) -> None:
    """config.yaml in this test's NARRATIVE_HOME: the scripted server as the default profile."""
    profile: dict[str, Any] = {"provider": "openai", "base_url": server.base_url,
                               "model": "scripted-model", "read_timeout": 5}
    profile.update(extra.pop("profile", {}))
    data = {"default_profile": "scripted", "profiles": {"scripted": profile}, **extra}
    path = paths.config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")


def write_chat(path: Path, replies: list[str], *, greeting: str, user: str = "Wren",
               char: str = "Edda", inputs: list[str] | None = None) -> Path:
    """A SillyTavern chat: the greeting, then one user message and one reply per turn."""
    lines: list[dict[str, Any]] = [{"user_name": user, "character_name": char,
                                    "chat_metadata": {}}, _message(char, False, greeting)]
    for n, reply in enumerate(replies, start=1):
        said = inputs[n - 1] if inputs else f"I do chore number {n}."
        lines += [_message(user, True, said), _message(char, False, reply)]
    path.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines),
                    encoding="utf-8")
    return path


def _message(name: str, is_user: bool, text: str) -> dict[str, Any]:
    return {"name": name, "is_user": is_user, "is_system": False, "mes": text, "extra": {},
            "send_date": "2026-01-01T20:00:00.000Z"}


def prompt_of(request: RecordedRequest) -> str:
    return "\n".join(str(m["content"]) for m in request.messages)


def prompt_tokens(request: RecordedRequest) -> int:
    """The request's prompt as the project counts it (``context.blocks.Prompt.tokens``)."""
    return sum(estimate_tokens(str(m["content"])) + MESSAGE_OVERHEAD_TOKENS
               for m in request.messages)


def of(server: ScriptedServer, agent: str) -> list[RecordedRequest]:
    return [r for r in server.requests if r.agent == agent]


@dataclass
class MemoryScript:
    """catch_up: one item per turn of the batch (a summary line; ``mvu`` commands by turn);
    compaction: a chapter naming the turns it folds; played turns: a writer and an analyst
    whose summary line is the one catch_up gives for the same turn."""

    mvu: dict[int, str] = field(default_factory=dict)
    summary: str = "fact-{n}: the keeper logged night {n} and the fog stayed thick"
    batches: list[list[int]] = field(default_factory=list)
    narratives: deque[str] = field(default_factory=deque)
    played: int = 0
    queued_batch: int | None = None  # this catch_up call (0-based) is answered by the queue

    def __call__(self, body: Any, request: RecordedRequest) -> Reply | str | dict[str, Any] | None:
        agent = request.agent
        if agent == "catch_up":
            numbers = [int(n) for n in _TURN.findall(request.messages[-1]["content"])]
            self.batches.append(numbers)
            if self.queued_batch == len(self.batches) - 1:
                return None
            return {"turns": [self.item(n) for n in numbers]}
        if agent == "compaction":
            first, last = _FOLD.search(request.messages[-1]["content"]).groups()  # type: ignore[union-attr]
            return {"summary": f"chapter of turns {first}-{last}: the keeper kept the lamp"
                               " burning through the long foggy nights while the ships passed"}
        if agent == "planning":
            return {"narrative_direction": "on", "key_points": [], "tool_calls": []}
        if agent in ("writing", "merged_writing"):
            self.played += 1
            return self.narratives.popleft() if self.narratives else "The fog rolls on."
        if agent == "analysis":
            return {"events": [], "summary_entries": [self.summary.format(n=self.played)]}
        if agent.startswith("tool:"):
            return "<keeper_log>20:00. Fog thick. Lamp lit.</keeper_log>"
        if agent == "mvu_extract":
            return "<UpdateVariable></UpdateVariable>"
        return None

    def item(self, n: int) -> dict[str, Any]:
        return {"turn": n, "events": [], "summary_entries": [self.summary.format(n=n)],
                "mvu_update": self.mvu.get(n, "")}


def open_imported(store: SessionStore, chat: Path, card: Path, seed: int = 5) -> PlaySession:
    result = import_chat_file(store, chat, card, seed=seed)
    return PlaySession.open(store, PlayOptions(card=str(card), resume=str(result.session_id)))


def screen_for(play: PlaySession) -> RichScreen:
    return RichScreen.for_play(play, recording_consoles(width=120))


# -- batches fitted to the context ------------------------------------------------------------


def test_batches_fit_a_small_context_and_a_too_long_message_is_cut_with_a_note(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    context, reply = 2600, 600
    write_config(scripted_server, profile={"context_size": context},
                 agents={"catch_up": {"max_tokens": reply}})
    script = MemoryScript()
    scripted_server.reply_with(script)
    body = " ".join(f"The fog rolls in over the harbour wall, wave {i}." for i in range(25))
    replies = [f"Night {n}. {body}" for n in range(1, 13)]
    replies[6] = "BEGIN-SEVEN " + " ".join(["The bell tolls on and on."] * 900) + " END-SEVEN"
    chat = write_chat(tmp_path / "chat.jsonl", replies, greeting="Fog at the window.")
    with SessionStore(tmp_path / "s.db") as store:
        play = open_imported(store, chat, CARD)
        try:
            found = catch_up.pending(play)
            assert found is not None and found.room.context == context
            outcome = catch_up.run(play, screen_for(play), found)
            assert outcome.finished and outcome.turns == 12
            sent = of(scripted_server, "catch_up")
            for request in sent:  # no call overflows: prompt plus the reply limit fit
                assert prompt_tokens(request) + request.json["max_tokens"] <= context
                assert request.json["max_tokens"] == reply
            assert [7] in script.batches  # the long one alone
            assert sorted(n for b in script.batches for n in b) == list(range(1, 13))
            assert max(len(b) for b in script.batches) <= reply // 120  # the reply's room
            long = prompt_of(sent[script.batches.index([7])])
            assert "BEGIN-SEVEN" in long and "END-SEVEN" in long
            assert "tokens of this message left out here" in long
            assert any("turn 7's message" in w and "the middle left out" in w
                       for w in outcome.warnings)
            # planned ahead, the estimate allows for the summary growing: never fewer calls
            assert len(script.batches) <= found.estimate.calls <= len(script.batches) + 2
            assert len(play.story.snapshot.summaries["entries"]) == 12
        finally:
            play.close()


def test_a_context_too_small_for_the_fixed_part_is_a_clear_message(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    write_config(scripted_server, profile={"context_size": 900},
                 agents={"catch_up": {"max_tokens": 600}})
    scripted_server.reply_with(MemoryScript())
    chat = write_chat(tmp_path / "chat.jsonl", ["Night 1."], greeting="Fog.")
    with SessionStore(tmp_path / "s.db") as store:
        play = open_imported(store, chat, CARD)
        try:
            with pytest.raises(BadInput, match="leave no room in the model's 900-token context"):
                catch_up.run(play, screen_for(play))
            assert scripted_server.requests == []
        finally:
            play.close()


def test_a_real_sillytavern_chat_fits_a_small_context(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    chat = fixture_file("chats/zh-plague-apartment.jsonl")
    write_config(scripted_server, profile={"context_size": 2000},
                 agents={"catch_up": {"max_tokens": 300}})
    scripted_server.reply_with(MemoryScript())
    with SessionStore(tmp_path / "s.db") as store:
        play = open_imported(store, chat, CARD)
        try:
            assert catch_up.run(play, screen_for(play)).finished
            [request] = of(scripted_server, "catch_up")
            assert prompt_tokens(request) + 300 <= 2000
            assert "开门" in prompt_of(request)
        finally:
            play.close()


# -- MVU cards: the rules in the prompt, the variables after -----------------------------------

# (riri's [InitVar] keys its tree by ``<user>``: the imported chat's user, 旅人, goes on playing)
MVU_CASES = [
    ("zh/nun-ninja-anime.png", "持有资金: 30", "_.set('教堂.持有资金', 30, 45);//募捐",
     "持有资金: 45", "MVU JSONPatch 方言"),
    ("mvu/magvar-riri-mvu-update.png", "当前位置: 教堂",
     "_.set('旅人.当前位置', '教堂', '小镇街道');//移动", "当前位置: 小镇街道",
     "calculate time passed"),
]  # fmt: skip


@pytest.mark.parametrize(("fixture", "before", "command", "after", "rule"), MVU_CASES)
def test_catchup_in_line_mode_on_an_mvu_card_updates_the_variables(
    tmp_path: Path, scripted_server: ScriptedServer, clean_environ: Path,
    fixture: str, before: str, command: str, after: str, rule: str,
) -> None:
    card_path = fixture_file(fixture)
    card = load_card(card_path)
    script = MemoryScript(mvu={2: command})
    scripted_server.reply_with(script)
    replies = ["你推开门，晨光洒进来。", "午后的钟声响了三下，你去募捐。", "夜里下起了雨。"]
    chat = write_chat(tmp_path / "chat.jsonl", replies, greeting=card.first_mes,
                      user="旅人", char=card.name, inputs=["开门", "去募捐", "睡觉"])
    done = narrative(None, "sessions", "import", str(chat), "--card", str(card_path),
                     "--seed", "4")
    assert done.returncode == 0, done.stderr
    ran = narrative(scripted_server, "run", "--resume", "1", stdin="/vars\n/catchup\n/vars\n")
    assert ran.returncode == 0, ran.stderr
    assert "Traceback" not in ran.stderr
    first, second = ran.stdout.split("> /catchup", 1)
    assert after not in first  # before the catch-up: no variables yet
    shown = second.split("> /vars", 1)[1]
    assert after in shown  # the old turns' change after it
    assert before.split(":")[0] in shown
    [request] = of(scripted_server, "catch_up")
    system = str(request.messages[0]["content"])
    assert rule in system  # the card's [mvu_update] rules, as mvu_extract gets them
    assert "_.insert('路径', 值);" in system and "_.remove('路径');" in system
    assert script.batches == [[1, 2, 3]]


# -- chapters: folded as a played story folds them ---------------------------------------------


def test_chapters_of_a_caught_up_chat_are_those_a_played_story_makes(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    turns = 45
    write_config(scripted_server, pipeline={"summary_budget": 120, "mode": "serial"})
    card = load_card(CARD)
    replies = [f"Night {n} passes by the lamp." for n in range(1, turns + 1)]
    inputs = [f"I do chore number {n}." for n in range(1, turns + 1)]

    played_script = MemoryScript(narratives=deque(replies))
    scripted_server.reply_with(played_script)
    with SessionStore(tmp_path / "played.db") as store:
        play = PlaySession.open(store, PlayOptions(card=str(CARD), seed=5))
        try:
            for said in inputs:
                play.play(said)
            played = play.story.snapshot.summaries
        finally:
            play.close()
    played_folds = [prompt_of(r) for r in of(scripted_server, "compaction")]

    scripted_server.requests.clear()
    script = MemoryScript()
    scripted_server.reply_with(script)
    chat = write_chat(tmp_path / "chat.jsonl", replies, greeting=card.first_mes,
                      inputs=inputs)
    with SessionStore(tmp_path / "imported.db") as store:
        play = open_imported(store, chat, CARD)
        try:
            assert catch_up.run(play, screen_for(play)).finished
            caught_up = play.story.snapshot.summaries
        finally:
            play.close()
    folds = [prompt_of(r) for r in of(scripted_server, "compaction")]

    assert played["entries"] == caught_up["entries"]
    assert played.get("chapters") and caught_up.get("chapters") == played["chapters"]
    assert {c["level"] for c in played["chapters"]} == {1, 2}  # chapters and an arc
    assert folds == played_folds  # the same compaction prompts, byte for byte


def test_a_long_chat_is_folded_into_chapters_within_the_summary_budget(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    turns, budget = 240, 600
    write_config(scripted_server, pipeline={"summary_budget": budget})
    script = MemoryScript()
    scripted_server.reply_with(script)
    replies = [f"Night {n} passes by the lamp." for n in range(1, turns + 1)]
    chat = write_chat(tmp_path / "chat.jsonl", replies, greeting="Fog at the window.")
    with SessionStore(tmp_path / "s.db") as store:
        play = open_imported(store, chat, CARD)
        try:
            found = catch_up.pending(play)
            assert found is not None
            outcome = catch_up.run(play, screen_for(play), found)
            assert outcome.finished
            folds = len(of(scripted_server, "compaction"))
            assert folds and outcome.calls == len(script.batches) + folds
            # the estimate counts the folds too (summary lines of the usual size: more of them)
            assert found.estimate.calls >= outcome.calls
            summaries = play.story.snapshot.summaries
            assert len(summaries["entries"]) == turns  # every entry kept (recall, /summary)
            assert len(summaries["chapters"]) >= 3
            last = prompt_of(of(scripted_server, "catch_up")[-1])
            block = last.rsplit("<story_summary>", 1)[1].split("</story_summary>", 1)[0]
            assert "chapter] chapter of turns 1-" in block or "arc] chapter of turns 1-" in block
            assert "fact-1:" not in block  # folded, not one giant list
            assert estimate_tokens(block) <= 2 * budget
            play.play("I watch the sea.")  # the next turn's prompt: the same folded block
            analysis = prompt_of(of(scripted_server, "analysis")[-1])
            shown = analysis.rsplit("<story_summary>", 1)[1].split("</story_summary>", 1)[0]
            assert "fact-1:" not in shown and estimate_tokens(shown) <= 2 * budget
        finally:
            play.close()


def test_the_bundled_model_gets_small_batches_without_starting_it() -> None:
    from narrative_cli.config import Profile, Settings
    from narrative_cli.pipeline.backendset import BackendSet
    from narrative_cli.pipeline.catch_up import room_for

    settings = Settings()
    settings.profiles["local"] = Profile(name="local", provider="local")
    settings.default_profile = "local"
    opened: list[str] = []
    backends = BackendSet.from_settings(settings, opener=lambda p, a: opened.append(p.name))  # type: ignore[arg-type,func-returns-value,return-value]
    room = room_for(backends)
    assert (room.context, room.reply, room.max_turns) == (8192, 512, 4)
    assert room.text_room(1500) == 6000 and room.text_room(3000) == 8192 - 512 - 3000
    assert opened == []  # the estimate starts no model server


def _fixed_prompt(fixed: str) -> Any:
    """A batch's prompt: ``fixed`` text plus the batch as ``<past_turns>`` shows it."""
    from narrative_cli.context.blocks import Prompt
    from narrative_cli.domain_chat import Message
    from narrative_cli.pipeline.catch_up_batches import past_turns_text

    return lambda batch: Prompt("catch_up", [Message("system", fixed),
                                             Message("user", past_turns_text(batch, "en"))], [])


def test_a_long_message_is_cut_only_when_the_context_is_known() -> None:
    from narrative_cli.pipeline.catch_up_batches import PastTurn, Room, next_batch

    long = PastTurn(1, "Go on.", "BEGIN " + "word " * 9000 + "END")
    short = PastTurn(2, "Then?", "A short night.")
    build = _fixed_prompt("rules " * 300)
    whole = next_batch([long, short], build, Room(None, 4096), "en")
    assert whole.turns == [long] and whole.warnings == []  # as before: sent whole, alone
    cut = next_batch([long, short], build, Room(4000, 512), "en")
    [turn] = cut.turns
    assert turn.cut and turn.narrative.startswith("BEGIN") and turn.narrative.endswith("END")
    assert "tokens of this message left out here" in turn.narrative
    assert build(cut.turns).tokens + 512 <= 4000 and len(cut.warnings) == 1
    fits = next_batch([short, long], build, Room(4000, 512), "en")
    assert fits.turns == [short] and not fits.warnings  # the long one waits for its own call
