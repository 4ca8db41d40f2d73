"""Names of variables and config keys that hold a credential (`FOO_API_KEY`, `GITHUB_PAT`, `api_key`,
`accessToken`), and values that look random as keys do (`looks_like_credential`). A leaf of the secret
modules: `t3rl_core.secret_commands` reads a command's `set NAME V` and a key given to a credential's
word by them, and `t3rl_core.secret_names` (which reads values by `secret_shapes`, which reads commands)
builds on them.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from functools import lru_cache

# Named explicitly because their names do not all follow the patterns below.
_KNOWN_SECRETS = frozenset({"WANDB_API_KEY", "OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"})
# Environment-variable style (upper case), by the name's last word. PASS, PWD, PAT and AUTH only after
# another word: PWD alone is the shell's working directory.
_SECRET_ENV_NAME = re.compile(
    r"((^|_)(KEY|API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|BEARER)|_(PASS|PWD|PAT|AUTH))$"
)
# Config-key style (any case, `-` read as `_`): narrower, because slime-shaped keys such as
# `reward_key` or `input_key` name data fields, not credentials.
_SECRET_KEY_NAME = re.compile(
    r"(?i)(^|_)(api_?key|access_?key|secret_?key|private_?key|wandb_key|token|secret|password|passwd"
    r"|passphrase|credentials?|auth|bearer|pat)$"
)
# Where a camelCase name's next word begins (`access|Token`, `client|Secret`): read as `_` by the name
# patterns, as `-` is.
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


# Cached: every scrub of printed or written text walks the environment's names through it.
@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """True for variable or config-key names that hold credentials (FOO_API_KEY, GITHUB_PAT, api_key)."""
    if name in _KNOWN_SECRETS or _SECRET_KEY_NAME.search(_CAMEL_BOUNDARY.sub("_", name).replace("-", "_")):
        return True
    return name.isupper() and bool(_SECRET_ENV_NAME.search(name))


# A run of characters as random keys are written (base62, hex, base64 without `/`), long enough that a
# run of a word-built name rarely is one.
_RANDOM_RUN = re.compile(r"[A-Za-z0-9+]{16,}")
# Shannon entropy (bits per character) and share of neighbouring characters of another class (lower,
# upper, digit) from which such a run counts as random: 16+ random base62 or hex characters pass 83-99 %
# of the time, words with a number (`checkpoint20000steps`, `model00001of00004`) do not.
_RANDOM_BITS = 3.0
_RANDOM_CHANGES = 0.25


def looks_like_credential(value: object) -> bool:
    """A value with a long run of letters and digits that looks random (a key, not a path of words,
    a model name or a number)."""
    return isinstance(value, str) and len(value) <= 4096 and any(map(_random, _RANDOM_RUN.findall(value)))


@lru_cache(maxsize=4096)
def _random(run: str) -> bool:
    if not (any(c.isdigit() for c in run) and any(c.isalpha() for c in run)):
        return False
    bits = -sum(n / len(run) * math.log2(n / len(run)) for n in Counter(run).values())
    changes = sum(_kind(a) != _kind(b) for a, b in itertools.pairwise(run)) / (len(run) - 1)
    return bits >= _RANDOM_BITS and changes >= _RANDOM_CHANGES


# A hash as git, sha256sum and content-addressed caches print it: lower-case hex of 7+ digits (a git
# short sha), also after its algorithm's name (`sha256:…`). This and the next are pattern strings
# compiled on first use: a cold plan asks neither.
_HASH = r"(?:(?:sha(?:1|224|256|384|512)|md5|blake2[bs])[:-])?[0-9a-f]{7,}"
# The words before `key` that make its value a secret's whatever it looks like: hex is a common way to
# write such keys (`signing_key`, `hmacKey`, `--license-key`).
_SECRET_KEY_HEAD = (
    r"(?i)(?:api|access|secret|private|client|account|subscription|wandb|sign|signing|encryption"
    r"|decryption|crypt|cipher|aes|hmac|master|licen[cs]e|session|shared|app|service|deploy|ssh|gpg|pgp"
    r"|jwt|webhook|admin|auth|root|bearer|password|pass)[_-]?key$"
)


def is_hash_under(name: str, value: str) -> bool:
    """`value` is a hash (lower-case hex, as git and sha256sum print it) under the name of a data key
    (`cache_key`, `sortKey`, `content-key`), not a credential although it looks random. A name written as
    an environment variable's (`DD_APP_KEY`: upper case, a secret's name by `is_secret_name`) or whose
    word before `key` makes it a secret's (`signing_key`, `hmacKey`) keeps such a value a credential."""
    return is_hash(value) and not name.isupper() and re.search(_SECRET_KEY_HEAD, name) is None


def is_hash(text: str) -> bool:
    """`text` is a hash as git and sha256sum print it (`_HASH`: `3f2a9c1`, `sha256:<hex>`)."""
    return re.fullmatch(_HASH, text) is not None


def _kind(char: str) -> int:
    return 0 if char.isdigit() else 1 if char.isupper() else 2
