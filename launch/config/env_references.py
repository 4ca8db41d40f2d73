"""`${oc.env:NAME}` stays a reference where its value would be a job's environment or a credential.

OmegaConf resolves every `${oc.env:NAME}` while composing, so the value would be in the resolved config
and from there in config.yaml, manifest.json, plan.sh, the Ray runtime env and the composition cache,
masked only when its name looks secret. Under a job-environment mapping (`hardware.env_vars`, a stage's
`hardware.env_vars`) and under a secret-looking key, the reference is kept as written instead, whatever
the variable is called: the files hold `${oc.env:NAME}`, a Secret field reads it as `env:NAME`, and the
job's environment gets `${NAME}`, which Ray (or the shell) expands where the job runs. Elsewhere
(`paths.runs_dir: ${oc.env:T3RL_RUNS_DIR,runs}`) the value is configuration and resolved as before.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from launch.config.secret_names import is_credential_at, is_secret_key

# Mappings whose values become environment variables of a job.
ENVIRONMENT_KEYS = frozenset({"env_vars", "runtime_env"})
# An unescaped `${oc.env:` (a preceding backslash is OmegaConf's escape: already a literal).
_UNESCAPED = re.compile(r"(?<!\\)\$\{oc\.env:")
# A kept reference: its name, and the default after the comma if any (no nested interpolation).
_KEPT = re.compile(r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)(?:,([^{}]*))?\}")


def keep_environment_references(node: Any, key: str = "", environment: bool = False) -> None:
    """Escape `${oc.env:…}` in the unresolved `node` (an OmegaConf container) under job-environment
    mappings and secret keys, so that resolving the config leaves the reference text there."""
    from omegaconf import DictConfig, ListConfig

    children = node.keys() if isinstance(node, DictConfig) else range(len(node))
    for name in children:
        child = node._get_node(name)
        dotted = f"{key}.{name}" if key else str(name)
        inside = environment or name in ENVIRONMENT_KEYS
        if isinstance(child, DictConfig | ListConfig):
            if not (child._is_missing() or child._is_none() or child._is_interpolation()):
                keep_environment_references(child, dotted, inside)
            continue
        raw = child._value()
        if isinstance(raw, str) and _UNESCAPED.search(raw) and (inside or is_secret_key(dotted)):
            node[name] = _UNESCAPED.sub(r"\\${oc.env:", raw)


def kept_reference(key: str) -> bool:
    """Whether a `${oc.env:…}` at dotted `key` stays a reference (resolved where the job runs, not here)."""
    return any(part in ENVIRONMENT_KEYS for part in key.split(".")[:-1]) or is_secret_key(key)


def job_variable(name: str, value: str, environ: Mapping[str, str]) -> str:
    """A job's variable `name` as its environment (Ray's runtime env) takes it, never holding a
    credential: `${oc.env:NAME}` kept by the config → `${NAME}`, expanded where the job runs (a default,
    `${oc.env:NAME,default}`, applies when NAME is not set here either: Ray's expansion has none); a
    literal credential → `${name}`, the job's own variable (the files show it masked, so the job could
    not be given it as written)."""

    def shell(match: re.Match[str]) -> str:
        variable, default = match.group(1), match.group(2)
        if default is None or variable in environ:
            return f"${{{variable}}}"
        return default.strip().strip("'\"")

    if _KEPT.search(value):
        return _KEPT.sub(shell, value)
    return f"${{{name}}}" if is_credential_at(name, value) else value
