"""Card fields without a preset as SillyTavern sends them (#15): example dialogues split on
``<START>``; the notes' placement is covered in test_prompts (golden) and test_authors_note."""

from __future__ import annotations

from narrative_cli.context.parts import example_chats


def test_examples_are_split_on_start_into_example_chats() -> None:
    text = "<START>\nTom: Hi.\nMira: Hello.\n<start>\nTom: Lamp?\nMira: Lit.\n<START>\n"
    assert example_chats(text) == (
        "[Example Chat]\nTom: Hi.\nMira: Hello.\n\n[Example Chat]\nTom: Lamp?\nMira: Lit."
    )
    assert example_chats("Tom: no marker\nMira: still an example") == (
        "[Example Chat]\nTom: no marker\nMira: still an example"
    )
    assert example_chats("") == "" and example_chats("<START>") == ""
