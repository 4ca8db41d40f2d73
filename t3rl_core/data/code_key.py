"""What a plugin's code is, for cache keys: its package's source and the distribution that installed it.

Prepared data is shared by content key (`t3rl_core.data.content_key`); an env plugin's `prepare()` is
part of that content, so editing the plugin, or installing another version of it, must name new data.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from t3rl_core.plugins import used_plugins


def plugin_code(config: BaseModel) -> dict[str, dict[str, Any]]:
    """For each plugin `config` names (at any depth), by import path: the sha256 of its top-level
    package's Python sources and the "name version" of the distribution providing it (None when it is
    a source tree on the path). Empty for a config of built-ins only."""
    code = {}
    for used in used_plugins(config):
        source = _source_digest(_package(used.module))
        code[used.target] = {"source": source, "distribution": _distribution(used.module)}
    return code


def _package(module: str) -> Path:
    """The directory of `module`'s top-level package (a single-file module: the file)."""
    spec = importlib.util.find_spec(module.split(".")[0])
    if spec is None:
        raise ValueError(f"plugin module '{module}' is not importable here")
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    if spec.origin is None:
        raise ValueError(f"plugin module '{module}' has no source file")
    return Path(spec.origin)


def _source_digest(root: Path) -> str:
    digest = hashlib.sha256()
    files = sorted(root.rglob("*.py")) if root.is_dir() else [root]
    for path in files:
        digest.update(str(path.relative_to(root) if root.is_dir() else path.name).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _distribution(module: str) -> str | None:
    names = _installed().get(module.split(".")[0])
    if not names:
        return None
    # lazy: importlib.metadata (with the email, csv and zipfile modules it loads), only for a plugin's key
    from importlib.metadata import distribution

    found = distribution(names[0])
    return f"{found.metadata['Name']} {found.version}"


@cache
def _installed() -> Mapping[str, list[str]]:
    """Top-level module → distributions providing it: a scan of every installed distribution (~1 s),
    once per process and only for configs naming a plugin (a plan keys each data stage twice)."""
    # lazy: importlib.metadata (with the email, csv and zipfile modules it loads), only for a plugin's key
    from importlib.metadata import packages_distributions

    return packages_distributions()
