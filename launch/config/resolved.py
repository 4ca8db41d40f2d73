"""Compose and resolve interpolations: the plain config the schema validates, with its provenance.

Free of the schema and of pydantic on purpose: `launch.config.compose_ahead` runs this in a forked
child while the parent imports and builds the schema, so it must not pay for them. Hydra and OmegaConf
are imported where a composition is computed, not on a cache hit.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from launch.config.compose_cache import Plain, cached_compose
from launch.config.env_references import keep_environment_references, kept_reference
from launch.config.errors import ConfigError, Problem
from launch.config.provenance import Provenance
from launch.config.secrets import remember_config, remember_overrides

if TYPE_CHECKING:
    from launch.config.compose import Composition


@dataclass(frozen=True)
class Composed:
    """A composed config with interpolations resolved, before schema and cross-field validation."""

    composition: Composition
    provenance: Provenance
    data: dict[str, Any]


def compose_resolved(overrides: Sequence[str], config_dirs: Sequence[str] = ()) -> Composed:
    """Compose and resolve interpolations only (for inspecting configs that may not validate)."""
    from launch.config.compose import compose

    remember_overrides(overrides)
    composition = compose(overrides, config_dirs)
    keep_environment_references(composition.config)  # a job's variables and credentials stay references
    provenance = Provenance.from_composition(composition)
    data = _plain(composition, provenance)
    remember_config(data)  # masked from here on wherever they reappear (show, errors, files, logs)
    return Composed(composition, provenance, data)


def composed_plain(overrides: Sequence[str], config_dirs: Sequence[str] = ()) -> Plain:
    """The plain composition of this command line, from the composition cache when it is current (a
    composition it computes remembers the overrides' and config's secrets first: compose_resolved)."""
    return cached_compose(overrides, config_dirs, lambda: plain_composition(overrides, config_dirs))


def plain_composition(overrides: Sequence[str], config_dirs: Sequence[str]) -> Plain:
    from omegaconf import OmegaConf

    composed = compose_resolved(overrides, config_dirs)
    hydra_node = composed.composition.hydra
    hydra = OmegaConf.to_container(hydra_node, resolve=False) if hydra_node else {}
    return Plain(composed.data, composed.provenance, hydra)  # type: ignore[arg-type]


def _plain(composition: Composition, provenance: Provenance) -> dict[str, Any]:
    """The config with interpolations resolved; a broken interpolation names its key and source."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    unset = unset_variables(provenance)
    if unset:
        raise ConfigError(unset)
    try:
        data = OmegaConf.to_container(composition.config, resolve=True, throw_on_missing=True)
    except OmegaConfBaseException as error:
        key = str(getattr(error, "full_key", "") or "")
        message = str(getattr(error, "msg", error)).splitlines()[0]
        fix = _interpolation_fix(composition, provenance, key, message)
        raise ConfigError(
            [Problem(key, f"cannot resolve the value: {message}", provenance.source(key), fix)]
        ) from None
    assert isinstance(data, dict)
    return data


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


def _interpolation_fix(composition: Composition, provenance: Provenance, key: str, message: str) -> str:
    """The value with its misspelt interpolation key corrected, when a close key exists."""
    import re

    from omegaconf import OmegaConf

    from launch.config.errors import did_you_mean

    generic = "fix the ${...} interpolation (it must name an existing key, or ${oc.env:VAR,default})"
    found = re.search(r"Interpolation key '([^']+)' not found", message)
    origin = provenance.origin(key)
    raw = origin.raw if origin is not None else None
    if not found or not isinstance(raw, str):
        return generic
    missing = found.group(1)
    parent, _, leaf = missing.rpartition(".")
    node = OmegaConf.select(composition.config, parent) if parent else composition.config
    keys = [str(k) for k in node] if OmegaConf.is_dict(node) else []
    guess = did_you_mean(leaf, keys)
    if guess is None:
        return generic
    corrected = raw.replace("${" + missing + "}", "${" + (f"{parent}.{guess}" if parent else guess) + "}")
    target = f"{parent}.{guess}" if parent else guess
    return f"set {key}={corrected} (the interpolation names no key '{missing}'; did you mean '{target}'?)"
