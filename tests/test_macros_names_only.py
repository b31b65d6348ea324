"""``context.macros.expand``'s short cut for texts whose only macros are {{char}} and {{user}}
gives what the full expansion gives, checked on generated texts and names built from the
marks the full expansion reads (braces, escapes, legacy names, other macros, trim marks)."""

from __future__ import annotations

import random

from narrative_cli.context.macros import MacroEnv, _expand_all, _names_only, expand

SAFE = ["{{char}}", "{{user}}", "{", "}", "a", "灯塔", " ", "\n", "<b>", "<", ">"]
TOKENS = SAFE + ["{{Char}}", "{{ user }}", "{{", "}}", "{{{", "}}}", "<USER>", "<bot>", "\\",
                 "\\{", "\\}", "\x01", "\x00trim\x00", "{{random::a::b}}", "{{// note}}",
                 "{{trim}}", "{{newline}}"]  # fmt: skip
NAMES = ["Mira", "Lan", "灯塔守", "", "a{b", "{{user}}", "x}", "\\", "\x01", "Ann Lee"]


def test_the_short_cut_gives_what_the_full_expansion_gives() -> None:
    rng = random.Random(23)
    short = 0
    for _ in range(20_000):
        pool = SAFE if rng.random() < 0.6 else TOKENS
        text = "".join(rng.choice(pool) for _ in range(rng.randint(1, 8)))
        env = MacroEnv(char=rng.choice(NAMES), user=rng.choice(NAMES) or "User",
                       rng=random.Random(1))  # fmt: skip
        named = _names_only(text, env)
        if named is not None:
            short += 1
            assert named == _expand_all(text, MacroEnv(char=env.char, user=env.user,
                                                       rng=random.Random(1))), (text, env.char)
        assert expand(text, env) is not None
    assert short > 2_000  # the generator does reach the short cut, often


def test_a_card_field_with_names_takes_the_short_cut() -> None:
    env = MacroEnv(char="Edda", user="Lan")
    text = "{{char}} keeps the lamp; {{user}} visits. {a} stays, } too."
    assert _names_only(text, env) == "Edda keeps the lamp; Lan visits. {a} stays, } too."
    assert expand(text, env) == _expand_all(text, env)
    for other in ["{{char}} at {{time}}", "<USER> waves", "\\{{char}}", "{{{char}}}"]:
        assert _names_only(other, env) is None, other
