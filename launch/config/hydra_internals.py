"""Every use of Hydra's private API (`hydra._internal.*` and private methods), behind one module.

t3rl composes configs itself instead of through `@hydra.main`, because it needs what Hydra keeps to
itself: which file set each key (provenance), the defaults list before merging, and per-override
errors. Hydra's public API exposes none of that, so these functions reach into its internals. They
are pinned to the versions tested (`hydra-core>=1.3.2,<1.4` in pyproject.toml), and
`tests/launch/test_hydra_internals.py` pins the behaviour t3rl relies on, so an upgrade that changes
any of it fails there first, with the function named.

For the next Hydra (1.4 or 2.0), check each function here against its source:
- `ConfigLoaderImpl._load_single_config`, `_process_config_searchpath` and the static
  `_apply_overrides_to_config` (names and signatures have been stable since 1.1 but are private);
- `create_defaults_list(repo=, config_name=, overrides_list=, prepend_hydra=, skip_missing=)` and its
  result's `.defaults`, `.config_overrides`, `.overrides.override_metadata` / `.known_choices`;
- the config sources' registry (`SourcesRegistry.instance().register`) and `ConfigSearchPathImpl`;
- `CachingConfigRepository`'s two attributes (`delegate`, `cache`), which `_FreshRepository` sets
  itself, and `ConfigRepository(config_search_path=)`;
- `BasicSweeper.split_arguments(overrides, max_batch_size)`, the cartesian product of a sweep;
- `Hydra.create_main_hydra2(task_name, search_path)` and `create_config_search_path(source)`, which
  drive a sweeper plugin (Optuna) without `@hydra.main`;
- `Plugins.instantiate_launcher(config=, hydra_context=, task_function=)`, which the sweeper calls in
  its `setup` (replaced for one multirun by `launcher_override`), and the launcher protocol the
  sweeper uses: `launch(job_overrides, initial_job_idx) -> list[JobReturn]`;
- OmegaConf's `omegaconf._utils.get_yaml_loader`, which `OmegaConf.load` calls for the loader class of
  every config file Hydra reads (replaced during a composition by `libyaml_parsing`).
If one of them is gone, the replacement belongs here and nowhere else.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import IO, Any

import yaml
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.config_repository import CachingConfigRepository, ConfigRepository
from hydra._internal.config_search_path_impl import ConfigSearchPathImpl
from hydra._internal.core_plugins.file_config_source import FileConfigSource
from hydra._internal.core_plugins.importlib_resources_config_source import ImportlibResourcesConfigSource
from hydra._internal.core_plugins.structured_config_source import StructuredConfigSource
from hydra._internal.defaults_list import DefaultsList, create_defaults_list
from hydra._internal.hydra import Hydra
from hydra._internal.sources_registry import SourcesRegistry
from hydra._internal.utils import create_config_search_path
from hydra.core.config_search_path import SearchPathQuery
from hydra.core.default_element import ResultDefault
from hydra.core.object_type import ObjectType
from hydra.core.override_parser.types import Override
from hydra.core.plugins import Plugins
from hydra.plugins.config_source import ConfigResult, ConfigSource
from omegaconf import DictConfig, _utils
from yaml.constructor import SafeConstructor
from yaml.cyaml import CParser
from yaml.resolver import Resolver

__all__ = [
    "CachingConfigRepository",
    "ConfigLoaderImpl",
    "DefaultsList",
    "apply_override",
    "config_groups",
    "config_header",
    "defaults_list",
    "group_exists",
    "group_options",
    "launcher_override",
    "libyaml_parsing",
    "load_config_file",
    "load_single_config",
    "new_loader",
    "optuna_capable_hydra",
    "split_sweep",
]

# The config sources t3rl's search path uses, registered directly: Hydra's plugin discovery (slow) is
# only needed when Hydra's own config groups are composed.
for _source in (FileConfigSource, ImportlibResourcesConfigSource, StructuredConfigSource):
    SourcesRegistry.instance().register(_source)


def new_loader(entries: Sequence[tuple[str, str]]) -> ConfigLoaderImpl:
    """A config loader over the search path `entries`: (provider, "pkg://…" / "file://…") in order."""
    search_path = ConfigSearchPathImpl()
    for provider, path in entries:
        search_path.append(provider, path)
    return ConfigLoaderImpl(config_search_path=search_path)


def defaults_list(
    loader: ConfigLoaderImpl,
    primary: str,
    overrides: list[Override],
    *,
    with_hydra: bool,
    command_line: list[Override],
) -> tuple[CachingConfigRepository, DefaultsList]:
    """The defaults list of `primary` under `overrides` (what Hydra would merge, in order), and the
    repository to load each entry from. The `hydra.searchpath` overrides among `command_line` extend
    the loader's search path first, as in a Hydra app."""
    repo = _FreshRepository(loader)
    loader._process_config_searchpath(primary, command_line, repo)
    defaults = create_defaults_list(
        repo=repo, config_name=primary, overrides_list=overrides, prepend_hydra=with_hydra, skip_missing=False
    )
    return repo, defaults


