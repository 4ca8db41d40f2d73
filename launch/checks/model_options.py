"""The `model/` options on the config search path, as each declares itself: its hub id, chat family,
context length and architecture. Pre-flight reads them to know a model by its hub id without
downloading anything: the family a hub id belongs to, the context a model option declares.

A hub id is matched exactly, else by its model line: the org and the name up to its size
(`Qwen/Qwen3-32B` is of the line `qwen/qwen3`, as `Qwen/Qwen3-4B` is)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from launch.config.model_size import param_counts
from launch.config.schema import MegatronArch
from launch.config.search_path import PACKAGE, package_dir
from t3rl_core.records import Record
from t3rl_core.yaml_text import safe_load

# _SIZE is a string, compiled by `re` (and cached) when first used, not on import: a cold `t3rl validate
# +experiment=stage2_bfcl` never uses it.
# A name segment that gives the model's size (4B, 0.5B, 235B, 1.5m), where a model line's name ends.
_SIZE = r"^\d+(\.\d+)?[bm]$"


class ModelOption(Record):
    """One `model/<name>.yaml` file."""

    name: str
    hf_id: str | None
    family: str | None
    context_length: int | None
    # The `architecture` mapping as written (validated only where it is compared).
    architecture: dict[str, Any]
    # Built offline by t3rl (random weights), never downloaded.
    synthetic: bool = False
    # Writes a reasoning block before its answers by itself (None: not declared).
    thinks: bool | None = None


def model_options(config_dirs: tuple[str, ...] = ()) -> dict[str, ModelOption]:
    """Option name → its declaration; a user's config dir replaces a shipped option of the same name.
    An option built on another (`defaults: [tiny_qwen3, _self_]`) declares what it does not state
    itself as its base does (a plugin's model on tiny_qwen3 is synthetic, with its architecture)."""
    files = _every_file(config_dirs)
    return {name: _option(name, _merged(name, files.get, ())) for name in files}


def model_option(name: str, config_dirs: tuple[str, ...] = ()) -> ModelOption | None:
    """`model_options(config_dirs).get(name)`, read from that option's file and its bases' alone: the
    run's own option is what most rules compare with, and reading all nine shipped ones took ~20 M
    instructions of a cold validate."""
    roots = _roots(config_dirs)

    def file_of(option: str) -> dict[str, Any] | None:
        if "/" in option or option.startswith(".") or Path(f"{option}.yaml").stem != option:
            return _every_file(config_dirs).get(option)  # the listing by stem decides an odd name
        found = (_file(str(Path(root, "model", f"{option}.yaml"))) for root in reversed(roots))
        return next((data for data in found if data is not None), None)

    return None if file_of(name) is None else _option(name, _merged(name, file_of, ()))


def _roots(config_dirs: tuple[str, ...]) -> tuple[str, ...]:
    package = package_dir(PACKAGE)
    return (*([str(package)] if package is not None else []), *config_dirs)


def _every_file(config_dirs: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """Option name (its file's stem) → its file's mapping, a later root's replacing an earlier one's."""
    files: dict[str, dict[str, Any]] = {}
    for root in _roots(config_dirs):
        files.update(_files_in(str(Path(root, "model"))))
    return files


@functools.lru_cache(maxsize=8)
def _files_in(folder: str) -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted(Path(folder).glob("*.yaml")):
        data = _file(str(path))
        if data is not None:
            found[path.stem] = data
    return found


@functools.lru_cache(maxsize=64)
def _file(path: str) -> dict[str, Any] | None:
    """An option file's mapping; None when it is missing, unreadable or not a mapping."""
    try:
        data = safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError):
        return None
    return data if isinstance(data, dict) else None


def _merged(
    name: str, file_of: Callable[[str], dict[str, Any] | None], seen: tuple[str, ...]
) -> dict[str, Any]:
    """The option's file over the options its defaults list names (in order, as Hydra merges them;
    `_self_` last when it is not listed), mappings merged key by key."""
    data = file_of(name) or {}
    merged: dict[str, Any] = {}
    for base in _bases(data.get("defaults")):
        if base not in seen and base != name and file_of(base) is not None:
            merged = _merge(merged, _merged(base, file_of, (*seen, name)))
    return _merge(merged, {k: v for k, v in data.items() if k != "defaults"})


def _bases(defaults: object) -> list[str]:
    """The options of the model group a defaults list names (`tiny_qwen3`, `/model/tiny_qwen3`)."""
    if not isinstance(defaults, list):
        return []
    return [
        entry.removeprefix("/").removeprefix("model/")
        for entry in defaults
        if isinstance(entry, str) and entry != "_self_"
    ]


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        below = merged.get(key)
        merged[key] = _merge(below, value) if isinstance(below, dict) and isinstance(value, dict) else value
    return merged


def _option(name: str, data: dict[str, Any]) -> ModelOption:
    context, arch = data.get("context_length"), data.get("architecture")
    return ModelOption(
        name,
        _text(data.get("hf_id")),
        _text(data.get("family")),
        context if isinstance(context, int) and not isinstance(context, bool) else None,
        arch if isinstance(arch, dict) else {},
        data.get("synthetic") is True,
        data.get("thinks") if isinstance(data.get("thinks"), bool) else None,
    )


def _text(value: object) -> str | None:
    """A plain string value (an interpolation is not a declaration)."""
    return value if isinstance(value, str) and "${" not in value else None


def model_line(hub_id: str) -> str:
    """The org and the name up to the size: `meta-llama/Llama-3.1-8B-Instruct` → `meta-llama/llama-3.1`."""
    org, _, name = hub_id.lower().partition("/")
    kept: list[str] = []
    for segment in name.split("-"):
        if re.match(_SIZE, segment) and kept:
            break
        kept.append(segment)
    return f"{org}/{'-'.join(kept)}"


def options_of(hub_id: str, options: dict[str, ModelOption]) -> list[ModelOption]:
    """The options that declare `hub_id`, else those of its model line."""
    exact = [o for o in options.values() if o.hf_id == hub_id]
    if exact:
        return exact
    line = model_line(hub_id)
    return [o for o in options.values() if o.hf_id is not None and model_line(o.hf_id) == line]


def family_of(hub_id: str, options: dict[str, ModelOption]) -> str | None:
    """The chat family the options declare for `hub_id` (None when unknown or they disagree)."""
    families = {o.family for o in options_of(hub_id, options)}
    return families.pop() if len(families) == 1 else None


def largest_option(
    config_dirs: tuple[str, ...], fits: Callable[[ModelOption, MegatronArch], bool]
) -> str | None:
    """The name of the model option with the most parameters that `fits` (given its validated
    architecture), if any; an option whose architecture does not validate is left out."""
    fitting: list[tuple[int, str]] = []
    for name, option in model_options(config_dirs).items():
        try:
            arch = MegatronArch.model_validate(option.architecture)
        except ValidationError:
            continue
        if fits(option, arch):
            fitting.append((param_counts(arch).total, name))
    return max(fitting)[1] if fitting else None
