"""The leaves of the config schema: every number and string a config model holds, with what its type
declares about it (bounds, a named domain, a string kind, a choice), for the domain audit and the
mutation tests (tests/launch/test_schema_domains.py)."""

from __future__ import annotations

import importlib
import pkgutil
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from annotated_types import Ge, Gt, Interval, Le, Lt
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from t3rl_core.fields import Domain, Ordered, StrKind
from t3rl_core.strict import StrictModel

BOUNDS = (Ge, Gt, Le, Lt, Interval)
# Packages whose modules define config models; CLI entry points and `python -m` mains define none.
PACKAGES = ("t3rl_core", "launch")


@dataclass(frozen=True)
class Leaf:
    """A number or string inside a field's type: `where` is its place (`[]` an item, `{}` a key, `{:}` a
    value), `metadata` everything its type declares about it."""

    model: type[BaseModel]
    field: str
    where: str
    base: type
    metadata: tuple[Any, ...]

    @property
    def name(self) -> str:
        return f"{self.model.__module__}.{self.model.__qualname__}.{self.field}{self.where}"

    def bounds(self) -> list[Any]:
        return [m for m in self.metadata if isinstance(m, BOUNDS)]

    def declared(self) -> bool:
        if self.base is str:
            return any(isinstance(m, StrKind) for m in self.metadata)
        if self.base in (int, float):
            return bool(self.bounds()) or any(isinstance(m, Domain) for m in self.metadata)
        # Another class: declared when it validates itself (e.g. Secret); a plain BaseModel is not.
        return hasattr(self.base, "__get_pydantic_core_schema__") and not issubclass(self.base, BaseModel)


def import_all() -> None:
    """Import every module that may define a config model."""
    for package in PACKAGES:
        root = importlib.import_module(package)
        for module in pkgutil.walk_packages(root.__path__, f"{package}."):
            if module.name.endswith(".__main__") or module.name.startswith("launch.cli"):
                continue
            importlib.import_module(module.name)


def config_models() -> list[type[BaseModel]]:
    """Every StrictModel subclass t3rl defines (plugins' base configs included), after `import_all`."""
    found: list[type[BaseModel]] = []
    pending: list[type[BaseModel]] = [StrictModel]
    while pending:
        model = pending.pop()
        pending.extend(model.__subclasses__())
        if model is not StrictModel and model.__module__.split(".")[0] in PACKAGES and model not in found:
            found.append(model)
    return sorted(found, key=lambda m: f"{m.__module__}.{m.__qualname__}")


def leaves(model: type[BaseModel]) -> Iterator[Leaf]:
    """The numbers and strings of `model`'s own fields (nested models are models of their own)."""
    for name, field in model.model_fields.items():
        yield from _walk(model, name, field.annotation, "", tuple(_expand(field.metadata)))


def orderings(model: type[BaseModel]) -> Iterator[tuple[str, Ordered]]:
    """(field, its declared order with an earlier field) of every ordered field of `model`."""
    for name, field in model.model_fields.items():
        for item in _expand(field.metadata):
            if isinstance(item, Ordered):
                yield name, item


def _expand(metadata: Any) -> Iterator[Any]:
    for item in metadata:
        if isinstance(item, FieldInfo):
            yield from _expand(item.metadata)
        else:
            yield item


def _walk(model: type[BaseModel], field: str, tp: Any, where: str, meta: tuple[Any, ...]) -> Iterator[Leaf]:
    origin = get_origin(tp)
    if origin is Annotated:
        inner, *extra = get_args(tp)
        yield from _walk(model, field, inner, where, meta + tuple(_expand(extra)))
    elif origin in (Union, types.UnionType):
        for arm in get_args(tp):
            yield from _walk(model, field, arm, where, meta)
    elif origin in (list, tuple, set, frozenset):
        for item in get_args(tp):
            if item is not Ellipsis:
                yield from _walk(model, field, item, f"{where}[]", ())
    elif origin is dict:
        key, value = get_args(tp)
        yield from _walk(model, field, key, f"{where}{{}}", ())
        yield from _walk(model, field, value, f"{where}{{:}}", ())
    elif origin is Literal or tp is type(None) or tp is bool or tp is Any:
        return  # a declared choice; nothing; a flag; a free-form overlay validated by its own model
    elif isinstance(tp, type) and issubclass(tp, StrictModel):
        return  # a model of its own (config_models lists it)
    else:
        yield Leaf(model, field, where, tp, meta)
