"""A config group's option chosen by the key that names it: `model.name=qwen3_8b`, `hardware.name=h100x8`,
`executor.kind=ray`, `env.name=tau2_retail`.

The key names the section; the group option is the section. Such an override renamed the model while its
hf_id, architecture and context stayed the other model's (validated, and planned as a Qwen3-4B run named
qwen3_8b), or switched the executor's kind under the local executor's keys (refused as unknown keys with
no word of `executor=ray`). When the value is an option of the group, the section that option brings is
composed and compared: if it differs from the renamed one, the override is refused with the group choice
as its fix; if it is the same, the override did what the choice does and stands.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from launch.config import schema
from launch.config.errors import ConfigError, Problem
from launch.config.fixes import value_at

# The keys that name a section (a registry entry, an executor's or tracker's kind), typed as a command
# line override; a string compiled by `re` when first used: a cold command never has such an override.
_IDENTITY = r"^(?P<section>[a-z_][\w.]*)\.(?P<field>name|kind)=(?P<value>[\w.-]+)$"
_STAGE_KIND = r"^stages\.(?P<name>[\w-]+)\.kind=(?P<kind>\w+)$"
# Keys of the difference named in the message; the rest is counted.
_NAMED = 4


def identity_key_problems(
    overrides: Sequence[str], config_dirs: Sequence[str], data: Mapping[str, Any]
) -> list[Problem]:
    """One problem per override `SECTION.name|kind=OPTION` whose section in `data` (the config composed
    with `overrides`) differs from the one OPTION brings; SECTION is where the group is mounted: its name
    (`model`), its options' `# @package` (`env.user`, user_sim's), or the package the defaults list
    gives it (`stages.train.curriculum`, an experiment's `curriculum@…`)."""
    found = [(override, m) for override in overrides if (m := re.match(_IDENTITY, override))]
    if not found:
        return []
    from launch.config.resolved import composed_plain  # lazy: Hydra's config loader, only for such overrides

    problems = []
    for override, match in found:
        section, value = match["section"], match["value"]
        others = [o for o in overrides if o != override]
        mounted = _mounted_at(section, value, others, config_dirs)
        if mounted is None:
            continue
        group, choice = mounted
        before = value_at(composed_plain(others, config_dirs).data, section)
        if isinstance(before, Mapping) and before.get(match["field"]) == value:
            continue  # the name it already had (retool's env.name=retool_python): it renames nothing
        meant = value_at(composed_plain([*others, choice], config_dirs).data, section)
        differing = sorted(_differing(value_at(data, section), meant, ""))
        if not differing:
            continue
        more = f" and {len(differing) - _NAMED} more" if differing[_NAMED:] else ""
        named = ", ".join(differing[:_NAMED]) + more
        problems.append(
            Problem(
                f"{section}.{match['field']}",
                f"`{override}` renames the {section} section only: {named} keep the values of the option "
                f"composed before, not {value}'s",
                f"override `{override}`",
                f"{choice} instead of `{override}` (the {group} group's option: its whole section)",
            )
        )
    return problems


def _mounted_at(
    section: str, option: str, others: Sequence[str], config_dirs: Sequence[str]
) -> tuple[str, str] | None:
    """(group, the override choosing `option` at `section`) of the group whose options are mounted at
    `section` and have `option` among them; None when no group is."""
    from launch.config import compose  # lazy: Hydra's config loader, only for such overrides

    if "." not in section:
        return (
            (section, f"{section}={option}")
            if option in compose.group_options(section, config_dirs)
            else None
        )
    for group in compose.groups(config_dirs):  # a `# @package` its options declare (user_sim: env.user)
        if option in compose.group_options(group, config_dirs) and (
            compose.option_package(f"{group}/{option}", config_dirs) == section
        ):
            return group, f"{group}={option}"
    try:  # the package a defaults list gives the group's entry (`curriculum@stages.train.curriculum`)
        choices = compose.compose(others, config_dirs).choices
    except ConfigError:
        return None
    for entry in choices:
        group, _, package = entry.partition("@")
        if package == section and option in compose.group_options(group, config_dirs):
            return group, f"{entry}={option}"
    return None


def _differing(typed: Any, meant: Any, prefix: str) -> Iterator[str]:
    """Dotted keys whose values differ between two sections (the naming key aside)."""
    if isinstance(typed, Mapping) and isinstance(meant, Mapping):
        for key in typed.keys() | meant.keys():
            if not prefix and key in ("name", "kind"):
                continue
            yield from _differing(typed.get(key), meant.get(key), f"{prefix}.{key}" if prefix else str(key))
    elif typed != meant:
        yield prefix


def stage_kind_problems(
    overrides: Sequence[str], problems: Sequence[Problem], data: Mapping[str, Any]
) -> list[Problem]:
    """One problem per `stages.NAME.kind=KIND` override whose stage keeps keys only its old kind has: the
    schema's "unknown key" for each of them told nothing of the override that made them unknown."""
    found = []
    for override in overrides:
        match = re.match(_STAGE_KIND, override)
        if match is None:
            continue
        name, kind = match["name"], match["kind"]
        fields = _stage_fields(kind)
        stage = (data.get("stages") or {}).get(name)
        if fields is None or not isinstance(stage, Mapping):
            continue
        kept = sorted(key for key in stage if key not in fields)
        if not kept or not any(p.key.startswith(f"stages.{name}.") for p in problems):
            continue
        a_kind = f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} stage"
        found.append(
            Problem(
                f"stages.{name}.kind",
                f"`{override}` makes '{name}' {a_kind}, but it keeps keys {a_kind} does not have: "
                f"{', '.join(kept)} ({a_kind} has {', '.join(sorted(fields))})",
                f"override `{override}`",
                f"{a_kind} is added under a name of its own: +stages.<name>={{kind: {kind}, …}} "
                "(its fields: t3rl show --explain stages)",
            )
        )
    return found


def _stage_fields(kind: str) -> set[str] | None:
    """The fields of the stage model whose `kind` is `kind`, or None for no such kind."""
    for model in vars(schema).values():
        if isinstance(model, type) and issubclass(model, BaseModel) and model.__name__.endswith("Stage"):
            field = model.model_fields.get("kind")
            if field is not None and field.default == kind:
                return set(model.model_fields)
    return None
