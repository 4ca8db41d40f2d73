"""Names of variables and config keys that hold a credential (`FOO_API_KEY`, `GITHUB_PAT`, `api_key`,
`accessToken`). A leaf of the secret modules: `t3rl_core.secret_commands` reads a command's `set NAME V`
by it, and `t3rl_core.secret_names` (which reads values by `secret_shapes`, which reads commands) builds
on it.
"""

from __future__ import annotations

import re
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
