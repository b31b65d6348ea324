"""The words of #18's new REPL and line-mode messages, Chinese and English side by side.

Kept in one table (like ``ui.render.LABELS``) so the message catalogs can take them over
whole. ``word(lang, key, **values)`` picks the story's language (Chinese for ``zh``,
English otherwise) and fills the ``{placeholders}``.
"""

from __future__ import annotations

WORDS: dict[str, dict[str, str]] = {
    "en": {
        "unfinished_ask": (
            "Ctrl-C stopped the reply part-way. Keep what is shown (k, Enter),"
            " write it again (r) or drop it (d)? "
        ),
        "unfinished_kept": (
            "Kept the unfinished reply as turn {turn}: /continue goes on from it,"
            " /retry analyses it."
        ),
        "unfinished_dropped": (
            "Dropped the unfinished reply; nothing was saved (/retry writes it again)."
        ),
        "unfinished_unknown": "Not one of k, r or d: {answer!r}; the unfinished reply is kept.",
        "cancelled": "Turn cancelled; nothing was saved.",
        "edit_unchanged": "Nothing changed; the turn stays as it is.",
        "impersonate_title": "Draft of your next line (in the input; Enter sends it)",
        "impersonate_cancelled": "Draft cancelled.",
        "model_now": "Model: {model}.",
        "model_switched": "Model: {model} from the next call on (kept with the session).",
        "profile_now": "Profile: {profile} (config profiles: {names}).",
        "profile_switched": (
            "Profile: {profile}, model {model}, from the next call on (kept with the session)."
        ),
        "keys_title": "Keys",
        "key": "key",
        "key_does": "what it does",
        "key_enter": "send the line",
        "key_newline": "a line break (multi-line input)",
        "key_backslash": "at the end of a line: a line break",
        "key_editor": "edit the input in $EDITOR (saved text becomes the input, not sent)",
        "key_ctrl_c": "clear the line; during a turn: stop it (keep, rewrite or drop the text)",
        "key_ctrl_d": "leave (the story is saved after every turn)",
        "key_typeahead": "typed while a turn runs: kept as the next input, never sent by itself",
        "typing": "(typing during a turn)",
        "key_tab": "complete a command",
        "key_history": "earlier inputs (Ctrl-R searches)",
    },
    "zh": {
        "unfinished_ask": (
            "Ctrl-C 让回复停在了半路。保留已显示的部分（k，回车）、重写（r）还是丢弃（d）？"
        ),
        "unfinished_kept": (
            "未写完的回复已保留为第 {turn} 轮：/continue 接着写，/retry 补做分析。"
        ),
        "unfinished_dropped": "已丢弃未写完的回复，什么也没有保存（/retry 重新写这一轮）。",
        "unfinished_unknown": "{answer!r} 不是 k、r、d 之一；未写完的回复已保留。",
        "cancelled": "本轮已取消，没有保存任何内容。",
        "edit_unchanged": "没有改动，这一轮保持原样。",
        "impersonate_title": "你下一句的草稿（已放进输入框，回车发送）",
        "impersonate_cancelled": "草稿已取消。",
        "model_now": "模型：{model}。",
        "model_switched": "模型：{model}，从下一次调用起生效（随会话保存）。",
        "profile_now": "配置档：{profile}（配置中的配置档：{names}）。",
        "profile_switched": "配置档：{profile}，模型 {model}，从下一次调用起生效（随会话保存）。",
        "keys_title": "按键",
        "key": "按键",
        "key_does": "作用",
        "key_enter": "发送这一行",
        "key_newline": "换行（多行输入）",
        "key_backslash": "在行尾：换行",
        "key_editor": "在 $EDITOR 中编辑输入（保存的文字成为输入，不会自动发送）",
        "key_ctrl_c": "清空这一行；回合进行中：停下（保留、重写或丢弃已写的文字）",
        "key_ctrl_d": "离开（每轮之后故事都已保存）",
        "key_typeahead": "回合进行中打的字：留作下一次输入，不会自行发送",
        "typing": "（回合进行中打字）",
        "key_tab": "补全命令",
        "key_history": "之前的输入（Ctrl-R 搜索）",
    },
}

KEYS: tuple[tuple[str, str], ...] = (
    ("Enter", "key_enter"),
    ("Esc Enter / Alt-Enter", "key_newline"),
    ("\\ Enter", "key_backslash"),
    ("Ctrl-X Ctrl-E / Ctrl-O", "key_editor"),
    ("Ctrl-C", "key_ctrl_c"),
    ("Ctrl-D", "key_ctrl_d"),
    ("@typing", "key_typeahead"),
    ("Tab", "key_tab"),
    ("Up / Down", "key_history"),
)


def word(lang: str, key: str, **values: object) -> str:
    """The message ``key`` in the story's language, ``{placeholders}`` filled."""
    text = WORDS["zh" if lang == "zh" else "en"][key]
    return text.format(**values) if values else text


def key_rows(lang: str) -> list[tuple[str, str]]:
    """The REPL's keys for ``/help``: (key, what it does)."""
    return [
        (word(lang, keys[1:]) if keys.startswith("@") else keys, word(lang, name))
        for keys, name in KEYS
    ]
