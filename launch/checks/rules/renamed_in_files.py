"""A config file that chooses a group's option and renames the section it brings.

`model.name=glm4_9b` typed on the command line over another model is refused (launch.checks.identity_keys:
the key names the section, the group option is the section). A file writing the same key was not judged:
an experiment of one's own with `- override /model: qwen3_8b` in its defaults and `model: {name: glm4_9b}`
below validated, and planned a Qwen3-8B run recorded, compared and listed as glm4_9b. The name key of a
group's section is declared by the option file that brings the section; another file that writes it the
name of another option of that group renames the section only, and is refused with the choice to make in
its defaults list.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePath

from launch.checks.context import Context
from launch.config.errors import Problem

# The key of a group's section that names its option.
NAME = "name"


def _option_file(source: str, group: str) -> str | None:
    """The option `source` is, when it is a file of `group` (`conf/model/qwen3_8b.yaml`: qwen3_8b)."""
    path = PurePath(source)
    return path.stem if path.suffix == ".yaml" and path.parent.name == group else None


def renamed_by_a_file(ctx: Context) -> Iterator[Problem]:
    for group, section in ctx.data.items():
        if not isinstance(section, dict) or not isinstance(section.get(NAME), str):
            continue
        key = f"{group}.{NAME}"
        origin = ctx.provenance.origin(key)
        if origin is None or origin.source.startswith("override") or _option_file(origin.source, group):
            continue  # typed (identity_keys judges it), or the option naming itself
        # the option file that brought the rest of the section
        brought = {
            o.source
            for k, o in ctx.provenance.items()
            if k.startswith(f"{group}.") and _option_file(o.source, group)
        }
        chosen = sorted(_option_file(s, group) or "" for s in brought)
        value = section[NAME]
        if len(chosen) != 1 or chosen[0] == value:
            continue
        from launch.config.direct.search_files import group_options  # lazy: only a file that renames

        if value not in (group_options(group, ctx.config_dirs) or []):
            continue  # a name of one's own for the section (`my_qwen`): no other option's
        yield Problem(
            key,
            f"{origin.source} sets {key}: {value}, but the {group} section is {chosen[0]}'s (brought by "
            f"{next(iter(brought))}): the name renames it only, and the run would be recorded as {value} "
            f"with {chosen[0]}'s settings",
            origin.describe(),
            f"in {origin.source}, delete `{NAME}: {value}` under {group}, and choose the option in its "
            f"defaults list: `- override /{group}: {value}` (on the command line: {group}={value})",
        )


RULES = (renamed_by_a_file,)
