"""A key no schema knows, spelt like a credential's key (`eval.engine.api_kee`, `tracking.wandb_api_kye`,
`--hf-token V`): its value is taken for the credential it most likely is.

Names tell credentials apart (`t3rl_core.secret_names`), so a misspelt name let the value through: the
error refusing the unknown key quoted it in "set in", and its "did you mean" fix offered it back as a
literal of the credential field. Judged only for a key that is already an error (a known key is never
masked by its spelling, so `max_tokens` stays readable): the value is remembered, so that every scrub of
this process masks it, and the fix names the reference form instead of the value.
"""

from __future__ import annotations

import difflib

from launch.config.secrets import remember
from t3rl_core.secret_names import is_reference, is_secret_key, is_secret_name

# The secret names a misspelling is measured against (`_SECRET_KEY_NAME`'s words, spelt out).
_SECRET_WORDS = (
    "api_key", "apikey", "access_key", "secret_key", "private_key", "wandb_key", "token", "secret",
    "password", "passwd", "passphrase", "credentials", "bearer",
)  # fmt: skip
# How close a name must be to one of them: one letter swapped, dropped or doubled in a word of 4+.
_CUTOFF = 0.8


def spelt_like_secret(key: str) -> bool:
    """A dotted key with a secret name, or one misspelt (`api_kye`, `pasword`, `tokn`), whole or in
    its last words (`wandb_api_kye`), at any level (`eval.engine.api_key.x`: under a credential)."""
    return is_secret_key(key) or any(map(_spelt_like_secret_name, key.lstrip("-+~").split(".")))


def _spelt_like_secret_name(name: str) -> bool:
    if is_secret_name(name):
        return True
    words = name.lower().replace("-", "_").split("_")
    tails = ["_".join(words[i:]) for i in range(len(words))]
    return any(_misspelt(tail) for tail in tails if tail)


def _misspelt(name: str) -> bool:
    """A letter away from a secret word, not the word with more after it (`tokens` counts tokens)."""
    close = difflib.get_close_matches(name, _SECRET_WORDS, n=1, cutoff=_CUTOFF)
    return bool(close) and not name.startswith(close[0])


def reference_fix(key: str) -> str:
    """The fix of a credential field given anything but a reference: the two reference forms."""
    return f"export NAME=<the credential>, then {key}=env:NAME (or {key}=file:PATH of a file holding it)"


def unknown_key_fix(key: str, value: object, meant: str | None) -> str | None:
    """For `key`, unknown, set to `value`, nearest to the known key `meant`: when either looks like a
    credential's key, the value is remembered (masked from now on) and the fix is returned — the
    reference form of `meant` when that is a credential field, else "" (the caller's fix stands, as it
    quotes no value). None when nothing looks secret."""
    secret_meant = meant is not None and is_secret_key(meant)
    if not (secret_meant or spelt_like_secret(key)):
        return None
    if isinstance(value, str | int | float) and not is_reference(str(value)):
        text = str(value)
        remember([text, text.strip("'\"")])
    return reference_fix(meant) if secret_meant and meant is not None else ""
