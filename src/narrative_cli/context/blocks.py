"""Named prompt blocks and the Prompt an agent sends: messages, their blocks, the stable prefix.

A block is one tagged piece of a message (``<worldinfo1>``, ``<recent_turns>``, …) or an untagged
piece of plain text (a system suffix, a closing instruction). Blocks marked ``stable`` form the
cached head of the prompt: the Prompt records where that head ends, so backends can place cache
breakpoints there and traces can show how much of each prompt repeats from turn to turn.
Empty blocks are dropped when a Prompt is made.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from narrative_cli.domain_chat import Message, Role
from narrative_cli.tokens import estimate_tokens

BLOCK_SEPARATOR = "\n\n"
MESSAGE_OVERHEAD_TOKENS = 4  # role markers and separators a chat template adds per message


@dataclass(frozen=True)
class Block:
    """One named piece of a message. ``tag`` empty means plain text without a wrapper."""

    name: str
    text: str
    tag: str = ""
    stable: bool = False

    @property
    def empty(self) -> bool:
        """Only whitespace (or nothing): ``not text.strip()`` without copying the text (every
        block of every prompt is asked, the history's and the world's are kilobytes)."""
        text = self.text
        return not text or text.isspace()

    def render(self) -> str:
        """``<tag>\\ntext\\n</tag>``, or the bare text for an untagged block."""
        if not self.tag:
            return self.text
        return f"<{self.tag}>\n{self.text}\n</{self.tag}>"

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.render())


def tagged(tag: str, text: str, *, stable: bool = False, name: str = "") -> Block:
    """A block wrapped in ``<tag>`` whose trace name defaults to the tag."""
    return Block(name=name or tag, text=text, tag=tag, stable=stable)


@lru_cache(maxsize=512)
def plain(name: str, text: str, *, stable: bool = False) -> Block:
    """An untagged block of plain text (instructions, preset text). Blocks are frozen, so the
    same one is given for the same name, text and mark: most are fixed instructions, made for
    every agent's prompt every turn (#17, session seven)."""
    return Block(name=name, text=text, stable=stable)


@dataclass(frozen=True)
class BlockInfo:
    """Where a block sits and what it costs, for traces and the budget."""

    message: int
    name: str
    tag: str
    stable: bool
    chars: int
    tokens: int


@dataclass
class Prompt:
    """An agent's request messages, the blocks each was made of, and its stable prefix."""

    agent: str
    messages: list[Message]
    blocks: list[list[Block]]
    stable_boundary: tuple[int, int] | None = None  # (message, block) of the last stable block
    notes: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        """Estimated prompt tokens, with a small per-message overhead."""
        return sum(estimate_tokens(m.content) + MESSAGE_OVERHEAD_TOKENS for m in self.messages)

    def block_infos(self) -> list[BlockInfo]:
        """Every block in order with its message index and token estimate."""
        return [
            BlockInfo(i, b.name, b.tag, b.stable, len(b.render()), b.tokens)
            for i, message_blocks in enumerate(self.blocks)
            for b in message_blocks
        ]

    def block(self, name: str) -> Block | None:
        """The first block called ``name``, if the prompt has one."""
        for message_blocks in self.blocks:
            for b in message_blocks:
                if b.name == name:
                    return b
        return None

    def block_names(self) -> list[str]:
        return [b.name for message_blocks in self.blocks for b in message_blocks]

    @property
    def stable_prefix_chars(self) -> int:
        """Characters of the rendered messages up to the end of the last stable block."""
        if self.stable_boundary is None:
            return 0
        last_message, last_block = self.stable_boundary
        chars = sum(len(m.content) for m in self.messages[:last_message])
        rendered = [b.render() for b in self.blocks[last_message][: last_block + 1]]
        return chars + len(BLOCK_SEPARATOR.join(rendered))

    @property
    def cache_breakpoints(self) -> list[int]:
        """Indexes of messages whose blocks are all stable and that end inside the prefix."""
        if self.stable_boundary is None:
            return []
        last_message, last_block = self.stable_boundary
        points = list(range(last_message))
        if last_block == len(self.blocks[last_message]) - 1:
            points.append(last_message)
        return points[-4:]  # providers cap breakpoints (Anthropic: 4)


def make_prompt(agent: str, parts: Sequence[tuple[Role, Iterable[Block]]]) -> Prompt:
    """Join each message's non-empty blocks with blank lines; messages left empty are dropped."""
    messages: list[Message] = []
    kept: list[list[Block]] = []
    for role, blocks in parts:
        message_blocks = [b for b in blocks if not b.empty]
        if not message_blocks:
            continue
        kept.append(message_blocks)
        messages.append(Message(role, BLOCK_SEPARATOR.join(b.render() for b in message_blocks)))
    return Prompt(agent=agent, messages=messages, blocks=kept, stable_boundary=_boundary(kept))


def _boundary(blocks: list[list[Block]]) -> tuple[int, int] | None:
    """The last block of the unbroken run of stable blocks from the start of the prompt."""
    boundary: tuple[int, int] | None = None
    for i, message_blocks in enumerate(blocks):
        for j, b in enumerate(message_blocks):
            if not b.stable:
                return boundary
            boundary = (i, j)
    return boundary


def render_prompt_text(prompt: Prompt) -> str:
    """The prompt as readable text: each message, then a table of its blocks and their sizes."""
    lines = [f"# agent: {prompt.agent}", ""]
    for message in prompt.messages:
        lines += [f"=== {message.role} ===", message.content, ""]
    lines.append("--- blocks (message, name, stable, tokens) ---")
    for info in prompt.block_infos():
        mark = "stable" if info.stable else "volatile"
        lines.append(f"{info.message}  {info.name:<26} {mark:<8} {info.tokens}")
    prefix = prompt.stable_prefix_chars
    lines.append(f"stable prefix: {prefix} chars; total ~{prompt.tokens} tokens")
    return "\n".join(lines) + "\n"


def shared_prefix_length(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share (a binary search on slices, which
    compares long prompts at C speed)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low
