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

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from launch.config.errors import Problem
from t3rl_core.secret_names import is_credential_at, is_secret_key

if TYPE_CHECKING:
    from launch.config.provenance import Provenance

# Mappings whose values become environment variables of a job.
ENVIRONMENT_KEYS = frozenset({"env_vars", "runtime_env"})
# An unescaped `${oc.env:` (a preceding backslash is OmegaConf's escape: already a literal).
_UNESCAPED = re.compile(r"(?<!\\)\$\{oc\.env:")
# _KEPT is a string, compiled by `re` (and cached) when first used, not on import: a cold `t3rl validate
# +experiment=stage2_bfcl` never uses it.
# A kept reference: its name, and the default after the comma if any (no nested interpolation).
_KEPT = r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)(?:,([^{}]*))?\}"


def keep_environment_references(node: Any, key: str = "", environment: bool = False) -> None:
    """Escape `${oc.env:…}` in the unresolved `node` (an OmegaConf container) under job-environment
    mappings and secret keys, so that resolving the config leaves the reference text there."""
    from omegaconf import DictConfig, ListConfig  # lazy: OmegaConf, only for a composition Hydra made

    children = node.keys() if isinstance(node, DictConfig) else range(len(node))
    for name in children:
        child = node._get_node(name)
        dotted = f"{key}.{name}" if key else str(name)
        inside = environment or name in ENVIRONMENT_KEYS
        if isinstance(child, DictConfig | ListConfig):
            if not (child._is_missing() or child._is_none() or child._is_interpolation()):
                keep_environment_references(child, dotted, inside)
            continue
        kept = kept_text(child._value(), dotted, inside)
        if kept is not None:
            node[name] = kept


def kept_text(raw: object, key: str, environment: bool) -> str | None:
    """`raw` (the value at dotted `key`, inside a job-environment mapping or not) with its `${oc.env:…}`
    escaped, when they must stay references; None when there is nothing to keep."""
    if isinstance(raw, str) and _UNESCAPED.search(raw) and (environment or is_secret_key(key)):
        return _UNESCAPED.sub(r"\\${oc.env:", raw)
    return None


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

    if re.search(_KEPT, value):
        return re.sub(_KEPT, shell, value)
    return f"${{{name}}}" if is_credential_at(name, value) else value


# `${oc.env:NAME}` with no default: the variable must be set.
_REQUIRED_VARIABLE = re.compile(r"(?<!\\)\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)\}")


def unset_variables(provenance: Provenance) -> list[Problem]:
    """Every key whose value reads an environment variable that is not set, and has no default: all of
    them at once (OmegaConf would stop at the first)."""
    problems = []
    for key, origin in provenance.items():
        if not isinstance(origin.raw, str) or kept_reference(key):
            continue  # a kept reference is read where the job runs, where it may well be set
        for name in dict.fromkeys(_REQUIRED_VARIABLE.findall(origin.raw)):
            if name not in os.environ:
                problems.append(
                    Problem(
                        key,
                        f"reads environment variable {name}, which is not set here",
                        origin.describe(),
                        f"export {name}=… before the command (the value is yours to give), or set "
                        f"{key}=${{oc.env:{name},DEFAULT}} with a default",
                    )
                )
    return problems
