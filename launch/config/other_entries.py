"""A key typed under a registry section (env, reward, eval engine, sandbox, user simulator) that is no
field of the entry chosen there but is one of other entries of that registry: `env.url=…` under the
verifiers env is OpenEnv's server URL, `eval.engine.device=cpu` under the SGLang engine is the HF engine's
device. The registry declares which entries hold which fields, so the answer names them; the key's
last name alone would have found a place elsewhere in the config (`eval.engine.url`), another setting
that only shares the name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from launch.config.fixes import value_at
from launch.config.schema_walk import model_at
from t3rl_core import registries
from t3rl_core.plugins import PLUGIN_REGISTRIES
from t3rl_core.registry import Registry, load_object


def other_entries_fix(typed: str, root: Mapping[str, Any]) -> str | None:
    """The fix of an unknown `typed` key whose last name is a field of other built-in entries of the
    registry its section is chosen from, or None."""
    parent, _, leaf = typed.rpartition(".")
    model, chosen = model_at(parent, root), value_at(root, f"{parent}.name") if parent else None
    read = as_read(parent)
    if not isinstance(chosen, str) and read != parent:  # a stage's eval overlay that names no entry: the
        model, chosen, parent = model_at(read, root), value_at(root, f"{read}.name"), read  # root's, read
    registry = _registry_of(model) if model is not None and isinstance(chosen, str) else None
    if registry is None:
        return None
    owners = [name for name in sorted(registry.entries) if name != chosen and _declares(registry, name, leaf)]
    if not owners:
        return None
    return (
        f"drop it: ~{typed} ('{leaf}' is a field of the {registry.kind} {', '.join(owners)}, not of "
        f"{chosen}, the {registry.kind} chosen at {parent}.name; choose that {registry.kind} to set it)"
    )


def as_read(key: str) -> str:
    """A key of a stage's eval overlay as the root eval key the stage reads until it sets its own
    (`stages.eval.eval.engine` → `eval.engine`)."""
    parts = key.split(".")
    return ".".join(parts[2:]) if len(parts) > 3 and parts[0] == "stages" and parts[2] == "eval" else key


def _registry_of(model: type) -> Registry | None:
    for attr in PLUGIN_REGISTRIES:
        registry: Registry = getattr(registries, attr)
        if registry.base and issubclass(model, load_object(registry.base)):
            return registry
    return None


def _declares(registry: Registry, name: str, field: str) -> bool:
    try:
        return field in registry.config_class(name).model_fields
    except (ImportError, ValueError):  # an entry whose config does not import here declares nothing known
        return False