class _FreshRepository(CachingConfigRepository):
    """Hydra's caching repository over new sources for `loader`'s search path. Hydra's own constructor
    deep-copies the loader's repository so that a `hydra.searchpath` (`initialize_sources`) leaves it
    as it was; that copy includes the structured-config source's ConfigStore, every config Hydra and
    its plugins registered, paid again by every composition (3.3 % of the instructions of a refused
    `t3rl validate` in a warm process). New sources leave the loader's alone just as well, and the
    store is shared as the loader's is: it copies each config it hands out (`ConfigStore.load`)."""

    def __init__(self, loader: ConfigLoaderImpl) -> None:  # no super().__init__: that is the deep copy
        self.delegate = ConfigRepository(config_search_path=loader.config_search_path)
        self.cache: dict[str, Any] = {}
        for source in self.delegate.sources:
            if isinstance(source, FileConfigSource | ImportlibResourcesConfigSource):
                source.load_config = _kept_loads(source)  # type: ignore[method-assign]


# Each config file's load (its OmegaConf tree and header) by a file or package source, kept for the process
# with the file's status (inode, size, modification and change times) and handed out as a deep copy (Hydra
# edits what it loads): every composition with Hydra (an error's, a line the direct composition leaves to it)
# built the tree of each of its ~15 files again, 4-7 times the copy's cost. A status younger than
# _SETTLED_NS when read is never kept (two writes within a coarse clock's tick can leave the same status:
# git's "racily clean" rule, as the composition cache's file digests use it); an error is never kept.
_LOADS: dict[tuple[str, str], tuple[tuple[int, int, int, int], Any]] = {}
_SETTLED_NS = 2_000_000_000


def _kept_loads(source: FileConfigSource | ImportlibResourcesConfigSource) -> Any:
    load = source.load_config

    def kept(config_path: str) -> Any:
        name = source._normalize_file_name(config_path)
        if isinstance(source, FileConfigSource):
            file = os.path.realpath(os.path.join(source.path, name))
        else:
            found = resources.files(source.path).joinpath(name)
            if not isinstance(found, Path):  # a zipped package: loaded as Hydra does
                return load(config_path)
            file = str(found)
        try:
            status = os.stat(file)
        except OSError:
            return load(config_path)  # Hydra's own error for it
        key = (status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)
        known = _LOADS.get((source.path, config_path))
        if known is not None and known[0] == key:
            result = known[1]
        else:
            result = load(config_path)
            if time.time_ns() - max(status.st_mtime_ns, status.st_ctime_ns) > _SETTLED_NS:
                _LOADS[(source.path, config_path)] = (key, result)
            else:
                _LOADS.pop((source.path, config_path), None)
                return result
        return ConfigResult(
            provider=result.provider,
            path=result.path,
            config=copy.deepcopy(result.config),
            header=dict(result.header),
        )

    return kept


def load_single_config(
    loader: ConfigLoaderImpl, default: ResultDefault, repo: CachingConfigRepository
) -> Any:
    """One entry of a defaults list, loaded (`.config`, `.path`), with Hydra's own checks."""
    return loader._load_single_config(default=default, repo=repo)


def config_header(loader: ConfigLoaderImpl, config_path: str) -> dict[str, str | None] | None:
    """The header (`# @package …`) Hydra's `load_config` gives a config file of the search path, without
    making its OmegaConf tree (the dearest part of a load: ~40 ms for a shipped option): the header from
    the file's first 512 characters, as the file and package sources read it, once its YAML has parsed
    with OmegaConf's loader to a tree OmegaConf takes as it is (text keys; text, number, boolean and null
    values). None when that cannot be told so (another source, a missing file, an error, other data):
    then only Hydra's load says what it says."""
    source = loader.repository._find_object_source(config_path=config_path, object_type=ObjectType.CONFIG)
    if isinstance(source, FileConfigSource):
        name = source._normalize_file_name(config_path)
        file: Any = Path(os.path.realpath(os.path.join(source.path, name)))
    elif isinstance(source, ImportlibResourcesConfigSource):
        file = resources.files(source.path).joinpath(source._normalize_file_name(config_path))
    else:
        return None
    try:
        with file.open(encoding="utf-8") as handle:
            text = handle.read()
        header = ConfigSource._get_header_dict(text[:512])
        with libyaml_parsing():
            data = yaml.load(text, Loader=_utils.get_yaml_loader())
    except Exception:  # whatever it is, Hydra's own load raises it in its words
        return None
    return header if data is None or (isinstance(data, dict) and _plain_tree(data)) else None


