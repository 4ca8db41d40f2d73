"""Config files on t3rl's search path, read as Hydra reads them: YAML with OmegaConf's rules (floats
written with an exponent, no timestamps, no duplicated keys), the `# @package` header, the defaults list
taken out of the content. One `Repository` per composition: a file is read once and its content shared
by every use, as Hydra's caching repository does."""

from __future__ import annotations

import os
import re
from typing import Any

import yaml

from launch.config.direct.nodes import boxed
from launch.config.direct.unsupported import Unsupported
from launch.config.errors import ConfigError, Problem, not_text_problem
from t3rl_core.records import Record

_STR = "tag:yaml.org,2002:str"
_FLOAT = "tag:yaml.org,2002:float"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
# Floats YAML 1.1 reads as strings and OmegaConf as floats: an exponent without a sign or a point.
_EXPONENT_FLOAT = re.compile(r"[-+]?[0-9]+(\.[0-9]*)?[eE][-+]?[0-9]+")
_NUMBER_START = tuple("-+.0123456789")
# Keys the direct composition handles (provenance and overrides read dotted keys).
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_DOTTED_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*")
_HEADER_LINE = re.compile(r"#\s*@")
# How deep a file may nest: a few thousand levels ended in Python's RecursionError, a traceback, in every
# reader of a config (this module, OmegaConf, the schema); t3rl's own configs nest under ten.
_MAX_DEPTH = 100
# Hydra reads the header from a file's first 512 characters.
_HEADER_CHARACTERS = 512
# Parsed files by (search-path entry, path, text): every composition reads its ~11 files again (a
# search's trials, a sweep's points and a test suite compose hundreds of command lines in one process),
# and parsing them was a third of a direct composition. Keyed by the text itself, so a file changed
# in place is parsed again whatever its status says; bounded, oldest first out.
_PARSED: dict[tuple[str, str, str], tuple[str | None, dict[str, Any], list[Any] | None]] = {}
_MOST_PARSED = 256


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """libyaml's parser (when installed) with the scalar types OmegaConf's loader gives."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        tag = super().resolve(kind, value, implicit)
        if kind is not yaml.ScalarNode or not implicit[0] or tag not in (_STR, _TIMESTAMP):
            return tag
        if tag == _TIMESTAMP:
            return _STR
        if _EXPONENT_FLOAT.fullmatch(value):
            return _FLOAT
        if value.startswith(_NUMBER_START) and "_" in value and "e" in value.lower():
            raise Unsupported(f"a number YAML and OmegaConf may read differently: {value}")
        return tag

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        keys = [key.value for key, _ in node.value]
        if len(set(keys)) != len(keys):
            raise Unsupported("a duplicated key")
        return super().construct_mapping(node, deep=deep)


class Loaded(Record):
    """One config file: where it was found, its `# @package` header, content and defaults list."""

    # The search-path entry it was found in ("pkg://t3rl_conf", "file:///abs/dir").
    source_path: str
    package_header: str | None
    # Boxed (`launch.config.direct.nodes`), shared by every use of the file in one composition.
    content: dict[str, Any]
    defaults: list[Any] | None


class Repository:
    """The config files of a search path: (entry as Hydra names it, its directory), first wins."""

    def __init__(self, sources: list[tuple[str, str]]) -> None:
        self._sources = sources
        self._loaded: dict[str, Loaded | None] = {}

    def group_exists(self, group: str) -> bool:
        return any(os.path.isdir(os.path.join(root, group)) for _, root in self._sources)

    def load(self, config_path: str) -> Loaded | None:
        """The file "group/option" stands for, or None when no entry has it."""
        if config_path not in self._loaded:
            self._loaded[config_path] = self._read(config_path)
        return self._loaded[config_path]

    def shipped_headers(self, group: str) -> set[str | None]:
        """The `# @package` headers of the options of `group` in the search path's first entry (t3rl's
        own conf/)."""
        _, root = self._sources[0]
        directory = os.path.join(root, group)
        names = (
            sorted(n for n in os.listdir(directory) if n.endswith(".yaml"))
            if os.path.isdir(directory)
            else []
        )
        headers: set[str | None] = set()
        for name in names:
            with open(os.path.join(directory, name), encoding="utf-8") as f:
                headers.add(_package_header(f.read()))
        return headers

    def shipped(self, loaded: Loaded) -> bool:
        return loaded.source_path == self._sources[0][0]

    def groups(self) -> list[str]:
        """The top-level directories of the whole search path, sorted, as Hydra lists its groups."""
        found: set[str] = set()
        for _, root in self._sources:
            found.update(
                n for n in os.listdir(root) if n != "__pycache__" and os.path.isdir(os.path.join(root, n))
            )
        return sorted(found)

    def directories(self, group: str) -> list[str]:
        """The directories of `group` on the search path, in its order."""
        return [d for _, root in self._sources if os.path.isdir(d := os.path.join(root, group))]

    def options(self, group: str) -> list[str]:
        """The options of `group` on the whole search path, sorted."""
        found: set[str] = set()
        for _, root in self._sources:
            directory = os.path.join(root, group)
            if os.path.isdir(directory):
                found.update(n[: -len(".yaml")] for n in os.listdir(directory) if n.endswith(".yaml"))
        return sorted(found)

    def path(self, config_path: str) -> str | None:
        """The file "group/option" stands for (the first on the search path), or None."""
        for _, root in self._sources:
            # Opened by its joined path: the kernel resolves links as realpath would, without a stat per part.
            file = os.path.join(root, f"{config_path}.yaml")
            if os.path.isfile(file):
                return file
        return None

    def _read(self, config_path: str) -> Loaded | None:
        for source_path, root in self._sources:
            file = os.path.join(root, f"{config_path}.yaml")
            if os.path.isfile(file):
                try:
                    with open(file, encoding="utf-8") as f:
                        text = f.read()
                except UnicodeDecodeError as error:
                    raise ConfigError([not_text_problem(file, error)]) from None
                return _parse(source_path, text, file)
        self._refuse_not_a_file(config_path)
        return None

    def _refuse_not_a_file(self, config_path: str) -> None:
        """No file has the name, but the name is there: a directory named `x.yaml`, or a link to nothing.
        Hydra skips it and says "unknown option", naming no path; it is the option the user meant."""
        for _, root in self._sources:
            file = os.path.join(root, f"{config_path}.yaml")
            if os.path.lexists(file):
                raise ConfigError([not_a_file_problem(file)])


def not_a_file_problem(file: str) -> Problem:
    if os.path.islink(file):
        what = f"a link to {os.readlink(file)}, which does not exist"
        fix = f"point it at the option's YAML file: ln -sfn <that file> {file}"
    else:
        what = "a directory, not a file"
        fix = f"put the option's `key: value` lines in a file at {file} (move the directory away first)"
    return Problem(key=file, message=f"{file} is {what}: config options are YAML files", source=file, fix=fix)


def _parse(source_path: str, text: str, file: str = "") -> Loaded:
    """`file`: the file's path, named in a problem (else its search-path entry). Each use gets its own
    boxes (a composition sets values in place); the defaults list is only read, and shared."""
    key = (source_path, file, text)
    known = _PARSED.get(key)
    if known is None:
        known = _parsed(source_path, text, file)
        if len(_PARSED) >= _MOST_PARSED:
            del _PARSED[next(iter(_PARSED))]
        _PARSED[key] = known
    header, data, defaults = known
    return Loaded(source_path, header, boxed(data), defaults)


def _parsed(source_path: str, text: str, file: str) -> tuple[str | None, dict[str, Any], list[Any] | None]:
    """The file's `# @package` header, content and defaults list; a problem or Unsupported raised."""
    try:
        data = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError:
        raise Unsupported("not valid YAML") from None
    except RecursionError:  # PyYAML's own constructor (without libyaml) recurses per level
        raise _too_deep(file or source_path, text, None) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):  # Hydra merges a list into the group's node and fails far from here
        kind = "a list" if isinstance(data, list) else f"a single {type(data).__name__}"
        problem = Problem(
            key=file or source_path,
            message=f"{kind} where a config file holds a mapping of keys",
            source=file or source_path,
            fix="write it as `key: value` lines (a list goes under a key)",
        )
        raise ConfigError([problem])
    listed = "defaults" in data
    defaults = data.pop("defaults", None)
    if listed and not isinstance(defaults, list):  # Hydra refuses it too, naming no file
        from launch.config.direct.defaults_problems import not_a_list  # lazy: only to explain a mistake

        raise not_a_list(file or source_path, text)
    header = _package_header(text)
    # Hydra's own node, at the root of a global file (a search's), names config keys in its sweeper's
    # params (`stages.train.curriculum.optimizer.lr: …`); it never reaches the config.
    hydra = data.get("hydra") if header == "_global_" else None
    try:
        if isinstance(hydra, dict):
            _check({k: v for k, v in data.items() if k != "hydra"})
            _check(hydra, depth=1, dotted=True)
        else:
            _check(data)
    except _Deep:  # every reader of a config (this one, OmegaConf, the schema) recurses per level
        raise _too_deep(file or source_path, text, data) from None
    return header, data, defaults


