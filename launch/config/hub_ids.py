"""A model chosen by its Hugging Face hub id, as verl, slime's scripts and the hub itself name it:
`model=Qwen/Qwen3-8B`, `t3rl check-template Qwen/Qwen3-8B`.

Hydra read the id's org as a nested group (`model/Qwen`) and t3rl answered `unknown option 'Qwen3-8B' for
config group 'model/Qwen'`, set in `config.yaml`, `fix: did you mean model/Qwen=qwen3_8b?` (which does not
compose). Each option of a group declares its hub id (`hf_id`, `launch.config.schema`): the value is read
against those declarations, and the option declaring it is the fix; an id no option declares is answered
with the ids they do declare, and how to add one's own.
"""

from __future__ import annotations

from typing import Any

from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.override_parser.types import Override

from launch.config import hydra_internals as internals
from launch.config.errors import Problem
from launch.config.override_fixes import shell_word

# The field by which an option of a group declares its hub id (ModelConfig.hf_id).
HUB_ID_FIELD = "hf_id"
# A hub id: an org and a name, one '/' between them (a local path has another shape or exists).
_PARTS = 2


def hub_id_as_option(
    parsed: list[Override], loader: ConfigLoaderImpl, written: dict[str, str]
) -> Problem | None:
    """The problem of the first override choosing a group's option by a hub id, with the option declaring
    it as the fix; None when no override does."""
    for override in parsed:
        value, group = override.value(), override.key_or_group.split("@")[0]
        if not _hub_shaped(value) or not internals.group_exists(loader, group):
            continue
        declared = _declared_ids(loader, group)
        if not declared:  # a group whose options declare no hub id: not a hub id's place
            continue
        typed = written.get(override.input_line, override.input_line)
        assign = typed.split("=", 1)[0]
        message = f"'{value}' is a Hugging Face hub id; config group '{group}' takes an option's name"
        chosen = [option for option, hub_id in declared.items() if hub_id.lower() == value.lower()]
        org, _, name = value.partition("/")
        if not chosen and (name in internals.group_options(loader, group) or org in _groups(loader)):
            continue  # `model=model/qwen3_8b`: an option under its folders, not an id (compose's own reading)
        if chosen:
            declares = f"{group}/{chosen[0]}.yaml declares {HUB_ID_FIELD}: {declared[chosen[0]]}"
            fix = f"{assign}={chosen[0]} ({declares})"
            return Problem(key=group, message=message, source=f"override `{typed}`", fix=fix)
        listed = ", ".join(f"{option} ({hub_id})" for option, hub_id in sorted(declared.items()))
        fix = (
            f"choose the option of a model family: {listed}; or write a {group}/ YAML of your own with "
            f"{HUB_ID_FIELD}: {shell_word(value)} in your --config-dir (docs/how-to/swap-model.md)"
        )
        return Problem(
            key=group, message=f"{message}, and none declares it", source=f"override `{typed}`", fix=fix
        )
    return None


def _hub_shaped(value: Any) -> bool:
    """`org/name`: two parts, neither empty nor a path's (`.`, `~`), no `.yaml`."""
    if not isinstance(value, str) or value.endswith((".yaml", ".yml")):
        return False
    parts = value.split("/")
    return len(parts) == _PARTS and all(parts) and not value.startswith((".", "~"))


def _groups(loader: ConfigLoaderImpl) -> set[str]:
    return set(internals.config_groups(loader))


def _declared_ids(loader: ConfigLoaderImpl, group: str) -> dict[str, str]:
    """Option → the hub id its file declares, for the options of `group` that declare one."""
    found = {}
    for option in internals.group_options(loader, group):
        result = internals.load_config_file(loader, f"{group}/{option}")
        config = getattr(result, "config", None)
        hub_id = config.get(HUB_ID_FIELD) if config is not None and hasattr(config, "get") else None
        if isinstance(hub_id, str) and "${" not in hub_id:
            found[option] = hub_id
    return found
