"""A key the chosen kind of a section has no field for, that another kind has: `user_sim=llm` with the
BFCL env sets `env.user`, a field of the tau2 env only; `sandbox=local` sets `env.sandbox`, ReTool's.

The refusal listed the chosen kind's own keys, none of which is what was meant. The answer is which
kinds have the key and the option of the section's group that chooses one (`env=tau2`), or dropping
what set it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from launch.config.schema_walk import model_at
from t3rl_core import registries
from t3rl_core.plugins import PLUGIN_REGISTRIES
from t3rl_core.registry import load_object

# The override a provenance names (`conf/user_sim/llm.yaml (chosen by override `user_sim=llm`)`).
_OVERRIDE = re.compile(r"override `([^`]+)`")


def kinds_with_field(parent: str, leaf: str, root: Mapping[str, Any]) -> list[str]:
    """The built-in kinds (registry names) of the registry-typed section at `parent` (env, reward,
    sandbox, …) whose config has a field `leaf`; [] when the section is not registry-typed."""
    model = model_at(parent, root)
    if model is None:
        return []
    for attr in PLUGIN_REGISTRIES:
        registry = getattr(registries, attr)
        if registry.base and issubclass(model, load_object(registry.base)):
            return [
                name
                for name in sorted(registry.entries)
                if leaf in registry.config_class(name).model_fields
                and registry.config_class(name) is not model
            ]
    return []


def kind_fix(parent: str, leaf: str, kinds: list[str], source: str, options: Mapping[str, str]) -> str:
    """The fix of `parent.leaf` set (by `source`) where only `kinds` have it; `options`: group option →
    the kind it chooses (`tau2` → `tau2`, `retool_python` → `retool`)."""
    chosen = [f"{parent}={option}" for option, kind in options.items() if kind in kinds]
    override = _OVERRIDE.search(source)
    dropped = f"drop `{override[1]}`" if override else f"remove {parent}.{leaf} from {source or 'the config'}"
    kind_list = f"{parent} kind{'s' if len(kinds) > 1 else ''} {', '.join(kinds)}"
    return f"{dropped} ('{leaf}' is a field of the {kind_list} only), or choose one: {' or '.join(chosen)}"
