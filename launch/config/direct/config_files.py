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
_HEADER_LINE = re.compile(r"#\s*@")
# Hydra reads the header from a file's first 512 characters.
_HEADER_CHARACTERS = 512


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

    def _read(self, config_path: str) -> Loaded | None:
        for source_path, root in self._sources:
            # Opened by its joined path: the kernel resolves links as realpath would, without a stat per part.
            file = os.path.join(root, f"{config_path}.yaml")
            if os.path.isfile(file):
                try:
                    with open(file, encoding="utf-8") as f:
                        text = f.read()
                except UnicodeDecodeError as error:
                    raise ConfigError([not_text_problem(file, error)]) from None
                return _parse(source_path, text, file)
        return None


def _parse(source_path: str, text: str, file: str = "") -> Loaded:
    """`file`: the file's path, named in a problem (else its search-path entry)."""
    try:
        data = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError:
        raise Unsupported("not valid YAML") from None
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
    if listed and not isinstance(defaults, list):
        raise Unsupported("a defaults list that is not a list")
    _check(data)
    return Loaded(source_path, _package_header(text), boxed(data), defaults)


def _check(value: Any) -> None:
    """Only the values OmegaConf keeps as they are: no MISSING, no key it would read otherwise."""
    if isinstance(value, dict):
        for key, child in value.items():
            if not isinstance(key, str) or not _KEY.fullmatch(key):
                raise Unsupported(f"a key the direct composition does not handle: {key!r}")
            _check(child)
    elif isinstance(value, list):
        for child in value:
            _check(child)
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
