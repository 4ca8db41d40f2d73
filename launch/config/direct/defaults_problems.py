"""A config file's defaults list that Hydra refuses or never finishes composing, said at the file and line.

Hydra's words for these named no file ("Duplicate _self_ defined in model/mine", "Unsupported type in
defaults : int", blamed on "the defaults list"), or were none at all: two files whose defaults lists name
each other recursed until Python's RecursionError, a traceback. The declaration is the list itself: an
item is a name or a one-key mapping, `_self_` is listed at most once, and no file is reached again from
its own list. Each refusal names the file, the line of the item and a fix that deletes that line.
"""

from __future__ import annotations

import re
import shlex

from launch.config.errors import ConfigError, Problem, did_you_mean

SELF = "_self_"


def _item_lines(file: str, item: str) -> list[int]:
    """The 1-based lines of `file` that list `item` as a defaults-list item (`- item`, `- group: item`)."""
    try:
        with open(file, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    word = re.escape(item)
    pattern = re.compile(rf"^\s*-\s*(?:[^:#]*:\s*)?['\"]?{word}['\"]?\s*(#.*)?$")
    return [n for n, line in enumerate(lines, 1) if pattern.match(line)]


def _delete_line(file: str, line: int | None) -> str:
    if line is None:
        return f"delete that item from the defaults list of {file}"
    return f"delete line {line}: sed -i '{line}d' {shlex.quote(file)}"


def self_twice(file: str) -> ConfigError:
    lines = _item_lines(file, SELF)
    second = lines[1] if len(lines) > 1 else None
    where = f"{file}:{second}" if second else file
    return ConfigError(
        [
            Problem(
                key="defaults",
                message=f"{where}: `{SELF}` is listed twice in its defaults list (it may be listed once)",
                source=file,
                fix=_delete_line(file, second),
            )
        ]
    )


def wrong_item(file: str, item: object) -> ConfigError:
    text = str(item)
    lines = _item_lines(file, text) if not isinstance(item, dict | list) else []
    line = lines[0] if lines else None
    where = f"{file}:{line}" if line else file
    kind = type(item).__name__
    return ConfigError(
        [
            Problem(
                key="defaults",
                message=(
                    f"{where}: the defaults-list item {item!r} is of type {kind}; an item is an option's "
                    "name (`- name`) or one group and its option (`- group: option`)"
                ),
                source=file,
                fix=_delete_line(file, line),
            )
        ]
    )


def cycle(files: list[str], names: list[str]) -> ConfigError:
    """`files[i]` lists `names[i]`, which is `files[i + 1]`; the last lists the first again."""
    last, name = files[-1], names[-1]
    lines = _item_lines(last, name)
    line = lines[0] if lines else None
    where = f"{last}:{line}" if line else last
    chain = " → ".join([*files, files[0]])
    return ConfigError(
        [
            Problem(
                key="defaults",
                message=(
                    f"{where}: its defaults list names '{name}', which lists it again ({chain}): "
                    "composing them would never end"
                ),
                source=last,
                fix=_delete_line(last, line),
            )
        ]
    )


def missing(file: str, name: str, group: str, options: list[str]) -> ConfigError:
    """`file`'s defaults list names `name`, which no config dir has in `group`."""
    lines = _item_lines(file, name)
    line = lines[0] if lines else None
    where = f"{file}:{line}" if line else file
    guess = did_you_mean(name, options)
    in_group = f"config group '{group}'" if group else "the config dirs' top level"
    message = (
        f"{where}: its defaults list names '{name}', which is not an option of {in_group} "
        f"(its options: {', '.join(options) or 'none'})"
    )
    if guess:
        fix = (
            f"name '{guess}' instead: sed -i '{line}s/{name}/{guess}/' {shlex.quote(file)}" if line else guess
        )
    else:
        fix = _delete_line(file, line)
    return ConfigError([Problem(key="defaults", message=message, source=file, fix=fix)])


def not_a_list(file: str, text: str) -> ConfigError:
    """`defaults:` holding no list (nothing under it, a name, a mapping): Hydra refuses it naming
    `group/option`, blamed on "the defaults list"."""
    lines = [n for n, line in enumerate(text.splitlines(), 1) if re.match(r"^defaults\s*:", line)]
    line = lines[0] if lines else None
    where = f"{file}:{line}" if line else file
    return ConfigError(
        [
            Problem(
                key="defaults",
                message=(
                    f"{where}: `defaults:` holds no list (each item is a `- name` line under it; "
                    "with none, the line is not needed)"
                ),
                source=file,
                fix=_delete_line(file, line),
            )
        ]
    )


def other_header(file: str, group: str, header: str | None, shipped: str | None) -> ConfigError:
    """`file`, an option of `group`, says `# @package header` where t3rl's own options say `shipped`
    (None: no header, the group's own package)."""
    try:
        with open(file, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    found = [n for n, line in enumerate(lines, 1) if re.match(r"^\s*#\s*@package\b", line)]
    line = found[0] if found else None
    where = f"{file}:{line}" if line else file
    put = f"`# @package {header}` puts its keys at {'the root' if header == '_global_' else repr(header)}"
    if header is None:
        put = f"it has no `# @package` line, so its keys land under '{group.replace('/', '.')}'"
    expected = (
        f"`# @package {shipped}`" if shipped else "no `# @package` line (their keys land under the group)"
    )
    message = f"{where}: {put}; t3rl's own options of group '{group}' have {expected}"
    quoted = shlex.quote(file)
    if shipped is None:
        fix = f"delete line {line}: sed -i '{line}d' {quoted}"
    elif line is None:
        fix = f"make `# @package {shipped}` its first line: sed -i '1i # @package {shipped}' {quoted}"
    else:
        fix = f"say `# @package {shipped}`: sed -i '{line}s/.*/# @package {shipped}/' {quoted}"
    return ConfigError([Problem(key=group.replace("/", "."), message=message, source=file, fix=fix)])
