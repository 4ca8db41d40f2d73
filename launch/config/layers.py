"""What a composition is made of, as provenance reads it: the config files of the defaults list, each
placed at its package, and the command-line overrides of config keys. Free of Hydra and OmegaConf:
both compositions (`launch.config.compose` with Hydra, `launch.config.direct` without) build these."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from t3rl_core.records import Record


class Layer(Record):
    """One config file of the defaults list, as merged into the run config."""

    # Hydra's name for it: "config", "model/qwen3_8b", "curriculum/bfcl_stage1".
    config_path: str
    # Where it lives, for people: a path relative to the working directory when possible.
    source: str
    # Dotted key its content lands under ("" = root).
    package: str
    # Its content, already placed at `package` (so its leaves carry full dotted keys): an OmegaConf
    # DictConfig or plain dicts and lists. Nodes first merged from it are shared with the composed
    # config, so it shows what later files and overrides set in them (as Hydra's merge does).
    content: Any
    # Why this option was chosen: "" (the default), an override, or the file whose defaults list chose it.
    chosen_by: str
    # An experiment file's own leaves (dotted key → value) as written, before later files merge into
    # the nodes it shares with them; empty for other files.
    written: Mapping[str, Any] = {}


class AppliedOverride(Record):
    """A command-line override of a config key (not of a group), in application order."""

    text: str
    key: str
    value: Any
    delete: bool


def leaves(plain: Any) -> dict[str, Any]:
    """Dotted key → value of every leaf of plain nested dicts (lists are values, empty dicts vanish)."""
    found: dict[str, Any] = {}

    def walk(value: Any, prefix: str) -> None:
        if isinstance(value, dict):
            for key, child in value.items():
                walk(child, f"{prefix}.{key}" if prefix else str(key))
        elif prefix:
            found[prefix] = value

    walk(plain, "")
    return found
