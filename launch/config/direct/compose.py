"""A plain command line composed without Hydra: the same `Plain` as `launch.config.resolved`'s
composition with Hydra, or None where this package does not reproduce it exactly (see `__init__`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from launch.config.direct.config_files import Repository
from launch.config.direct.defaults import Choice, Chosen, DefaultsList
from launch.config.direct.interpolation import Resolver
from launch.config.direct.nodes import Box, embedded, merge, plain
from launch.config.direct.overrides import Override, Refused, apply, parse, sets_hydras_node
from launch.config.direct.search_files import repository
from launch.config.direct.unsupported import Unsupported
from launch.config.env_references import ENVIRONMENT_KEYS, kept_text, unset_variables
from launch.config.errors import ConfigError
from launch.config.layers import AppliedOverride, Layer, leaves
from launch.config.optional_groups import optional_group_choice
from launch.config.plain import Plain, Reads
from launch.config.provenance import Provenance
from launch.config.search_path import display_path
from launch.config.secrets import remember_config, remember_overrides

PRIMARY_CONFIG = "config"
# A sweeper's settings (`++hydra.sweeper.n_trials=20`) set Hydra's own node alone, yet Hydra may refuse
# them (a key its sweeper lacks, a type it does not take, no search chosen) where this package cannot
# judge them. So they are composed directly once Hydra has composed a line with the same settings on a
# node of the same shape (`_NodeShape`): a search's every trial and bound the pre-flight composes repeats
# its base line's settings. The shapes Hydra accepted in this process, each with the values its
# provenance gave the node's keys: a file's value, or the setting's where OmegaConf set it in the file's
# own node (which the sweeper's schema decides: a field of type Any, not an int), as only Hydra knows.
_ACCEPTED: dict[tuple[Any, ...], dict[str, Any]] = {}
# The last line left to Hydra for want of that, with its shape (`composed_by_hydra` accepts it).
_unjudged: tuple[tuple[Any, ...], tuple[Any, ...]] | None = None


class _NodeShape(Unsupported):
    """Sweeper settings Hydra has not accepted on this shape of its node: everything that shapes it
    (the search path, the sweepers the defaults lists choose, the files' `hydra:` sections, the search
    the command line chooses, which Hydra's settings need) and the settings, in order."""

    def __init__(self, shape: tuple[Any, ...]) -> None:
        super().__init__("a sweeper's settings Hydra has not composed on this node")
        self.shape = shape


def compose_directly(
    overrides: Sequence[str], config_dirs: Sequence[str], env: dict[str, str | None]
) -> Plain | None:
    """The composition of this command line, or None to compose with Hydra; ConfigError with Hydra's
    problems when its overrides name keys the config lacks (`refusals`). `env` gets each environment
    variable the interpolations read, with its value (for the composition cache)."""
    read: dict[str, str | None] = {}
    global _unjudged
    try:
        composed = _compose(overrides, config_dirs, read)
    except _NodeShape as unjudged:
        _unjudged = ((tuple(overrides), tuple(config_dirs)), unjudged.shape)
        return None
    except Unsupported:
        return None
    env.update(read)
    return composed


def composed_by_hydra(overrides: Sequence[str], config_dirs: Sequence[str], provenance: Provenance) -> None:
    """Hydra composed this command line without an error: if `compose_directly` left it to Hydra for its
    sweeper settings alone, they are accepted on their node's shape from here on."""
    global _unjudged
    if _unjudged is not None and _unjudged[0] == (tuple(overrides), tuple(config_dirs)):
        _ACCEPTED[_unjudged[1]] = {key: o.raw for key, o in provenance.items() if _in_hydras_node(key)}
        _unjudged = None


def _with_hydras_values(provenance: Provenance, shape: tuple[Any, ...]) -> Provenance:
    """The provenance with the values Hydra's own gave the node's keys on this shape; _NodeShape when
    Hydra has not accepted it (or gave other keys)."""
    values = _ACCEPTED.get(shape)
    origins = dict(provenance.items())
    if values is None or set(values) != {key for key in origins if _in_hydras_node(key)}:
        raise _NodeShape(shape)
    return Provenance(
        {key: o._replace(raw=values[key]) if key in values else o for key, o in origins.items()},
        provenance.shadowed,
    )


def _in_hydras_node(key: str) -> bool:
    return key == "hydra" or key.startswith("hydra.")


def _compose(overrides: Sequence[str], config_dirs: Sequence[str], env: dict[str, str | None]) -> Plain:
    remember_overrides(overrides)
    repo = repository(config_dirs)
    written = {optional_group_choice(o): o for o in overrides}
    parsed = [parse(text) for text in written]
    choices: dict[str, Choice] = {}
    key_overrides: list[Override] = []
    node_settings = [o for o in parsed if sets_hydras_node(o)]
    for override in parsed:
        if sets_hydras_node(override):
            continue
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
    problems = []
    for override in key_overrides:
        try:
            apply(config, override)
        except Refused:
            # Hydra words each such override from the config it applies it to, its own node among the
            # top-level keys: that node is not here (a file's section, a search's), so those are its.
            if hydra is not None or defaults.hydra_entries or node_settings or "hparams_search" in choices:
                raise
            from launch.config.direct.refusals import refusal  # lazy: a refused key's words, no valid line's

            problems.append(refusal(config, override))
    if problems:
        raise ConfigError(problems)
    shape = _node_shape(repo, node_settings, defaults, hydra, choices, config_dirs)
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
    if shape is not None:
        provenance = _with_hydras_values(provenance, shape)
    if unset_variables(provenance):
        raise Unsupported("an unset environment variable (Hydra's composition words the error)")
    root = plain(config)
    data = Resolver(root, env).resolved(root)
    remember_config(data)
    # Hydra's own node is composed by Hydra, once read (a search's sweeper): what shapes it here (a
    # file's `hydra:` section, an `override /hydra/sweeper` entry) never reaches the config.
    deferred = hydra is not None or defaults.hydra_entries or node_settings
    return Plain(data, provenance, DeferredHydra(overrides, config_dirs) if deferred else {})


def _node_shape(
    repo: Repository,
    settings: list[Override],
    defaults: DefaultsList,
    hydra: Any,
    choices: dict[str, Choice],
    config_dirs: Sequence[str],
) -> tuple[Any, ...] | None:
    """What Hydra's acceptance of these sweeper settings depends on (see `_NodeShape`); None for none."""
    if not settings:
        return None
    if repo.group_exists("hydra"):
        raise Unsupported("a config dir holding Hydra's own groups")
    search = choices.get("hparams_search")
    return (
        tuple(config_dirs),
        tuple(defaults.hydra_entries),
        repr(plain(hydra)),
        search.value if search is not None else None,
        tuple(o.text for o in settings),
    )


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
