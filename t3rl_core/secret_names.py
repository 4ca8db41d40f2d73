"""What looks like a credential: names of variables, config keys and flags that hold one, and values
that look like one under a key-like name. Pure predicates; `launch.config.secrets` masks by them and
`launch.checks.rules.credentials` warns by them.
"""

from __future__ import annotations

import re
from functools import lru_cache

from t3rl_core.secret_name_words import is_hash_under, is_secret_name, looks_like_credential
from t3rl_core.secret_shapes import is_shaped_credential

# _SECRET_FLAG_NAME, _TOKEN_KEY and _VOCABULARY_TOKEN are strings, compiled by `re` (and cached) when first
# used, not on import: a cold `t3rl validate +experiment=stage2_bfcl` never uses them.
# Command-line flags: a trailing `token` only in the names of credentials (Megatron's --fim-pad-token
# takes a vocabulary token).
_SECRET_FLAG_NAME = (
    r"^((.*_)?(api_?key|access_?key|secret_?key|private_?key|password|passwd|passphrase|secret"
    r"|credentials?|wandb_key|pat)|token|auth|bearer|(auth|access|api|hf|bearer|refresh|id)_token)$"
)
# Words of names that may hold a credential under another spelling (`signing_salt`, `SESSION_COOKIE`,
# `myKeyId`): a value there is one when it also looks random (`looks_like_credential`). Whole words,
# so that `tokenizer` or `passes` are not.
_KEY_LIKE_WORDS = frozenset({
    "key", "keys", "keyid", "apikey", "token", "secret", "secrets", "pass", "passwd", "password",
    "passphrase", "pwd", "auth", "authorization", "cred", "creds", "credential", "credentials", "sig",
    "signature", "signing", "cookie", "session", "bearer", "salt", "pat", "private",
})  # fmt: skip
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
# A key ending in `token` names a credential (`token`, `hf_token`) or a vocabulary token
# (`eos_token: "<|im_end|>"`); the value tells them apart, as no credential is written like a special
# token. Masking a special token would also corrupt every prompt and template that contains it.
_TOKEN_KEY = r"(?i)token$"
_VOCABULARY_TOKEN = r"^(<[^<>\s]{1,64}>|\[[A-Za-z_]{1,32}\])$"
# `env:NAME`, `file:PATH`, `${oc.env:NAME}` (also as a sweep point's override spells it, with Hydra's
# escapes `$\{oc.env\:NAME\}`), and `${NAME}` (how a job's environment refers to its own variable).
_REFERENCE = re.compile(
    r"^(env:[A-Za-z_][A-Za-z0-9_]*|file:\S+|\$\\?\{oc\.env\\?:[^}\\]+\\?\}|\$\{[A-Za-z_][A-Za-z0-9_]*\})$"
)
# The variable's name a reference gives: `env:NAME`, `${oc.env:NAME…}` (escaped or not), `${NAME}`.
_REFERENCE_NAME = re.compile(r"^(?:env:|\$\\?\{oc\.env\\?:|\$\{)([^,}\\]*)")


# Cached: every scrub of a config and every credentials rule asks it of each of the config's ~330 keys.
@lru_cache(maxsize=4096)
def is_secret_key(dotted: str) -> bool:
    """True for a config key whose value is a credential: a secret-looking last name, anything under
    a `secrets` node, a secret-named variable under env_vars / runtime_env."""
    parts = [p for p in dotted.split(".") if p]
    return bool(parts) and (is_secret_name(parts[-1]) or "secrets" in parts[:-1] or parts[-1] == "secrets")


@lru_cache(maxsize=4096)
def is_key_like(name: str) -> bool:
    """A name that may hold a credential under a spelling `is_secret_name` does not take for one."""
    return any(word.lower() in _KEY_LIKE_WORDS for word in _WORDS.findall(name))


