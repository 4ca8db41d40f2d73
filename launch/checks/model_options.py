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
from typing import Any, NamedTuple

import yaml
from pydantic import ValidationError

from launch.config.model_size import param_counts
from launch.config.schema import MegatronArch
from launch.config.search_path import PACKAGE, package_dir
from t3rl_core.yaml_text import safe_load

# _SIZE is a string, compiled by `re` (and cached) when first used, not on import: a cold `t3rl validate
# +experiment=stage2_bfcl` never uses it.
# A name segment that gives the model's size (4B, 0.5B, 235B, 1.5m), where a model line's name ends.
_SIZE = r"^\d+(\.\d+)?[bm]$"


class ModelOption(NamedTuple):
    """One `model/<name>.yaml` file."""

    name: str
    hf_id: str | None
    family: str | None
    context_length: int | None
    # The `architecture` mapping as written (validated only where it is compared).
    architecture: dict[str, Any]
    # Built offline by t3rl (random weights), never downloaded.
    synthetic: bool = False


def model_options(config_dirs: tuple[str, ...] = ()) -> dict[str, ModelOption]:
    """Option name → its declaration; a user's config dir replaces a shipped option of the same name."""
    package = package_dir(PACKAGE)
    roots = (*([str(package)] if package is not None else []), *config_dirs)
    options: dict[str, ModelOption] = {}
    for root in roots:
        options.update(_options_in(str(Path(root, "model"))))
    return options


@functools.lru_cache(maxsize=8)
def _options_in(folder: str) -> dict[str, ModelOption]:
    found = {}
    for path in sorted(Path(folder).glob("*.yaml")):
        try:
            data = safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError):
            continue
        if not isinstance(data, dict):
            continue
        context = data.get("context_length")
        arch = data.get("architecture")
        found[path.stem] = ModelOption(
            path.stem,
            _text(data.get("hf_id")),
            _text(data.get("family")),
            context if isinstance(context, int) and not isinstance(context, bool) else None,
            arch if isinstance(arch, dict) else {},
            data.get("synthetic") is True,
        )
    return found


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
