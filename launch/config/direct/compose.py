"""A plain command line composed without Hydra: the same `Plain` as `launch.config.resolved`'s
composition with Hydra, or None where this package does not reproduce it exactly (see `__init__`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from launch.config.direct.config_files import Repository
from launch.config.direct.defaults import Choice, Chosen, DefaultsList
from launch.config.direct.interpolation import Resolver
from launch.config.direct.nodes import Box, embedded, merge, plain
from launch.config.direct.overrides import Override, apply, parse
from launch.config.direct.unsupported import Unsupported
from launch.config.env_references import ENVIRONMENT_KEYS, kept_text, unset_variables
from launch.config.layers import AppliedOverride, Layer, leaves
from launch.config.optional_groups import optional_group_choice
from launch.config.plain import Plain, Reads
from launch.config.provenance import Provenance
from launch.config.search_path import PACKAGE_SOURCE, display_path, roots
from launch.config.secrets import remember_config, remember_overrides

PRIMARY_CONFIG = "config"
# What Hydra itself stores in its ConfigStore (the search path's last entry); anything else in it could
# be a config the direct composition does not see.
_HYDRA_STORE = frozenset({"hydra", "_dummy_empty_config_.yaml"})


def compose_directly(
    overrides: Sequence[str], config_dirs: Sequence[str], env: dict[str, str | None]
) -> Plain | None:
    """The composition of this command line, or None to compose with Hydra. `env` gets each
    environment variable the interpolations read, with its value (for the composition cache)."""
    read: dict[str, str | None] = {}
    try:
        composed = _compose(overrides, config_dirs, read)
    except Unsupported:
        return None
    env.update(read)
    return composed


def _compose(overrides: Sequence[str], config_dirs: Sequence[str], env: dict[str, str | None]) -> Plain:
    remember_overrides(overrides)
    repo = repository(config_dirs)
    written = {optional_group_choice(o): o for o in overrides}
    parsed = [parse(text) for text in written]
    choices: dict[str, Choice] = {}
    key_overrides: list[Override] = []
    for override in parsed:
        group, mounted, _ = override.key.partition("@")
        if not repo.group_exists(group):
            if mounted:
                raise Unsupported(f"{override.text}: no group {group}")
            key_overrides.append(override)
        elif override.prefix or not isinstance(override.value, str) or "/" in override.value:
            raise Unsupported(f"{override.text}: a group override the direct composition leaves to Hydra")
        else:
            choices[override.key] = Choice(override.value)
    defaults = DefaultsList(repo, choices)
    chosen = defaults.build(PRIMARY_CONFIG)

    config: dict[str, Any] = {}
    merged = []
    for default in chosen:
        loaded = repo.load(default.config_path)
        assert loaded is not None  # the defaults list only holds files it found
        content = embedded(loaded.content, default.package)
        experiment = default.config_path.startswith("experiment/")
        written_leaves = leaves(plain(content)) if experiment else {}
        merge(config, content)
        merged.append((default, loaded.source_path, content, written_leaves))
    hydra = config.pop("hydra", None)
    if hydra is not None and (not isinstance(hydra, dict) or "searchpath" in hydra):
        raise Unsupported("a config that sets Hydra's search path in Hydra's own node")
    for override in key_overrides:
        apply(config, override)
    _keep_environment_references(config)

    layers = [
        Layer(
            config_path=default.config_path,
            source=display_path(source_path, default.config_path),
            package=default.package,
            content=plain(content),
            chosen_by=_chosen_by(default, choices, parsed, written),
            written=own,
        )
        for default, source_path, content, own in merged
    ]
    applied = [AppliedOverride(o.text, o.key, o.value, delete=o.delete) for o in key_overrides]
    provenance = Provenance.from_layers(layers, applied)
    if unset_variables(provenance):
        raise Unsupported("an unset environment variable (Hydra's composition words the error)")
    root = plain(config)
    data = Resolver(root, env).resolved(root)
    remember_config(data)
    # Hydra's own node is composed by Hydra, once read (a search's sweeper): what shapes it here (a
    # file's `hydra:` section, an `override /hydra/sweeper` entry) never reaches the config.
    deferred = hydra is not None or defaults.hydra_entries
    return Plain(data, provenance, DeferredHydra(overrides, config_dirs) if deferred else {})


def repository(config_dirs: Sequence[str]) -> Repository:
    """The search path's files; Unsupported when it holds anything but plain directories."""
    dirs = [os.path.abspath(os.path.expanduser(d)) for d in config_dirs]
    found = roots(dirs)
    if found is None or len(found) != len(dirs) + 1:
        raise Unsupported("a search path entry that is not a plain directory")
    store = sys.modules.get("hydra.core.config_store")
    if store is not None and set(store.ConfigStore.instance().repo) - _HYDRA_STORE:
        raise Unsupported("configs registered in Hydra's ConfigStore")
    return Repository([(PACKAGE_SOURCE, found[0]), *((f"file://{d}", d) for d in dirs)])


def _keep_environment_references(
    node: dict[str, Any] | list[Any], key: str = "", inside: bool = False
) -> None:
    """`launch.config.env_references.keep_environment_references` on the boxed tree: a value is changed
    in place, as OmegaConf sets a scalar, so every tree sharing its box sees the kept reference."""
    items = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
    for name, child in items:
        dotted = f"{key}.{name}" if key else str(name)
        within = inside or name in ENVIRONMENT_KEYS
        if isinstance(child, dict | list):
            _keep_environment_references(child, dotted, within)
            continue
        kept = kept_text(child.value if isinstance(child, Box) else child, dotted, within)
        if kept is None:
            continue
        if isinstance(child, Box):
            child.value = kept
        else:
            node[name] = kept  # type: ignore[index]


def _chosen_by(
    default: Chosen, choices: dict[str, Choice], parsed: list[Override], written: dict[str, str]
) -> str:
    """Why a config was picked (as `launch.config.compose` words it from Hydra's override metadata)."""
    key = default.override_key or default.config_path.rpartition("/")[0]
    choice = choices.get(key)
    if choice is not None and choice.containing:
        return f"{choice.containing}.yaml"
    text = next((o.text for o in reversed(parsed) if o.key_element().lstrip("+~") == key), None)
    if text:
        return f"override `{written.get(text, text)}`"
    if default.parent and default.parent != PRIMARY_CONFIG:
        return f"{default.parent}.yaml"
    return ""


class DeferredHydra(Mapping[str, Any]):
    """Hydra's own node of a command line the direct composition composed without it, composed with
    Hydra the first time it is read. A search's `hparams_search` file shapes that node alone (its
    `hydra:` section, its `override /hydra/sweeper` entry): the search reads the sweeper once, from its
    base line, while each trial and bound it checks is a line of its own that never reads it."""

    __slots__ = ("_config_dirs", "_node", "_overrides")

    def __init__(self, overrides: Sequence[str], config_dirs: Sequence[str]) -> None:
        self._overrides, self._config_dirs = list(overrides), list(config_dirs)
        self._node: dict[str, Any] | None = None

    def _read(self) -> dict[str, Any]:
        if self._node is None:
            from launch.config.composed import plain_with_hydra  # lazy: Hydra, only when its node is read

            self._node = dict(plain_with_hydra(self._overrides, self._config_dirs, Reads()).hydra)
        return self._node

    def __getitem__(self, key: str) -> Any:
        return self._read()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())
