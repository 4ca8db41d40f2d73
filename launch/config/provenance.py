"""Where every key of a run config came from: a config file (and why it was chosen) or an override.

Built from a composition's layers: each config file of the defaults list contributes the keys it sets, at its
package, in merge order; command-line overrides come last. Later sources win, as in the merge itself.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator, Sequence
from typing import Any

import yaml

from launch.config.layers import AppliedOverride, Layer
from launch.config.secrets import mask_override
from t3rl_core.records import Record

# Order offsets: files chosen by a command-line group override, then command-line key overrides.
_CHOSEN_ON_COMMAND_LINE = 1_000
_COMMAND_LINE = 2_000
_SECTION_CHOSEN = 500


class Origin(Record):
    """The last source that set a key."""

    # A config file ("conf/hardware/h200x8.yaml") or an override ("override `hardware.nodes=2`").
    source: str
    # Why that file was used: "" (a default of the primary config), an override or a file's defaults list.
    chosen_by: str
    # The value as written there (interpolations unresolved); None for sub-trees and deletions.
    raw: Any
    # Recency: config files in merge order, then files chosen on the command line, then overrides.
    order: int
    # True when an override deleted the key (`~key`).
    deleted: bool = False
    # The dotted key a config file's content lands under ("" = the root); None for an override.
    package: str | None = None

    @property
    def chosen_on_line(self) -> str | None:
        """The override (`` `env=tau2` ``, quoted) that chose this key's file on the command line, if one
        did: a group option swapped in, whose keys other files were not written around."""
        return self.chosen_by.removeprefix("override ") if self.chosen_by.startswith("override `") else None

    def describe(self, key: str = "") -> str:
        """Where the value came from; with `key`, a file's line where it writes that key (`mine.yaml:6`)."""
        line = self._line(key) if key and self.package is not None else None
        source = f"{self.source}:{line}" if line else self.source
        what = f"deleted by {source}" if self.deleted else source + _from_environment(self.raw)
        return f"{what} (chosen by {self.chosen_by})" if self.chosen_by else what

    def _line(self, key: str) -> int | None:
        package = self.package or ""
        if package and not _at_or_below(key, package):
            return None
        return key_line(self.source, key.removeprefix(package).removeprefix("."))


def _from_environment(raw: Any) -> str:
    """`, from $NAME` when the value is `${oc.env:NAME,…}` and NAME is set: the file only names the
    variable, the shell that exported it set the value (`T3RL_RUNS_DIR=` made paths.runs_dir empty, and
    the error blamed conf/paths/default.yaml). Never the value: it may be a credential."""
    if not (isinstance(raw, str) and raw.startswith("${oc.env:")):
        return ""
    found = re.fullmatch(r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)(,.*)?\}", raw)
    if found is None or found[1] not in os.environ:
        return ""
    how = "set, empty" if not os.environ[found[1]] else "set in the environment"
    return f", from ${found[1]} ({how})"


class Shadow(Record):
    """A value an experiment file set that a config file merged after it replaced (Hydra merges an
    experiment's own keys where `_self_` stands in its defaults list)."""

    # The experiment file and the value it wrote.
    source: str
    raw: Any
    # The file merged later whose value won.
    by: str


