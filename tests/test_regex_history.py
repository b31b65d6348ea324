"""Prompt-side regex scripts over a long history (issue #17 item 4): what each turn's prompt
history holds is what a full pass gives, and a turn sends only its new messages to the sandbox.

Found by profiling the turn at 2,000: the whole history went through the scripts every turn,
and past about 300 turns one batch outgrew the sandbox's 64 KiB result, so every message went
one sandbox call at a time (4,000 calls, 6 s a turn).
"""

from __future__ import annotations

import pytest

from narrative_cli.domain import RegexScript
from narrative_cli.pipeline.records import PlayedTurn
from narrative_cli.regex import prompt as regex_prompt
from narrative_cli.regex import scripts as regex_scripts
from narrative_cli.regex.scripts import RegexScripts


def _scripts() -> RegexScripts:
    """One script for recent messages only (depth ≤ 3) and one for every message."""
    return RegexScripts(
        [
            RegexScript("recent", "/fog/g", "FOG", placement=[1, 2], prompt_only=True, max_depth=3),
            RegexScript("always", "/lamp/g", "LAMP", placement=[2], prompt_only=True),
        ],
        target="prompt",
    )


def _turn(n: int) -> PlayedTurn:
    text = f"Night {n}: the fog is thick and the lamp burns. " + "Edda writes the log. " * 8
    return PlayedTurn(n, f"I check the fog, night {n}.", text)


def sandbox_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sandbox calls the scripts make from now on, each as the number of texts it sent
    (``run_many``: its jobs; ``run_scripts``: one), the real calls still made."""
    calls: list[int] = []
    real_many, real_one = regex_scripts.run_many, regex_scripts.run_scripts

    def many(jobs: list[tuple[str, list[regex_scripts.JsScript]]]) -> object:
        calls.append(len(jobs))
        return real_many(jobs)

    def one(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real_one(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(regex_scripts, "run_many", many)
    monkeypatch.setattr(regex_scripts, "run_scripts", one)
    return calls


def test_each_turns_history_is_what_a_full_pass_gives() -> None:
    scripts = _scripts()
    played = [PlayedTurn(0, None, "The lamp is lit in the fog.")]
    for n in range(1, 13):
        played.append(_turn(n))
        got = regex_prompt.prompt_history(list(played), scripts)
        fresh = regex_prompt.prompt_history(list(played), _scripts())  # no earlier list
        assert got == fresh
    recent, old = got[-1], got[1]
    assert "FOG" in recent.narrative and "LAMP" in recent.narrative
    assert "fog" in old.narrative and "FOG" not in old.narrative and "LAMP" in old.narrative


def test_a_long_history_goes_to_the_sandbox_in_few_calls_and_then_only_its_new_turns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = sandbox_calls(monkeypatch)
    scripts = _scripts()
    played = [_turn(n) for n in range(1, 601)]  # ~200 KB of messages: more than one call holds
    first = regex_prompt.prompt_history(list(played), scripts)
    assert 2 <= len(calls) <= 20 and sum(calls) <= 1200
    assert first[-1].narrative.startswith("Night 600: the FOG is thick and the LAMP")
    for n in range(601, 604):
        calls.clear()
        played.append(_turn(n))
        history = regex_prompt.prompt_history(list(played), scripts)
        assert len(calls) == 1 and calls[0] <= 8  # the new turn and the few still in range
        assert history[-1].user == f"I check the FOG, night {n}."
        assert "FOG" not in history[-5].narrative  # gone out of the recent script's range


def test_a_turns_narrative_goes_to_the_sandbox_once_for_all_the_agents_that_read_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The analysis, the MVU extraction and the post tools each read the turn's narrative
    through the prompt scripts (issue #17, session five: three sandbox round trips a turn)."""
    calls: list[str] = []
    real = regex_scripts.run_scripts

    def counted(text: str, *args: object, **kwargs: object) -> object:
        calls.append(text)
        return real(text, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(regex_scripts, "run_scripts", counted)
    scripts = _scripts()
    narrative = _turn(1).narrative
    results = [scripts.ai_output(narrative, 0) for _ in range(3)]
    assert len(calls) == 1
    assert results[0] == results[2] and "FOG" in results[0] and "LAMP" in results[0]
    deep = scripts.ai_output(narrative, 9)  # out of the recent script's range: other scripts
    assert len(calls) == 2 and "fog" in deep and "LAMP" in deep
    scripts._drop(scripts._ready[1], "failed: test")  # a script dropped: no stale result
    after = scripts.ai_output(narrative, 0)
    assert len(calls) == 3 and "FOG" in after and "LAMP" not in after


def test_next_turns_history_takes_the_narrative_the_agents_read_without_a_sandbox_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = sandbox_calls(monkeypatch)
    scripts = _scripts()
    narrative = _turn(7).narrative
    read = scripts.ai_output(narrative, 0)
    assert calls == [1]
    again = scripts.apply_many([(narrative, regex_scripts.AI_OUTPUT, 0)])
    assert again == [read] and calls == [1]
    deeper = scripts.apply_many([(narrative, regex_scripts.AI_OUTPUT, 5)])  # other scripts
    assert calls == [1, 1] and "fog" in deeper[0] and "LAMP" in deeper[0]
