"""English texts of ``narrative config`` and of the errors loaders and backends raise
(``errors.worded``; merged into ``i18n/en.py``'s catalog). What and where stay exact: file
names, field paths, URLs, HTTP statuses and the provider's own reason are values."""

ERRORS: dict[str, str] = {
    # -- narrative config (cli/config.py, config.settings_summary) -------------------------------
    "config.no_file": "(none: built-in defaults)",
    "config.bundled_model": "(bundled SmolLM2-135M-Instruct)",
    "config.key_none": "none needed",
    "config.key_env_set": "set (${variable})",
    "config.key_env_unset": "not set (${variable})",
    "config.key_file_set": "set (file {path})",
    "config.key_unusable": "unusable ({why})",
    "config.wrote": "wrote {path}",
    "config.added": "added to {path}: {line}",
    "config.exists": "{path} already exists",
    "config.exists_hint": "pass --force to overwrite it",
    "config.unknown_provider": "config add: unknown provider {name} (known: {known})",
    "config.unknown_provider_hint": "add any other server by hand under profiles: in config.yaml",
    "config.profile_exists": "{path}: a profile named {name} already exists",
}