class Provenance:
    """Dotted key → Origin for every node (leaves and sub-trees) of a composed config."""

    def __init__(self, origins: dict[str, Origin], shadowed: dict[str, Shadow] | None = None) -> None:
        self._origins = origins
        # Leaf key → the experiment's value a later file replaced.
        self.shadowed = shadowed or {}

    @classmethod
    def from_layers(cls, layers: Sequence[Layer], overrides: Sequence[AppliedOverride]) -> Provenance:
        """From the files of a composition (their content as it reads after composing) and its
        key overrides."""
        origins: dict[str, Origin] = {}
        shadowed: dict[str, Shadow] = {}
        experiments: dict[str, tuple[str, Any]] = {}
        chosen = _chosen_experiment(layers)
        for position, layer in enumerate(layers):
            # A file the command line chose ranks after every file chosen by config files, and one chosen
            # for a section (`model=qwen3_8b`) after the experiment it changes (merged before it).
            order = position + (_CHOSEN_ON_COMMAND_LINE if layer.chosen_by.startswith("override") else 0)
            order += _SECTION_CHOSEN if layer.chosen_by.startswith("override") and layer.package else 0
            source, chosen_by, package = layer.source, layer.chosen_by, layer.package
            is_experiment = layer.config_path.startswith("experiment/")
            for key, raw in _nodes(layer.content, ""):
                if package and not _at_or_below(key, package):
                    continue
                mine = experiments.get(key)
                # An experiment built on another (its defaults name it) replaces that one's values on
                # purpose; a group file merged after an experiment does so silently, and so does the
                # experiment it is built on, merged after it (its defaults list puts `_self_` first).
                if mine is not None and _replaces(mine[1], raw):
                    later_experiment = is_experiment and not (mine[0] == chosen and source != chosen)
                    if not later_experiment:
                        shadowed[key] = Shadow(mine[0], mine[1], source)
                origins[key] = Origin(source, chosen_by, raw, order, package=package)
            # What an experiment wrote itself (its content node is shared with later merges).
            experiments.update({key: (layer.source, raw) for key, raw in layer.written.items()})
        order = _COMMAND_LINE
        for override in overrides:
            source = f"override `{mask_override(override.text)}`"
            if override.delete:
                for key in [k for k in origins if k == override.key or k.startswith(override.key + ".")]:
                    del origins[key]
                origins[override.key] = Origin(source, "", None, order, deleted=True)
            else:
                origins[override.key] = Origin(source, "", override.value, order)
                if isinstance(override.value, dict | list):
                    for key, raw in _nodes(_as_config(override.value), override.key):
                        origins[key] = Origin(source, "", raw, order)
                if override.text.startswith("+"):  # `+` and `++` alike create what the path lacks
                    _created_by(origins, override.key, origins[override.key])
            order += 1
        for key in [k for k in shadowed if origins[k].source.startswith("override")]:
            del shadowed[key]  # the command line set it again: the user's last word
        return cls(origins, shadowed)

    def origin(self, key: str) -> Origin | None:
        """Who set `key`: the key itself, else its nearest ancestor, else the latest of its descendants."""
        if key in self._origins:
            return self._origins[key]
        parent = key
        while "." in parent:
            parent = parent.rsplit(".", 1)[0]
            if parent in self._origins:
                return self._origins[parent]
        below = [o for k, o in self._origins.items() if k.startswith(key + ".")] if key else []
        return max(below, key=lambda o: o.order) if below else None

    def sets(self, key: str) -> bool:
        """Whether a file or override set `key` itself (not only a container above it)."""
        return key in self._origins

    def source(self, key: str) -> str:
        """A one-line answer to "where was `key` set?" ("" when no file or override set it); a file's
        answer names the line where it writes the key."""
        found = self.origin(key)
        return found.describe(key) if found else ""

    def order(self, key: str) -> int:
        """Merge position of the source of `key` (-1 when unset): the key changed last has the highest."""
        found = self.origin(key)
        return found.order if found else -1

    def items(self) -> Iterator[tuple[str, Origin]]:
        return iter(sorted(self._origins.items()))

    def to_dict(self) -> dict[str, str]:
        """Leaf key → source description, for run manifests."""
        return {k: o.describe() for k, o in sorted(self._origins.items())}


def _created_by(origins: dict[str, Origin], key: str, override: Origin) -> None:
    """The containers `+key=v` created (`+env.user.name=x` makes `env.user`) are the override's: the
    file whose node it was added to lists them as its own (its content node is the one merged into)."""
    parent = key
    while "." in parent:
        parent = parent.rsplit(".", 1)[0]
        below = [k for k in origins if k.startswith(parent + ".")]
        # A container holding other keys (of a file, or of an earlier `+` override) was not created here:
        # a later override adding to it must not make every unset key below it look changed last.
        if parent not in origins or any(not _on_path(k, key) for k in below):
            return
        origins[parent] = override._replace(raw=None)  # a sub-tree: its leaves carry the values


def _on_path(other: str, key: str) -> bool:
    """`other` is `key`, below it, or a container between it and the root."""
    return other == key or other.startswith(key + ".") or key.startswith(other + ".")


