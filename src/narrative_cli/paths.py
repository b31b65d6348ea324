"""Where user files live. ``NARRATIVE_HOME`` relocates all of them."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "narrative-cli"


def home() -> Path | None:
    value = os.environ.get("NARRATIVE_HOME")
    return Path(value).expanduser() if value else None


def config_dir() -> Path:
    base = home()
    return base if base else Path(platformdirs.user_config_dir(APP_NAME))


def data_dir() -> Path:
    base = home()
    return base if base else Path(platformdirs.user_data_dir(APP_NAME))


def config_file() -> Path:
    return config_dir() / "config.yaml"


def database_file() -> Path:
    return data_dir() / "sessions.db"


def history_file() -> Path:
    return data_dir() / "history.txt"


def models_dir() -> Path:
    return data_dir() / "models"


def logs_dir() -> Path:
    return data_dir() / "logs"
