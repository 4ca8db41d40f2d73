"""One walk of a validation's config, shared by the rules that read the same things of it.

Each rule used to walk the plain config or the validated models again for its own view (every leaf,
every mapping key, every list, every section): some forty walks a validation. `ConfigWalk` makes each
view once, when a rule first asks for it, as flat lists in the order the old walks yielded. It is made
per validation (`Context.walk`) and holds the very objects it indexes, so a context with other data
or another run gets a walk of its own, never another's.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from pydantic import BaseModel


class ConfigWalk:
    """Views of one plain config (`data`) and the run validated from it (`run`), each made once."""

    def __init__(self, data: Any, run: BaseModel) -> None:
        self.data = data
        self.run = run

    def of(self, data: Any, run: BaseModel) -> bool:
        """Whether this walk indexes exactly these objects (not equal ones: the same ones)."""
        return self.data is data and self.run is run

    @cached_property
    def _plain(self) -> tuple[list[tuple[str, Any]], list[tuple[str, str]], list[tuple[str, list[Any]]]]:
        leaves: list[tuple[str, Any]] = []
        keys: list[tuple[str, str]] = []
        lists: list[tuple[str, list[Any]]] = []
        _walk_plain(self.data, "", leaves, keys, lists)
        return leaves, keys, lists

    @property
    def leaves(self) -> list[tuple[str, Any]]:
        """(dotted key, value) of every leaf of the plain config: not a mapping nor a list (list items
        are keyed by their index)."""
        return self._plain[0]

    @cached_property
    def strings(self) -> list[tuple[str, str]]:
        """The leaves that are strings."""
        return [(key, value) for key, value in self.leaves if isinstance(value, str)]

    @property
    def keys(self) -> list[tuple[str, str]]:
        """(dotted key, its last name) of every mapping entry of the plain config, a mapping before
        its entries."""
        return self._plain[1]

    @property
    def lists(self) -> list[tuple[str, list[Any]]]:
        """(dotted key, list) of every list of the plain config, a list before the lists in it."""
        return self._plain[2]

    @cached_property
    def _models(self) -> tuple[list[tuple[str, BaseModel, str, Any]], list[tuple[str, BaseModel]]]:
        fields: list[tuple[str, BaseModel, str, Any]] = []
        sections: list[tuple[str, BaseModel]] = []
        _walk_models(self.run, "", fields, sections)
        return fields, sections

    @property
    def fields(self) -> list[tuple[str, BaseModel, str, Any]]:
        """(dotted key, model, field name, value) of every field of every model of the run reached
        through models and mappings (not lists), a field before the fields under it."""
        return self._models[0]

    @property
    def sections(self) -> list[tuple[str, BaseModel]]:
        """(dotted key, model) of the run ("") and every model under it reached as `fields` are, a
        model before the models under it."""
        return self._models[1]


def _walk_plain(
    node: Any,
    key: str,
    leaves: list[tuple[str, Any]],
    keys: list[tuple[str, str]],
    lists: list[tuple[str, list[Any]]],
) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            child = f"{key}.{k}" if key else str(k)
            keys.append((child, str(k)))
            _walk_plain(v, child, leaves, keys, lists)
    elif isinstance(node, list):
        lists.append((key, node))
        for i, v in enumerate(node):
            _walk_plain(v, f"{key}.{i}", leaves, keys, lists)
    else:
        leaves.append((key, node))


def _walk_models(
    node: Any,
    prefix: str,
    fields: list[tuple[str, BaseModel, str, Any]],
    sections: list[tuple[str, BaseModel]],
) -> None:
    if isinstance(node, dict):
        for name, value in node.items():
            _walk_models(value, f"{prefix}{name}.", fields, sections)
    elif isinstance(node, BaseModel):
        sections.append((prefix.rstrip("."), node))
        for name in type(node).model_fields:
            value = getattr(node, name)
            fields.append((f"{prefix}{name}", node, name, value))
            _walk_models(value, f"{prefix}{name}.", fields, sections)
