"""HTTP failures in both languages (#18 item 7): a backend error's message stays English for
logs and traces (``message``) and reads in Chinese for a Chinese story (``text("zh")``), the
provider's name, the status, the URL and the provider's own reason kept exactly."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from narrative_cli.backends import ChatRequest, open_backend
from narrative_cli.domain_chat import Message
from narrative_cli.errors import BackendError, NarrativeError
from tests import servers
from tests.conftest import SAMPLES
from tests.servers import Reply, ScriptedServer, quick_retrier
from tests.test_run_linemode import narrative

scripted_server = servers.scripted_server
MESSAGES = [Message("system", "讲故事。"), Message("user", "推门。")]
WORD = re.compile(r"[A-Za-z][A-Za-z_-]*")


def _fail(server: ScriptedServer, **changes: object) -> BackendError:
    backend = open_backend(server.profile("openai", **changes), retrier=quick_retrier(1, []))
    with pytest.raises(BackendError) as caught:
        backend.complete(ChatRequest(MESSAGES, stream=True), on_text=lambda text: None)
    return caught.value


FAULTS = [  # fault, the English message's start, the Chinese one's, the provider's own words
    ("unauthorized", "scripted: the API key was refused (HTTP 401): Incorrect API key",
     "scripted：API 密钥被拒绝（HTTP 401）：Incorrect API key",
     "Incorrect API key provided authentication_error"),
    ("quota", "scripted: the account has no credit or quota left (HTTP 429): You exceeded",
     "scripted：账户余额或额度已用完（HTTP 429）：You exceeded",
     "You exceeded your current quota please check your plan and billing details "
     "insufficient_quota"),
    ("rate_limit", "scripted: rate limited (HTTP 429): Rate limit reached",
     "scripted：请求过于频繁，被限流（HTTP 429）：Rate limit reached",
     "Rate limit reached rate_limit_error"),
    ("server_error", "scripted: server error (HTTP 500): Internal server error",
     "scripted：服务器错误（HTTP 500）：Internal server error", "Internal server error api_error"),
    ("overloaded", "scripted: overloaded (HTTP 529): Overloaded",
     "scripted：服务器过载（HTTP 529）：Overloaded", "Overloaded overloaded_error"),
    ("content_filter", "scripted: the provider's content filter rejected the request (HTTP 422)",
     "scripted：服务商的内容过滤拒绝了请求（HTTP 422）",
     "The request was rejected because it was considered high risk content_filter"),
    ("drop", "scripted: the stream broke off", "scripted：流式回复在", ""),
]  # fmt: skip


@pytest.mark.parametrize(("fault", "english", "chinese", "reason"), FAULTS)
def test_http_failures_read_in_chinese_and_stay_english_in_the_message(
    scripted_server: ScriptedServer, fault: str, english: str, chinese: str, reason: str
) -> None:
    for _ in range(3):
        scripted_server.queue_fault(fault, text="雾很大。" if fault == "drop" else "")
    error = _fail(scripted_server)
    assert error.message.startswith(english), error.message
    assert error.text("en") == error.message
    said = error.text("zh")
    assert said.startswith(chinese), said
    leaks = set(WORD.findall(said)) - set(WORD.findall(reason)) - {"scripted", "HTTP"}
    assert leaks == set(), said
    hint = error.hint_text("zh")
    assert hint is None or not WORD.findall(hint.replace("api_key_env", "").replace(
        "base_url", "").replace("model", "").replace("--profile", "")), hint


def test_connection_refused_and_timeouts_read_in_chinese_naming_the_url(
    scripted_server: ScriptedServer,
) -> None:
    refused = _fail(scripted_server, base_url="http://127.0.0.1:9/v1")
    assert refused.message.startswith("scripted: cannot connect at http://127.0.0.1:9/v1/chat")
    assert refused.text("zh").startswith("scripted：无法连接（http://127.0.0.1:9/v1/chat")
    scripted_server.queue_fault("hang", seconds=5)
    scripted_server.queue_fault("hang", seconds=5)
    slow = _fail(scripted_server, read_timeout=0.2)
    assert slow.message.startswith("scripted: timed out waiting for a reply at http://")
    assert slow.text("zh").startswith("scripted：等待回复超时（http://127.0.0.1:")


def test_a_worded_error_keeps_its_words_through_scrubbing() -> None:
    from narrative_cli.credentials import remember
    from narrative_cli.errors import Phrase, RequestRejected, worded

    remember("sk-zh-secret-0123456789")
    error = worded(RequestRejected, "http.refused", init={"status": 400}, provider="p",
                   status=400, reason="bad key sk-zh-secret-0123456789")  # fmt: skip
    assert error.status == 400 and "sk-zh-secret" not in error.message
    assert "sk-zh-secret" not in error.text("zh") and error.text("zh").startswith("p：请求被拒绝")
    assert str(Phrase("http.no_reason")) == "no reason given"
    assert isinstance(error, NarrativeError)


def test_a_refused_key_during_a_chinese_story_reads_in_chinese(
    scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    """Line mode on a Chinese card, no --lang, an English locale: the turn's 401 is reported
    in Chinese, naming the provider and the HTTP status, and the session goes on."""
    scripted_server.reply_with(lambda body, record: Reply(fault="unauthorized"))
    done = narrative(scripted_server, "run", str(SAMPLES / "fog-harbor-zh.json"),
                     stdin="我去码头。\n/quit\n")  # fmt: skip
    shown = done.stdout + done.stderr
    assert "错误：adhoc：API 密钥被拒绝（HTTP 401）" in shown, shown
    assert "the API key was refused" not in shown


# -- loader errors --------------------------------------------------------------------------------

def _cli(locale: str, *args: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from narrative_cli.cli.app import app

    env = {"LANG": locale, "LC_ALL": "", "LC_MESSAGES": "", "COLUMNS": "200"}
    done = CliRunner().invoke(app, list(args), prog_name="narrative", env=env)
    return done.exit_code, done.output


def _bad_files(tmp_path: Path) -> dict[str, Path]:
    import io
    import zipfile

    from narrative_cli.load.png import SIGNATURE

    files = {"json": tmp_path / "坏卡.json", "png": tmp_path / "残图.png",
             "charx": tmp_path / "空包.charx", "book": tmp_path / "novelai.json"}  # fmt: skip
    files["json"].write_text('{"spec": "chara_card_v2", "data": {"name": "阿澜",}}',
                             encoding="utf-8")  # fmt: skip
    files["png"].write_bytes(SIGNATURE + b"\x00\x00\x00\x0dIHDR")
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w") as archive:
        archive.writestr("assets/icon.png", b"x")
    files["charx"].write_bytes(packed.getvalue())
    files["book"].write_text('{"lorebookVersion": 5, "entries_": []}', encoding="utf-8")
    return files


LOADER_ERRORS = [  # file, the English message after the path, the Chinese one
    ("json", ": invalid JSON in the card file (line 1, column 49: Expecting property name",
     "：角色卡文件里的 JSON 无效（第 1 行第 49 列：Expecting property name"),
    ("png", ": the PNG is truncated (chunk 'IHDR' needs 13 bytes, 0 are left)",
     "：PNG 不完整（块 'IHDR' 需要 13 字节，只剩 0 字节）"),
    ("charx", ": the CHARX archive has no card.json at its root",
     "：CHARX 压缩包根目录下没有 card.json"),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "english", "chinese"), LOADER_ERRORS)
def test_a_broken_card_is_named_in_the_locales_language(
    tmp_path: Path, kind: str, english: str, chinese: str
) -> None:
    path = _bad_files(tmp_path)[kind]
    code, out = _cli("en_US.UTF-8", "inspect", str(path))
    assert code == 2 and out.startswith(f"error: {path}{english}"), out
    code, out = _cli("zh_CN.UTF-8", "inspect", str(path))
    assert code == 2 and out.startswith(f"错误：{path}{chinese}"), out
    assert "Traceback" not in out


def test_a_bad_lorebook_for_a_chinese_card_is_reported_in_chinese(tmp_path: Path) -> None:
    """The card is read, so its language speaks, whatever the locale; the file name and the
    field stay exact."""
    book = _bad_files(tmp_path)["book"]
    code, out = _cli("en_US.UTF-8", "inspect", str(SAMPLES / "qingshi-trpg-zh.json"),
                     "--lorebook", str(book))  # fmt: skip
    assert code == 2, out
    assert out.startswith(f"错误：{book}：不是世界书：没有 'entries'（看起来是 NovelAI 世界书，"
                          "不是 SillyTavern 世界书文件）"), out  # fmt: skip
    code, out = _cli("zh_CN.UTF-8", "inspect", str(SAMPLES / "lantern-keeper.png"),
                     "--lorebook", str(book))  # fmt: skip
    assert out.startswith(f"error: {book}: not a lorebook: it has no 'entries' (this looks like"
                          " a NovelAI lorebook, not a SillyTavern world file)"), out


def test_a_missing_file_is_named_in_both_languages(tmp_path: Path) -> None:
    missing = tmp_path / "无此卡.png"
    assert _cli("zh_CN.UTF-8", "inspect", str(missing))[1].startswith(
        f"错误：{missing}：角色卡文件不存在")
    assert _cli("en_US.UTF-8", "inspect", str(missing))[1].startswith(
        f"error: {missing}: no such card file")


def test_a_withheld_reply_and_a_malformed_stream_read_in_chinese(
    scripted_server: ScriptedServer,
) -> None:
    scripted_server.queue(Reply(text="", finish_reason="content_filter"))
    withheld = _fail(scripted_server)
    assert withheld.message == ("scripted: the provider's content filter withheld the reply"
                                " (finish_reason content_filter)")  # fmt: skip
    said = withheld.text("zh")
    assert said == "scripted：服务商的内容过滤扣下了回复（finish_reason content_filter）"
    assert withheld.hint_text("zh") == "换个说法或删掉上一条消息；原样重发还会失败"
    for _ in range(2):
        scripted_server.queue_sse(["data: {not json\n\n"])
    broken = _fail(scripted_server)
    assert broken.message == "scripted: sent a malformed stream event: {not json"
    assert broken.text("zh") == "scripted：发来一条格式错误的流式事件：{not json"


# -- presets, chats, groups, personas and field checks (the loaders' last English, #18) ----------

def _file(tmp_path: Path, name: str, data: object) -> Path:
    import json

    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_a_preset_of_another_kind_is_named_in_the_cards_language(tmp_path: Path) -> None:
    preset = _file(tmp_path, "指令.json", {"input_sequence": "<|user|>", "output_sequence": "x"})
    code, out = _cli("en_US.UTF-8", "inspect", str(SAMPLES / "qingshi-trpg-zh.json"),
                     "--preset", str(preset))  # fmt: skip
    assert code == 2, out
    assert out.startswith(f"错误：{preset}：这是指令模板，不是 Chat Completion 预设"), out
    code, out = _cli("zh_CN.UTF-8", "inspect", str(SAMPLES / "lantern-keeper.png"),
                     "--preset", str(preset))  # fmt: skip
    assert out.startswith(f"error: {preset}: this is an instruct template, not a Chat "
                          "Completion preset"), out


def test_a_field_of_the_wrong_type_names_the_field_in_both_languages(tmp_path: Path) -> None:
    preset = _file(tmp_path, "p.json", {"prompts": [{"identifier": "main", "content": {"a": 1},
                                                      "role": "system"}]})
    code, out = _cli("en_US.UTF-8", "inspect", str(SAMPLES / "qingshi-trpg-zh.json"),
                     "--preset", str(preset))  # fmt: skip
    assert code == 2 and "'content' 应为文本，实际是 object" in out, out
    code, out = _cli("en_US.UTF-8", "inspect", str(SAMPLES / "lantern-keeper.png"),
                     "--preset", str(preset))  # fmt: skip
    assert code == 2 and "'content' must be text, got object" in out, out


def test_a_file_that_is_not_a_chat_is_named_in_the_locales_language(tmp_path: Path) -> None:
    chat = _file(tmp_path, "空.jsonl", "")
    card = str(SAMPLES / "lantern-keeper.png")
    code, out = _cli("zh_CN.UTF-8", "sessions", "import", str(chat), "--card", card)
    assert code == 2 and out.startswith(f"错误：{chat}：不是 SillyTavern 聊天（文件为空）"), out
    code, out = _cli("en_US.UTF-8", "sessions", "import", str(chat), "--card", card)
    assert out.startswith(f"error: {chat}: not a SillyTavern chat (it is empty)"), out


def _run(locale: str, home: Path, *args: str) -> tuple[int, str]:
    import os
    import subprocess
    import sys

    env = {**os.environ, "LANG": locale, "LC_ALL": "", "LC_MESSAGES": "",
           "NARRATIVE_HOME": str(home)}  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "narrative_cli", "run", *args], env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    return done.returncode, done.stderr


def test_a_group_file_without_members_and_a_missing_group_read_in_chinese(tmp_path: Path) -> None:
    group = _file(tmp_path, "g.json", {"members": [], "name": "渡船"})
    code, err = _run("zh_CN.UTF-8", tmp_path, "--group", str(group))
    assert code == 2 and err.startswith(f"错误：{group}：群组没有成员"), err
    code, err = _run("zh_CN.UTF-8", tmp_path, "--group", "渡船")
    assert code == 2 and err.startswith("错误：--group 渡船：没有这个群组文件"), err
    assert "按名称指定群组需要 --st-data DIR" in err
    code, err = _run("en_US.UTF-8", tmp_path, "--group", "ferry")
    assert err.startswith("error: --group ferry: no such group file"), err
