"""Keeps secrets out of everything t3rl writes or logs.

Secrets (API keys, tokens) reach the jobs only through the environment. Whatever t3rl persists — the
run dir (config.yaml, plan.sh, command.sh, runtime YAMLs, logs) and the tracked config — passes through
`scrub_text` / `scrub_obj` first, which replace the value of every secret-looking environment variable
(and of any config key with a secret-looking name) with a mask.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"

# Named explicitly because their names do not all follow the *_KEY / *_TOKEN pattern.
_KNOWN_SECRETS = frozenset({"WANDB_API_KEY", "OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"})
# Environment-variable style (upper case): any *_KEY / *_TOKEN / *_SECRET / *_PASSWORD.
_SECRET_ENV_NAME = re.compile(r"(^|_)(KEY|TOKEN|SECRET|PASSWORD)$")
# Config-key style (any case): narrower, because slime-shaped keys such as `reward_key` or
# `input_key` name data fields, not credentials.
_SECRET_KEY_NAME = re.compile(r"(?i)(^|_)(api_key|access_key|secret_key|wandb_key|token|secret|password)$")
# Values this short are too likely to occur by chance ("1", "true") to be masked inside other text.
_MIN_SECRET_LEN = 6


def is_secret_name(name: str) -> bool:
    """True for variable or config-key names that hold credentials (FOO_API_KEY, HF_TOKEN, api_key)."""
    if name in _KNOWN_SECRETS or _SECRET_KEY_NAME.search(name.replace("-", "_")):
        return True
    return name.isupper() and bool(_SECRET_ENV_NAME.search(name))


def secret_values(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The values of the secret-named variables of `environ` (default: this process's environment)."""
    env = os.environ if environ is None else environ
    return frozenset(v for k, v in env.items() if is_secret_name(k) and len(v) >= _MIN_SECRET_LEN)


def scrub_text(text: str, secrets: Iterable[str] | None = None) -> str:
    """`text` with every secret value replaced by the mask (longest first, so overlaps stay masked)."""
    values = secret_values() if secrets is None else secrets
    for value in sorted(values, key=len, reverse=True):
        if value:
            text = text.replace(value, MASK)
    return text


def scrub_obj(obj: Any, secrets: Iterable[str] | None = None) -> Any:
    """A copy of JSON-like data: secret-named keys masked, secret values cut out of strings."""
    values = frozenset(secret_values() if secrets is None else secrets)
    return _scrub(obj, values)


def _is_secret_entry(key: object, value: object) -> bool:
    return isinstance(key, str) and is_secret_name(key) and value not in (None, "")


def _scrub(obj: Any, values: frozenset[str]) -> Any:
    if isinstance(obj, Mapping):
        return {k: MASK if _is_secret_entry(k, v) else _scrub(v, values) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_scrub(v, values) for v in obj)
    if isinstance(obj, str):
        return scrub_text(obj, values)
    return obj


def public_env(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` without its secret-named variables: what may be written next to a command."""
    return {k: v for k, v in environ.items() if not is_secret_name(k)}