def _chosen_experiment(layers: Sequence[Layer]) -> str | None:
    """The source of the experiment the command line chose (`+experiment=NAME`), not one it builds on."""
    for layer in layers:
        group, _, name = layer.config_path.partition("/")
        chosen_by = layer.chosen_by
        if group == "experiment" and chosen_by.startswith("override") and f"={name}`" in chosen_by:
            return layer.source
    return None


def _replaces(before: Any, after: Any) -> bool:
    """A leaf value written again with another value (sub-trees carry None and merge key by key)."""
    return before is not None and after is not None and before != after


def _at_or_below(key: str, package: str) -> bool:
    """False for the containers a file's package creates above its own keys (`stages`, `stages.train`)."""
    return not package or key == package or key.startswith(package + ".")


def _as_config(value: dict[str, Any] | list[Any]) -> Any:
    """An override's mapping or list as OmegaConf reads it (its nodes are what provenance lists)."""
    from omegaconf import OmegaConf  # lazy: only an override with a mapping or list value (never direct)

    return OmegaConf.create({"v": value}).v


def _nodes(node: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    """(dotted key, raw value) of every node below `node` (plain dicts, or an OmegaConf DictConfig);
    lists and scalars are leaves."""
    if isinstance(node, dict):
        # Gathered into one list: nested generators passed each of a composition's ~450 nodes up
        # through every level above it (a fifth of a direct composition's provenance).
        found: list[tuple[str, Any]] = []
        _plain_nodes(node, prefix, found)
        yield from found
        return
    from omegaconf import DictConfig, ListConfig, OmegaConf  # lazy: only a composition Hydra made

    if isinstance(node, DictConfig):
        if node._is_none() or node._is_missing():
            return
        for key, value in node.items_ex(resolve=False):
            dotted = f"{prefix}.{key}" if prefix else str(key)
            if isinstance(value, DictConfig) and not value._is_none():
                yield dotted, None  # a sub-tree: its leaves carry the values
                yield from _nodes(value, dotted)
            elif isinstance(value, ListConfig) and not value._is_none():
                yield dotted, OmegaConf.to_container(value, resolve=False)
            else:
                yield dotted, value


def _plain_nodes(node: dict[Any, Any], prefix: str, found: list[tuple[str, Any]]) -> None:
    """`_nodes` of plain dicts, appended to `found` in the same order."""
    for key, value in node.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict):
            found.append((dotted, None))
            _plain_nodes(value, dotted, found)
        else:
            found.append((dotted, value))


# The line of a config file where a key is written, read from the file's YAML nodes: provenance keeps which
# file set a key, and a message names the line too (`mine.yaml:6`), so a value a file gives in the wrong
# shape (`seed: {value: 3}`) is found where it is, not searched for in the file.


def key_line(file: str, path: str) -> int | None:
    """The 1-based line of `path` (dotted, within the file: its package not included) in `file`, or of the
    deepest key above it the file writes; None when the file writes none of them or cannot be read."""
    try:
        stat = os.stat(file)
    except OSError:
        return None
    lines = _lines(file, stat.st_ino, stat.st_mtime_ns, stat.st_size)
    while path:
        if path in lines:
            return lines[path]
        path = path.rpartition(".")[0]
    return None


@functools.lru_cache(maxsize=64)
def _lines(file: str, inode: int, mtime_ns: int, size: int) -> dict[str, int]:
    """Dotted path → the line its key is written on (the file's stamp keys the cache)."""
    try:
        with open(file, encoding="utf-8") as handle:
            root = yaml.compose(handle.read(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    found: dict[str, int] = {}
    _walk(root, "", found)
    return found


def _walk(node: Any, path: str, found: dict[str, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and not (not path and key.value == "defaults"):
                dotted = f"{path}.{key.value}" if path else str(key.value)
                found.setdefault(dotted, key.start_mark.line + 1)
                _walk(value, dotted, found)
    elif isinstance(node, yaml.SequenceNode) and path:
        for index, item in enumerate(node.value):
            found.setdefault(f"{path}.{index}", item.start_mark.line + 1)
            _walk(item, f"{path}.{index}", found)
