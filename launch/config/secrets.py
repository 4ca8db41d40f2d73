"""Keeps secrets out of everything t3rl writes, prints or caches.

Credentials reach the jobs only through the environment or a `t3rl_core.secret.Secret` reference
(`env:NAME`, `file:PATH`) that the process using it resolves. Whatever t3rl persists or prints — the
run dir (config.yaml, overrides.yaml, manifest.json, plan.sh, command.sh, runtime YAMLs, logs), the
tracked config, `t3rl show` and error messages — passes through `scrub_text` / `scrub_obj` first, and
the composition cache never stores a config that holds a secret (`holds_secret`).

What counts as a secret:
- the value of a secret-named environment variable (HF_TOKEN, *_API_KEY, *_SECRET, …);
- the value of a config key or override with a secret-looking name (api_key, token, password,
  secret, …), of any key under a `secrets` node, and of a secret-named variable under
  `hardware.env_vars` / `runtime_env`;
- the password of a URL (`https://user:password@host`);
- the value after a secret flag in an argument list (`--api-key X`, `--token=X`).
`remember_config` / `remember_overrides` note the values a command's config carries, so that every
later scrub in this process masks them wherever they reappear (an error message, a log line).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from t3rl_core.secret import mask_url, url_passwords

MASK = "***"

# Named explicitly because their names do not all follow the *_KEY / *_TOKEN pattern.
_KNOWN_SECRETS = frozenset({"WANDB_API_KEY", "OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"})
# Environment-variable style (upper case): any *_KEY / *_TOKEN / *_SECRET / *_PASSWORD.
_SECRET_ENV_NAME = re.compile(r"(^|_)(KEY|TOKEN|SECRET|PASSWORD)$")
# Config-key style (any case): narrower, because slime-shaped keys such as `reward_key` or
# `input_key` name data fields, not credentials.
_SECRET_KEY_NAME = re.compile(
    r"(?i)(^|_)(api_key|access_key|secret_key|wandb_key|token|secret|password|passwd|credentials?)$"
)
# `--flag=value`, `--flag,value` or `--flag value` inside an override's text (a Hydra list or string).
_FLAG_IN_TEXT = re.compile(r"(--?[A-Za-z][\w-]*)(?:=|,\s*|\s+)['\"]?([^,\]\s'\"]+)")
# `${oc.env:NAME}`, also as a sweep point's override spells it (`$\{oc.env\:NAME\}`, Hydra's escapes).
_REFERENCE = re.compile(r"^(env:[A-Za-z_][A-Za-z0-9_]*|file:\S+|\$\\?\{oc\.env\\?:[^}\\]+\\?\})$")
# Command-line flags: a trailing `token` only in the names of credentials (Megatron's --fim-pad-token
# takes a vocabulary token).
_SECRET_FLAG_NAME = re.compile(
    r"^((.*_)?(api_key|access_key|secret_key|password|passwd|secret|credentials?|wandb_key)"
    r"|token|auth_token|access_token|api_token|hf_token|bearer_token)$"
)
# A key ending in `token` names a credential (`token`, `hf_token`) or a vocabulary token
# (`eos_token: "<|im_end|>"`); the value tells them apart, as no credential is written like a special
# token. Masking a special token would also corrupt every prompt and template that contains it.
_TOKEN_KEY = re.compile(r"(?i)token$")
_VOCABULARY_TOKEN = re.compile(r"^(<[^<>\s]{1,64}>|\[[A-Za-z_]{1,32}\])$")
# Values this short are too likely to occur by chance ("1", "true") to be masked inside other text.
_MIN_SECRET_LEN = 6
# Values this process has seen in secret places (see remember_config).
_REMEMBERED: set[str] = set()


# Cached: every scrub of printed or written text walks the environment's names through it.
@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """True for variable or config-key names that hold credentials (FOO_API_KEY, HF_TOKEN, api_key)."""
    if name in _KNOWN_SECRETS or _SECRET_KEY_NAME.search(name.replace("-", "_")):
        return True
    return name.isupper() and bool(_SECRET_ENV_NAME.search(name))


def is_secret_key(dotted: str) -> bool:
    """True for a config key whose value is a credential: a secret-looking last name, anything under
    a `secrets` node, a secret-named variable under env_vars / runtime_env."""
    parts = [p for p in dotted.split(".") if p]
    return bool(parts) and (is_secret_name(parts[-1]) or "secrets" in parts[:-1] or parts[-1] == "secrets")


def is_vocabulary_token(key: str, value: object) -> bool:
    """`eos_token: "<|im_end|>"`, `pad_token: "</s>"`, `mask_token: "[MASK]"`: a token-named key holding
    a special token of a vocabulary, not a credential (keys under a `secrets` node excepted)."""
    parts = [p for p in str(key).split(".") if p]
    return (
        bool(parts)
        and "secrets" not in parts[:-1]
        and bool(_TOKEN_KEY.search(parts[-1]))
        and isinstance(value, str)
        and bool(_VOCABULARY_TOKEN.match(value.strip().strip("'\"")))
    )


def is_secret_flag(token: str) -> bool:
    """`--api-key`, `--token`, `--hf-token=…`: a command-line flag whose value is a credential (not
    `--fim-pad-token` and the like, which name a vocabulary token)."""
    if not token.startswith("-"):
        return False
    name = token.lstrip("-").split("=", 1)[0].replace("-", "_").lower()
    return bool(_SECRET_FLAG_NAME.match(name))


def secret_values(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The values of the secret-named variables of `environ` (default: this process's environment),
    and the secret values this process has remembered."""
    env = os.environ if environ is None else environ
    found = {v for k, v in env.items() if is_secret_name(k) and len(v) >= _MIN_SECRET_LEN}
    return frozenset(found | _REMEMBERED)