class _Deep(Exception):
    """A value nested deeper than _MAX_DEPTH."""


def _too_deep(file: str, text: str, data: Any) -> ConfigError:
    from launch.config.direct.depth import too_deep, too_deep_problem  # lazy: only to explain a mistake

    path = (too_deep(data, _MAX_DEPTH) or []) if data is not None else []
    return ConfigError([too_deep_problem(file, text, path, _MAX_DEPTH)])


def _check(value: Any, depth: int = 0, dotted: bool = False) -> None:
    """Only the values OmegaConf keeps as they are: no MISSING, no key it would read otherwise (but
    `dotted` names, where keys name config keys), no nesting deeper than `_MAX_DEPTH`."""
    if isinstance(value, dict | list):
        if depth > _MAX_DEPTH:
            raise _Deep
        key_pattern = _DOTTED_KEY if dotted else _KEY
        for key, child in value.items() if isinstance(value, dict) else ():
            if not isinstance(key, str) or not key_pattern.fullmatch(key):
                raise Unsupported(f"a key the direct composition does not handle: {key!r}")
            _check(child, depth + 1, dotted)
        for child in value if isinstance(value, list) else ():
            _check(child, depth + 1, dotted)
    elif value == "???":
        raise Unsupported("a mandatory value (???)")
    elif value is not None and not isinstance(value, str | int | float):
        raise Unsupported(f"a {type(value).__name__} value")


def _package_header(text: str) -> str | None:
    """The value of `# @package X` among the header lines (the comment lines before the content)."""
    found: dict[str, str] = {}
    for raw in text[:_HEADER_CHARACTERS].splitlines():
        line = raw.strip()
        if not line:
            continue
        if not _HEADER_LINE.match(line):
            break
        words = [w for w in line.lstrip("#").strip().split(" ") if w]
        if len(words) != 2:
            raise Unsupported(f"a header line Hydra refuses: {line}")
        key, value = words[0].strip(), words[1].strip()
        if key.startswith("@"):
            found[key[1:]] = value
    return found.get("package")