def _plain_tree(node: Any) -> bool:
    """Data OmegaConf.create takes as it is: text keys (none interpolating), and text, numbers, booleans
    and nulls, an interpolation's text only when OmegaConf's grammar reads it (it parses each one)."""
    if isinstance(node, dict):
        return all(isinstance(k, str) and "${" not in k and _plain_tree(v) for k, v in node.items())
    if isinstance(node, list):
        return all(_plain_tree(v) for v in node)
    if isinstance(node, str) and "${" in node:
        try:
            _utils.get_value_kind(node, strict_interpolation_validation=True)
        except Exception:  # OmegaConf refuses it: its load says how
            return False
    return node is None or isinstance(node, str | int | float)  # bool is an int


def apply_override(override: Override, cfg: DictConfig) -> None:
    """Apply one parsed override to a composed config exactly as Hydra does (`+`, `++`, `~`, …)."""
    ConfigLoaderImpl._apply_overrides_to_config([override], cfg)


def load_config_file(loader: ConfigLoaderImpl, config_path: str) -> Any:
    """A config file by its Hydra path ("model/qwen3_8b") on the loader's search path, or None."""
    return loader.repository.load_config(config_path)


def group_options(loader: ConfigLoaderImpl, group: str) -> list[str]:
    """Options of a config group across the search path."""
    return sorted(loader.repository.get_group_options(group, results_filter=ObjectType.CONFIG))


def config_groups(loader: ConfigLoaderImpl) -> list[str]:
    """Top-level config groups across the search path."""
    return sorted(loader.repository.get_group_options("", results_filter=ObjectType.GROUP))


def group_exists(loader: ConfigLoaderImpl, group: str) -> bool:
    return bool(loader.repository.group_exists(group))


def split_sweep(overrides: list[Override]) -> list[list[str]]:
    """The points of a sweep: the cartesian product of its swept overrides, in Hydra's order."""
    # lazy: Hydra's sweeper, only to expand a sweep
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    (batch,) = BasicSweeper.split_arguments(overrides, max_batch_size=None)
    return [list(point) for point in batch]


def optuna_capable_hydra(task_name: str, primary_source: str, config_dirs: Sequence[str]) -> Any:
    """A Hydra instance over t3rl's search path that can run `multirun` with a sweeper plugin."""
    search_path = create_config_search_path(primary_source)
    # Before the structured-config source, which Hydra requires last (the order compose uses).
    schema = SearchPathQuery(provider="schema")
    for directory in config_dirs:
        search_path.prepend("command-line", f"file://{directory}", anchor=schema)
    return Hydra.create_main_hydra2(task_name, search_path)


@contextmanager
def launcher_override(launcher: Any) -> Iterator[None]:
    """Within the block, a sweeper's `setup` gets `launcher` (an object with Hydra's
    `launch(job_overrides, initial_job_idx) -> list[JobReturn]`) instead of `hydra.launcher`'s: Hydra
    only instantiates launchers from the `hydra_plugins` package, and t3rl's runs its trials as
    t3rl points (each batch at once)."""
    plugins = Plugins.instance()
    plugins.instantiate_launcher = lambda **_: launcher  # type: ignore[method-assign]
    try:
        yield
    finally:
        del plugins.instantiate_launcher


@contextmanager
def libyaml_parsing() -> Iterator[None]:
    """Within the block, `OmegaConf.load` parses with libyaml's C parser: several times faster than
    the pure-Python one, a good part of a composition's time. OmegaConf's own loader class still
    constructs the values (its float resolver, no timestamps, the duplicate-key check). A file libyaml
    rejects is parsed again by OmegaConf's pure-Python loader, so every YAML error (its wording, file,
    line and column) is exactly the one reported without this. Without libyaml, nothing changes."""
    # Nested (a composition made while diagnosing another one's overrides): already in place.
    if not getattr(yaml, "__with_libyaml__", False) or getattr(_utils.get_yaml_loader, "libyaml", False):
        yield
        return
    python_loader = _utils.get_yaml_loader

    def libyaml_loader() -> type:
        return _with_libyaml(python_loader())

    libyaml_loader.libyaml = True  # type: ignore[attr-defined]
    _utils.get_yaml_loader = libyaml_loader
    try:
        yield
    finally:
        _utils.get_yaml_loader = python_loader


def _with_libyaml(python_loader: type) -> type:
    """`python_loader` (a yaml.SafeLoader subclass) parsing with libyaml, see `libyaml_parsing`."""

    class LibyamlLoader(CParser, python_loader):  # type: ignore[misc, valid-type]
        def __init__(self, stream: str | bytes | IO[Any]) -> None:
            self._stream = stream
            self._start = stream.tell() if hasattr(stream, "tell") else None
            CParser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

        def get_single_data(self) -> Any:
            try:
                return super().get_single_data()
            except yaml.YAMLError:
                if not isinstance(self._stream, str | bytes):
                    if self._start is None:
                        raise
                    self._stream.seek(self._start)
                return yaml.load(self._stream, Loader=python_loader)

    return LibyamlLoader
