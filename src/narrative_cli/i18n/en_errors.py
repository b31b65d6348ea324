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
    # -- backends: HTTP failures (backends/base.py, http_errors.py, http.py) ---------------------
    "http.timeout_connect": "{provider}: timed out connecting{where}",
    "http.timeout_reply": "{provider}: timed out waiting for a reply{where}",
    "http.not_http": "{provider}: base_url {url} is not an http(s) URL",
    "http.bad_url": "{provider}: base_url {url} is not a valid URL",
    "http.cannot_connect": "{provider}: cannot connect{where} ({reason})",
    "http.dropped": "{provider}: the connection dropped{where}",
    "http.failed": "{provider}: {kind}{where}",
    "http.at": " at {url}",
    "http.filtered": "{provider}: the provider's content filter rejected the request"
                     " (HTTP {status}): {reason}",
    "http.filtered_hint": "edit or drop the flagged message; resending the same text fails the"
                          " same way",
    "http.quota": "{provider}: the account has no credit or quota left (HTTP {status}): {reason}",
    "http.quota_hint": "top up the account or switch profile (--profile)",
    "http.key_refused": "{provider}: the API key was refused (HTTP {status}): {reason}",
    "http.denied": "{provider}: access was denied (HTTP {status}): {reason}",
    "http.auth_hint": "check the key in the environment variable the profile names (api_key_env)",
    "http.rate_limited": "{provider}: rate limited (HTTP 429): {reason}",
    "http.server_timeout": "{provider}: the server timed out (HTTP 408): {reason}",
    "http.overloaded": "{provider}: overloaded (HTTP {status}): {reason}",
    "http.server_error": "{provider}: server error (HTTP {status}): {reason}",
    "http.not_found": "{provider}: not found (HTTP 404): {reason}",
    "http.not_found_hint": "check base_url and model in the profile",
    "http.refused": "{provider}: the request was refused (HTTP {status}): {reason}",
    "http.no_reason": "no reason given",
    "http.event_filtered": "{provider}: the content filter stopped the reply: {reason}",
    "http.event_quota": "{provider}: the account has no credit or quota left: {reason}",
    "http.event_refused": "{provider}: the request was refused mid-stream: {reason}",
    "http.event_error": "{provider}: the server reported an error mid-stream: {reason}",
    "http.no_full_reply": "{provider}: no complete reply within {seconds} s (the profile's"
                          " timeout) at {url}",
    "http.no_full_reply_hint": "raise timeout in the profile (config.yaml) if the model is slow",
    "http.broke_after": "{provider}: the stream broke off after {count} characters",
    "http.broke_before": "{provider}: the stream broke off before the reply was complete",
    "http.every_variant": "{provider}: the server refused every variant of the request",
    "http.not_json": "{provider}: the reply is not JSON: {snippet}",
}
