"""Which schema model describes a dotted config key — for "did you mean" and schema defaults.

Follows RunConfig field by field, narrowing unions with the config's own `kind`/`name` values and the
registry-typed sections (env, reward, eval engine, sandbox, user simulator; plugins too) with their
registry. A stage's `hardware` and `eval` dicts are overlays of HardwareConfig and EvalConfig, so they
are described by those models.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel

from launch.config.schema import EvalStage, HardwareConfig, RunConfig, TrainStage
from t3rl_core import registries
from t3rl_core.eval.config import EvalConfig
from t3rl_core.plugins import PLUGIN_REGISTRIES
from t3rl_core.registry import load_object

# Free-form dict fields that are partial overrides of a model.
OVERLAYS: dict[tuple[type[BaseModel], str], type[BaseModel]] = {
    (TrainStage, "hardware"): HardwareConfig,
    (EvalStage, "eval"): EvalConfig,
}


def model_at(key: str, data: Mapping[str, Any]) -> type[BaseModel] | None:
    """The model whose fields live directly under `key` ("" = RunConfig), or None."""
    current = _type_at(key, data)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def takes_any_key(key: str, data: Mapping[str, Any]) -> bool:
    """Whether `key` is a mapping field whose values are no sections (`model.chat.chat_template_kwargs`,
    `dict[Identifier, Any]`): a key typed there is a name of the user's, none the schema knows."""
    current = _type_at(key, data)
    return isinstance(current, tuple) and not _holds_section(current[1])


def holds_named_sections(key: str, data: Mapping[str, Any]) -> bool:
    """Whether `key` is a mapping of sections the user names (`stages`, `services`): each entry is
    removed by name (`~stages.eval_tiny`), not set to null."""
    current = _type_at(key, data)
    return isinstance(current, tuple) and _holds_section(current[1])


def _holds_section(tp: Any) -> bool:
    """Whether a value of type `tp` may be a section: a model, a mapping, or a union with one."""
    tp = _unwrap(tp)
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        return any(_holds_section(m) for m in get_args(tp))
    return origin is dict or tp is dict or (isinstance(tp, type) and issubclass(tp, BaseModel))


def _type_at(key: str, data: Mapping[str, Any]) -> Any:
    """What `_narrow` makes of the field at `key`: a model class, ("dict", value type), or None."""
    current: Any = RunConfig
    node: Any = data
    for part in key.split(".") if key else []:
        node = node.get(part) if isinstance(node, Mapping) else None
        if isinstance(current, type) and issubclass(current, BaseModel):
            overlay = OVERLAYS.get((current, part))
            if overlay is not None:
                current = overlay
                continue
            field = current.model_fields.get(part)
            if field is None:
                return None
            current = _narrow(field.annotation, node)
        elif isinstance(current, tuple) and current[0] == "dict":
            current = _narrow(current[1], node)
        else:
            return None
    return current


def field_names(key: str, data: Mapping[str, Any]) -> list[str]:
    """Field names allowed directly under `key`; [] when the key is free-form or unknown."""
    model = model_at(key, data)
    return sorted(model.model_fields) if model is not None else []


def _narrow(annotation: Any, value: Any) -> Any:
    """A field type narrowed to a model class or ("dict", value type); None for leaves."""
    tp = _unwrap(annotation)
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        members = [m for m in get_args(tp) if m is not type(None)]
        if len(members) == 1:
            return _narrow(members[0], value)
        return _pick_member([_unwrap(m) for m in members], value)
    if origin is dict:
        return ("dict", get_args(tp)[1])
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return _registered(tp, value) or tp
    return None


def _unwrap(tp: Any) -> Any:
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def _pick_member(members: list[Any], value: Any) -> type[BaseModel] | None:
    if not isinstance(value, Mapping):
        return None
    for member in members:
        if not (isinstance(member, type) and issubclass(member, BaseModel)):
            continue
        for discriminator in ("kind", "name"):
            field = member.model_fields.get(discriminator)
            if field is not None and discriminator in value and field.default == value[discriminator]:
                return member
    return None


def _registered(base: type[BaseModel], value: Any) -> type[BaseModel] | None:
    """The registry entry's config class for a registry-typed section (env, reward, engine, sandbox,
    user simulator), plugins included; None when the name does not resolve."""
    if not isinstance(value, Mapping) or not isinstance(value.get("name"), str):
        return None
    for attr in PLUGIN_REGISTRIES:
        registry = getattr(registries, attr)
        if registry.base and load_object(registry.base) is base:
            try:
                return registry.config_class(value["name"])
            except (ImportError, ValueError):
                return None
    return None
