"""Registries by name: a config names an entry, the registry imports and builds it.

Each entry points at two dotted paths, so that validating a config only imports the (light) pydantic
config module and building it imports the (possibly heavy) implementation. Adding a world = one module
with its config class and factory, one line in `registries.py`, and one YAML file under `conf/`.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, SerializeAsAny


class UnknownNameError(ValueError):
    """A config names a registry entry that does not exist."""

    def __init__(self, kind: str, name: str, known: list[str]) -> None:
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        super().__init__(f"unknown {kind} '{name}'; known: {', '.join(sorted(known))}.{hint}")
        self.kind, self.name, self.known, self.suggestion = kind, name, known, close[0] if close else None


def load_object(path: str) -> Any:
    """Import `package.module:attr` (or slime-style `package.module.attr`) and return the attribute."""
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    return getattr(importlib.import_module(module_name), attr)


@dataclass(frozen=True)
class Entry:
    """Where a registry entry lives: its config model and its factory, as `module:attr` paths."""

    config: str
    factory: str


class Registry:
    """Name → (config model, factory), imported on first use."""

    def __init__(self, kind: str, entries: Mapping[str, Entry]) -> None:
        self.kind = kind
        self._entries = dict(entries)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def entry(self, name: str) -> Entry:
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownNameError(self.kind, name, self.names()) from None

    def config_class(self, name: str) -> type[BaseModel]:
        return load_object(self.entry(name).config)

    def validate(self, data: Any) -> BaseModel:
        """Validate a mapping with a `name` key into that entry's config model."""
        if isinstance(data, BaseModel):
            return data
        if not isinstance(data, Mapping) or "name" not in data:
            raise ValueError(f"a {self.kind} section needs a 'name' key (one of: {', '.join(self.names())})")
        return self.config_class(str(data["name"])).model_validate(dict(data))

    def factory(self, name: str) -> Any:
        """The imported factory of an entry."""
        return load_object(self.entry(name).factory)

    def build(self, config: BaseModel, **kwargs: Any) -> Any:
        """Call the factory of the entry named by `config.name` with the config."""
        return self.factory(config.name)(config, **kwargs)  # type: ignore[attr-defined]


def registered(base: type[BaseModel], registry: Registry) -> Any:
    """A field type for a config section validated by `registry` (e.g. `t3rl_core.registries.ENVS`):
    the section's `name` picks the entry's config model, serialised as that model.

    Entries name their config modules by dotted path, so a config module can hand its own registry to
    this function without an import circle.
    """
    return Annotated[SerializeAsAny[base], BeforeValidator(registry.validate)]
