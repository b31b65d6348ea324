"""Both languages in ``narrative config`` (#18 item 7): ``config show``'s status words, and
``config init``/``add`` messages and refusals, follow the locale (there is no card); the
names stay config.yaml's own; ``--json`` and the English screens stay as they were."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

ZH = {"LANG": "zh_CN.UTF-8"}
EN = {"LANG": "en_US.UTF-8"}
WORD = re.compile(r"[A-Za-z][A-Za-z_-]*")


def _cli(env: dict[str, str], *args: str) -> tuple[int, str]:
    from narrative_cli.cli.app import app

    done = CliRunner().invoke(app, list(args), prog_name="narrative", env=env)
    return done.exit_code, done.output


def test_config_show_speaks_the_locale_and_keeps_config_names(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            ) -> None:  # fmt: skip
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-secret-123456789")
    key = tmp_path / "key.txt"
    key.write_text("sk-file-987654321", encoding="utf-8")
    os.chmod(key, 0o644)  # readable by others: unusable
    config = Path(os.environ["NARRATIVE_HOME"]) / "config.yaml"
    config.write_text(f"profiles:\n  filed: {{provider: openai, model: m, api_key_file: {key}}}\n",
                      encoding="utf-8")  # fmt: skip
    code, chinese = _cli(ZH, "config", "show")
    assert code == 0, chinese
    assert "api_key: 已设置（$DEEPSEEK_API_KEY）" in chinese
    assert "api_key: 未设置（$OPENAI_API_KEY）" in chinese
    assert "api_key: 无需密钥" in chinese
    assert "model_path: （内置 SmolLM2-135M-Instruct）" in chinese
    flat = " ".join(chinese.split())  # YAML folds a long value onto a second line
    assert f"api_key: 不可用（密钥文件 {key} 其他用户可读（权限 0644））" in flat
    assert "sk-secret" not in chinese and "sk-file" not in chinese
    statuses = [line.split(":", 1)[1] for line in chinese.splitlines()
                if line.strip().startswith(("api_key:", "model_path:"))]  # fmt: skip
    leaks = {w for s in statuses for w in WORD.findall(s)} - {
        "DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "SmolLM", "M-Instruct",
        "M", "Instruct", "tmp", "key", "txt", *WORD.findall(str(key))}
    assert leaks == set(), leaks
    code, english = _cli(EN, "config", "show")
    assert "api_key: set ($DEEPSEEK_API_KEY)" in english and "api_key: none needed" in english
    assert f"api_key: unusable (key file {key} is readable by other users" in " ".join(
        english.split())
    as_json = json.loads(_cli(ZH, "config", "show", "--json")[1])
    assert as_json["profiles"]["local"]["api_key"] == "none needed"  # --json: English
    assert _cli(ZH, "config", "show")[1].replace("：", ":").count(":") > 20  # still YAML


def test_config_init_and_add_speak_the_locale() -> None:
    code, out = _cli(ZH, "config", "init")
    assert code == 0 and out.startswith("已写入 ") and out.strip().endswith("config.yaml")
    code, out = _cli(ZH, "config", "init")
    assert code == 2 and "已存在" in out and "提示：加上 --force 覆盖它" in out
    code, out = _cli(ZH, "config", "add", "ollama")
    assert code == 0 and "已添加到 " in out and 'ollama: {provider: "openai"' in out
    code, out = _cli(ZH, "config", "add", "ollama")
    assert code == 2 and "已有名为 'ollama' 的配置" in out
    code, out = _cli(ZH, "config", "add", "mistral")
    assert code == 2 and "未知的服务商 'mistral'（可选：openai, anthropic" in out
    code, out = _cli(EN, "config", "add", "mistral")
    assert "error: config add: unknown provider 'mistral' (known: openai" in out
    assert "hint: add any other server by hand under profiles: in config.yaml" in out
    assert _cli(EN, "config", "add", "openrouter")[1].startswith("added to ")