def scrub_text(text: str, secrets: Iterable[str] | None = None) -> str:
    """`text` with every secret value (longest first, so overlaps stay masked) and every URL password
    replaced by the mask."""
    values = secret_values() if secrets is None else frozenset(secrets) | _REMEMBERED
    for value in sorted(values, key=len, reverse=True):
        if value:
            text = text.replace(value, MASK)
    return mask_url(text)


def scrub_obj(obj: Any, secrets: Iterable[str] | None = None) -> Any:
    """A copy of JSON-like data: secret keys and secret flags' values masked, secret values and URL
    passwords cut out of strings."""
    values = frozenset(secret_values() if secrets is None else frozenset(secrets) | _REMEMBERED)
    return _scrub(obj, values)


def holds_secret(obj: Any) -> bool:
    """True when scrubbing would change `obj`: it must not be cached or printed as it is."""
    return scrub_obj(obj) != obj


def is_reference(value: object) -> bool:
    """`env:NAME`, `file:PATH` or `${oc.env:NAME}`: where a credential lives, not the credential."""
    return isinstance(value, str) and bool(_REFERENCE.match(value.strip("'\"")))


def _is_secret_entry(key: object, value: object) -> bool:
    return (
        isinstance(key, str)
        and (is_secret_name(key) or key == "secrets")
        and value not in (None, "")
        and not is_reference(value)
        and not is_vocabulary_token(key, value)
    )


def _scrub(obj: Any, values: frozenset[str]) -> Any:
    if isinstance(obj, Mapping):
        return {k: MASK if _is_secret_entry(k, v) else _scrub(v, values) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_scrub(v, values) for v in _mask_flag_values(list(obj)))
    if isinstance(obj, str):
        return scrub_text(obj, values)
    return obj


def _mask_flag_values(items: list[Any]) -> list[Any]:
    """`["--api-key", "X"]` → `["--api-key", MASK]`; `["--token=X"]` → `["--token=***"]`."""
    out = list(items)
    for i, item in enumerate(items):
        if isinstance(item, str) and is_secret_flag(item):
            if "=" in item:
                out[i] = item.split("=", 1)[0] + "=" + MASK
            elif i + 1 < len(items) and isinstance(items[i + 1], str) and not items[i + 1].startswith("-"):
                out[i + 1] = MASK
    return out


def secrets_in(obj: Any, key: str = "") -> list[str]:
    """Every secret value `obj` (config data) holds, by the rules of this module."""
    found: list[str] = []
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            child = f"{key}.{k}" if key else str(k)
            if is_secret_key(child):
                found += [
                    str(x)
                    for x in _leaves(v)
                    if x not in (None, "") and not is_reference(x) and not is_vocabulary_token(child, x)
                ]
            else:
                found += secrets_in(v, child)
    elif isinstance(obj, list | tuple):
        items = list(obj)
        for i, item in enumerate(items):
            if isinstance(item, str) and is_secret_flag(item):
                if "=" in item:
                    found.append(item.split("=", 1)[1])
                elif i + 1 < len(items) and isinstance(items[i + 1], str):
                    found.append(items[i + 1])
            found += secrets_in(item, key)
    elif isinstance(obj, str):
        found += url_passwords(obj)
    return [value for value in found if value and value != MASK]


def _leaves(obj: Any) -> list[Any]:
    if isinstance(obj, Mapping):
        return [leaf for v in obj.values() for leaf in _leaves(v)]
    if isinstance(obj, list | tuple):
        return [leaf for v in obj for leaf in _leaves(v)]
    return [obj]


def remember(values: Iterable[str]) -> None:
    """Mask these values in everything this process scrubs from now on."""
    _REMEMBERED.update(v for v in values if v and v != MASK and len(v) >= 2)


def remember_config(data: Any) -> None:
    """Remember every secret a (composed) config holds."""
    remember(secrets_in(data))


def remember_overrides(overrides: Sequence[str]) -> None:
    """Remember the values of overrides of secret keys (before composition, so that even an
    override Hydra rejects is masked in the error), and URL passwords in any override."""
    for override in overrides:
        key, eq, value = override.lstrip("+~").partition("=")
        if (
            eq
            and is_secret_key(key)
            and value.strip("'\"")
            and not is_reference(value)
            and not is_vocabulary_token(key, value)
        ):
            remember([value, value.strip("'\"")])
        remember(url_passwords(override))
        remember(m.group(2) for m in _FLAG_IN_TEXT.finditer(override) if is_secret_flag(m.group(1)))


def mask_override(override: str) -> str:
    """An override as it may be written or printed: a secret key's value masked, then scrubbed."""
    key, eq, value = override.partition("=")
    bare = key.lstrip("+~")
    credential = eq and value and not is_reference(value) and not is_vocabulary_token(bare, value)
    if credential and is_secret_key(bare):
        return f"{key}={MASK}"
    return scrub_text(override)


def mask_overrides(overrides: Iterable[str]) -> list[str]:
    return [mask_override(o) for o in overrides]


def public_env(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` without its secret-named variables: what may be written next to a command."""
    return {k: v for k, v in environ.items() if not is_secret_name(k)}


class ScrubbingStream:
    """A text stream that scrubs what is written through it (a backstop under every CLI output)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(scrub_text(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def scrub_standard_streams() -> None:
    """Route this process's stdout and stderr through `ScrubbingStream` (once)."""
    import sys

    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if not isinstance(stream, ScrubbingStream):
            setattr(sys, name, ScrubbingStream(stream))
