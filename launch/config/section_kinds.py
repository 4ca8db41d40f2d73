"""A key the chosen kind of a section has no field for, that another kind has: `user_sim=llm` with the
BFCL env sets `env.user`, a field of the tau2 env only; `sandbox=local` sets `env.sandbox`, ReTool's.

The refusal listed the chosen kind's own keys, none of which is what was meant. The answer is which
kinds have the key and the option of the section's group that chooses one (`env=tau2`), or dropping
what set it.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Mapping
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel

from launch.config.optional_groups import OPTIONAL_GROUPS
from launch.config.schema_walk import model_at
from t3rl_core import registries
from t3rl_core.counts import agreeing
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
    members = _union_members(parent, root)
    if members:  # a section of several kinds told apart by `kind` (executor): each kind is a model
        return sorted(
            kind for kind, member in members.items() if leaf in member.model_fields and member is not model
        )
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


def _union_members(key: str, root: Mapping[str, Any]) -> dict[str, type[BaseModel]]:
    """`kind` → model of each member of the union the field at `key` declares, told apart by `kind`
    (`executor`: dry, local, ray, slurm); {} for a field of one model."""
    parent, _, name = key.rpartition(".")
    holder = model_at(parent, root)
    field = holder.model_fields.get(name) if holder is not None else None
    if field is None or get_origin(field.annotation) not in (Union, types.UnionType):
        return {}
    members: dict[str, type[BaseModel]] = {}
    for member in get_args(field.annotation):
        kind = (
            member.model_fields.get("kind")
            if isinstance(member, type) and issubclass(member, BaseModel)
            else None
        )
        tags = get_args(kind.annotation) if kind is not None else ()
        if len(tags) == 1 and isinstance(tags[0], str):
            members[tags[0]] = member
    return members


def kind_fix(parent: str, leaf: str, kinds: list[str], source: str, options: Mapping[str, str]) -> str:
    """The fix of `parent.leaf` set (by `source`) where only `kinds` have it; `options`: group option →
    the kind it chooses (`tau2` → `tau2`, `retool_python` → `retool`)."""
    chosen = [f"{parent}={option}" for option, kind in options.items() if kind in kinds]
    override = _OVERRIDE.search(source)
    if override and override[1].lstrip("+").partition("=")[0] in OPTIONAL_GROUPS:
        # an experiment's file wrote the key itself (`executor: {time_limit: …}`): dropping the whole
        # experiment is no fix; the key is deleted where it was written
        file = source.partition(" (chosen by")[0]
        dropped = f"in {file}, delete `{leaf}:` under {parent}"
    elif override:
        dropped = f"drop `{override[1]}`"
    else:
        dropped = f"remove {parent}.{leaf} from {source or 'the config'}"
    kind_list = f"{parent} {agreeing(len(kinds), 'kind')} {', '.join(kinds)}"
    # a section no group chooses (eval.engine) has no option to name: dropping it is the fix
    choose = f", or choose one: {' or '.join(chosen)}" if chosen else ""
    return f"{dropped} ('{leaf}' is a field of the {kind_list} only){choose}"


def other_kinds_fix(
    parent: str,
    leaf: str,
    root: Mapping[str, Any],
    source: str,
    option_kinds: Callable[[str], dict[str, str]],
) -> str | None:
    """`env.user` set for an env kind that has no such field while another kind has it; `option_kinds`:
    group → each option's kind (read only when another kind has the key)."""
    kinds = kinds_with_field(parent, leaf, root) if parent else []
    if not kinds:
        return None
    return kind_fix(parent, leaf, kinds, source, option_kinds(parent.rpartition(".")[2]))
