"""``dataclass_copy.replaced`` makes what ``dataclasses.replace`` makes: the same fields, the
same type, nothing else carried over, the same errors; checked on the classes a turn copies
(the prompt inputs, a card, a chat request) with generated changes, and on the kinds of
dataclass it leaves to ``dataclasses.replace``."""

from __future__ import annotations

import dataclasses
import random
from dataclasses import InitVar, dataclass, field
from functools import cached_property
from typing import Any, ClassVar

import pytest

from narrative_cli.backends.base import ChatRequest
from narrative_cli.context.inputs import HistoryTurn, PromptInputs
from narrative_cli.dataclass_copy import replaced
from narrative_cli.domain import Card
from narrative_cli.domain_chat import Message


def _same(a: Any, b: Any) -> None:
    assert type(a) is type(b)
    assert vars(a) == vars(b) and list(vars(a)) == list(vars(b))
    for name in vars(a):
        assert getattr(a, name) is getattr(b, name)


def test_the_classes_a_turn_copies_are_copied_as_replace_copies_them() -> None:
    rng = random.Random(4)
    values: dict[str, list[Any]] = {
        "turn": [1, 7], "user_input": ["go", ""], "lang": ["en", "zh"], "dice_rules": [True],
        "text_recall": [[], [HistoryTurn(2, "a", "b")]], "tool_results_text": ["x"],
        "name": ["Mira", "Edda"], "description": ["{{char}} here"], "temperature": [0.5, None],
        "max_tokens": [10, None], "messages": [[Message("user", "hi")]], "stream": [True],
    }  # fmt: skip
    originals = [PromptInputs(card=Card(name="Mira"), user_input="hello", turn=3),
                 Card(name="Edda", description="d"), ChatRequest([Message("system", "s")])]
    for _ in range(300):
        obj = rng.choice(originals)
        names = [f.name for f in dataclasses.fields(obj) if f.name in values]  # type: ignore[arg-type]
        changes = {n: rng.choice(values[n]) for n in rng.sample(names, rng.randint(0, len(names)))}
        made = replaced(obj, **changes)
        _same(made, dataclasses.replace(obj, **changes))  # type: ignore[type-var]
        assert made is not obj


@dataclass
class _Cached:
    a: int
    b: list[int] = field(default_factory=list)
    kind: ClassVar[str] = "c"

    @cached_property
    def doubled(self) -> int:
        return self.a * 2


@dataclass
class _After:
    a: int
    b: int = 0

    def __post_init__(self) -> None:
        self.b = self.a + 1


@dataclass
class _WithInitVar:
    a: int
    seed: InitVar[int] = 0

    def __post_init__(self, seed: int) -> None:
        self.a += seed


@dataclass
class _NotInInit:
    a: int
    b: int = field(default=5, init=False)


@dataclass(frozen=True)
class _Frozen:
    a: int
    b: str = "x"


def test_other_dataclasses_and_bad_names_behave_as_with_replace() -> None:
    cached = _Cached(2)
    assert cached.doubled == 4
    copied = replaced(cached, a=5)
    assert copied.doubled == 10 and copied.b is cached.b  # the cached value is not carried
    assert replaced(_After(1), a=4) == dataclasses.replace(_After(1), a=4) == _After(4)
    assert replaced(_WithInitVar(1), seed=2) == dataclasses.replace(_WithInitVar(1), seed=2)
    with pytest.raises(ValueError):
        replaced(_NotInInit(1), b=3)
    assert replaced(_NotInInit(1), a=2) == _NotInInit(2)
    _same(replaced(_Frozen(1), b="y"), dataclasses.replace(_Frozen(1), b="y"))
    with pytest.raises(TypeError):
        replaced(_Frozen(1), c=3)
    with pytest.raises(TypeError):
        replaced(object())