def is_vocabulary_token(key: str, value: object) -> bool:
    """`eos_token: "<|im_end|>"`, `pad_token: "</s>"`, `mask_token: "[MASK]"`: a token-named key holding
    a special token of a vocabulary, not a credential (keys under a `secrets` node excepted)."""
    parts = [p for p in str(key).split(".") if p]
    return (
        bool(parts)
        and "secrets" not in parts[:-1]
        and bool(re.search(_TOKEN_KEY, parts[-1]))
        and isinstance(value, str)
        and bool(re.match(_VOCABULARY_TOKEN, value.strip().strip("'\"")))
    )


def is_reference(value: object) -> bool:
    """`env:NAME`, `file:PATH`, `${oc.env:NAME}` or `${NAME}`: where a credential lives, not the
    credential (unless the name is one: `names_a_credential`)."""
    return (
        isinstance(value, str)
        and bool(_REFERENCE.match(value.strip("'\"")))
        and not names_a_credential(value)
    )


def names_a_credential(value: object) -> bool:
    """`env:<the key>`, `${oc.env:<the key>}`: a credential pasted where its variable's name goes. A
    variable's name is words (`HF_TOKEN`, `wandb_api_key_v2`); a random run of letters and digits in
    its place is the value, which a reference would otherwise have kept in clear in every record."""
    if not isinstance(value, str):
        return False
    found = _REFERENCE_NAME.match(value.strip("'\""))
    return found is not None and looks_like_credential(found[1])


def reference_default(value: object) -> str | None:
    """The literal `${oc.env:NAME,default}` falls back to where NAME is not set: a value, not where one
    lives (`${oc.env:MY_PASSWORD,hunter2…}` holds the password itself); None for any other value."""
    if not is_reference(value):
        return None
    text = str(value).strip("'\"")
    inner = text.removeprefix("$").replace("\\", "").strip("{}")
    if not inner.startswith("oc.env:") or "," not in inner:
        return None
    default = inner.partition(",")[2].strip().strip("'\"")
    return default or None


# The values whose answers are kept: hashable, and read apart by type (typed=True: True, 1 and 1.0).
_KEPT_SCALARS = (str, int, float, bool)


def is_credential_at(key: str, value: object) -> bool:
    """True when `value`, set at the dotted config `key`, is a credential itself: under a secret key
    (not a reference, not a special token), token-shaped and random under a key-like name, or a token
    whose issuer's prefix gives it away (`sk-…`, `hf_…`) under any key."""
    if type(value) in _KEPT_SCALARS:
        return _scalar_credential_at(key, value)
    return _credential_at(key, value)


# Cached: every resolve asks it of each of the config's ~1,200 entries, nearly all the same from one
# resolve to the next (a test suite resolves thousands of configs in one process).
@lru_cache(maxsize=16384, typed=True)
def _scalar_credential_at(key: str, value: object) -> bool:
    return _credential_at(key, value)


def _credential_at(key: str, value: object) -> bool:
    if value in (None, "") or is_reference(value) or _null(value):
        return False
    if is_shaped_credential(value) or names_a_credential(value):
        return True
    if is_secret_key(key):
        return not is_vocabulary_token(key, value)
    name = key.rsplit(".", 1)[-1]
    return (
        is_key_like(name)
        and looks_like_credential(value)
        and not (isinstance(value, str) and is_hash_under(name, value.strip().strip("'\"")))
    )


def _null(value: object) -> bool:
    """Hydra's null as an override types it (`eval.engine.api_key=null`, any case): no credential, but the
    absence of one. Taken for one, the text "null" was masked in everything the process printed after,
    the pre-flight's fixes included (`set eval.engine.url=***`)."""
    return isinstance(value, str) and value.strip().lower() == "null"


def is_secret_flag(token: str) -> bool:
    """`--api-key`, `--token`, `--hf-token=…`: a command-line flag whose value is a credential (not
    `--fim-pad-token` and the like, which name a vocabulary token)."""
    if not token.startswith("-"):
        return False
    name = token.lstrip("-").split("=", 1)[0].replace("-", "_").lower()
    return bool(re.match(_SECRET_FLAG_NAME, name))
