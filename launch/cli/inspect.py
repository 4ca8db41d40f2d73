"""`t3rl validate`, `t3rl show` and `t3rl ls`: look at configs without running anything.

t3rl validate [OVERRIDES…] [-m] [--config-dir DIR…]        every problem, exit 2 if any error
t3rl show [OVERRIDES…] [--explain KEY…] [--config-dir DIR…]   the resolved config, or keys with their source
t3rl ls [GROUP] [--config-dir DIR…]                         config groups and their options
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Protocol

import typer
import yaml
from rich.markup import escape

from launch.checks.resolve import resolve
from launch.cli import completion
from launch.cli.sweep_options import MaxPoints
from launch.cli.validate_command import (
    EXIT_CONFIG,
    UNKNOWN_OPTIONS_AS_OVERRIDES,
    command_console,
    validate_command,
)
from launch.config.errors import ConfigError, Problem, did_you_mean, render_problems
from launch.config.optional_groups import OPTIONAL_GROUPS
from launch.config.plain import Plain
from launch.config.resolved import composed_plain
from launch.config.secrets import scrub_obj, scrub_text
from t3rl_core import registries
from t3rl_core.registry import Listed, is_import_path

if TYPE_CHECKING:
    from rich.console import Console

    from launch.config.provenance import Provenance

Overrides = Annotated[
    list[str] | None,
    completion.overrides_argument("Hydra overrides, e.g. +experiment=stage1_bfcl model=qwen3_8b"),
]
ConfigDirs = Annotated[
    list[Path] | None,
    typer.Option("--config-dir", metavar="DIR", help="Extra config dir searched after t3rl's (repeatable)."),
]


def register(app: typer.Typer) -> None:
    @app.command("validate", context_settings=UNKNOWN_OPTIONS_AS_OVERRIDES)
    def validate(
        overrides: Overrides = None,
        multirun: Annotated[
            bool, typer.Option("-m", "--multirun", help="Check every point of a sweep, or a search's space.")
        ] = False,
        config_dir: ConfigDirs = None,
        max_points: MaxPoints = None,
    ) -> None:
        """Check a config (schema, topology, batch sizes, parsers, checkpoint, stages); exit 2 on errors.

        Each error names the key, the file or override that set it, and a fix that validates. Nothing is
        written.

        Examples:

          t3rl validate +experiment=stage1_bfcl hardware.tensor_parallel=4

          t3rl validate -m +experiment=stage1_bfcl reward=progress,binary
        """
        raise typer.Exit(
            validate_command(overrides or [], _dirs(config_dir), multirun=multirun, max_points=max_points)
        )

    @app.command("show")
    def show(
        overrides: Overrides = None,
        explain: Annotated[
            list[str] | None,
            typer.Option(
                "--explain",
                "-e",
                metavar="KEY",
                help="Print KEY's value and the file or override that set it, e.g. --explain "
                "hardware.tensor_parallel (a dotted key of the config).",
                autocompletion=completion.keys,
            ),
        ] = None,
        config_dir: ConfigDirs = None,
    ) -> None:
        """Print the resolved config, or with --explain where each value came from.

        --explain also prints the key's type, domain, default and description.

        Examples:

          t3rl show +experiment=quickstart

          t3rl show +experiment=stage1_bfcl --explain hardware.tensor_parallel
        """
        raise typer.Exit(show_command(overrides or [], explain or [], _dirs(config_dir)))

    @app.command("ls")
    def ls(
        group: Annotated[
            str | None,
            typer.Argument(
                metavar="GROUP", help="A config group, e.g. model.", autocompletion=completion.groups
            ),
        ] = None,
        option: Annotated[
            str | None,
            typer.Argument(
                metavar="OPTION",
                help="One option of GROUP: its file, its description and the command that shows the "
                "config it composes.",
                autocompletion=completion.options,
            ),
        ] = None,
        config_dir: ConfigDirs = None,
    ) -> None:
        """List config groups and their options (* = the default), with each file's description.

        Without GROUP: every group. For env, reward, engine, sandbox and user_sim also every registered
        name with its source.

        Examples:

          t3rl ls

          t3rl ls model

          t3rl ls experiment quickstart

          t3rl ls experiment --config-dir ~/my_configs
        """
        raise typer.Exit(ls_command(group, _dirs(config_dir), option))


def _dirs(config_dir: list[Path] | None) -> list[str]:
    """Absolute, with `~` expanded (`--config-dir=~/x` reaches us as typed)."""
    return [os.path.abspath(os.path.expanduser(d)) for d in config_dir or []]


# ------------------------------------------------------------------------------------------------ show


def show_command(overrides: list[str], keys: list[str], config_dirs: list[str]) -> int:
    """Prints the config (or the explained keys) even when it does not validate; then exit 2."""
    try:
        composed = composed_plain(overrides, config_dirs)
    except ConfigError as error:
        render_problems([*error.problems, *error.warnings], command_console(stderr=True))
        return EXIT_CONFIG
    problems = []
    tree: dict[str, Any] = composed.data
    try:
        resolved = resolve(overrides, config_dirs)
        tree = resolved.run.model_dump(mode="json")
        problems = resolved.warnings
    except ConfigError as error:
        problems = [*error.problems, *error.warnings]

    tree = scrub_obj(tree)  # secret keys, URL passwords, secret flags' values and known values masked
    console = command_console()
    if keys:
        for key in keys:
            if not _explain(key, tree, composed, console):
                return EXIT_CONFIG
    else:
        console.print(yaml.safe_dump(tree, sort_keys=False, allow_unicode=True), markup=False, end="")
    if problems:
        render_problems(problems, command_console(stderr=True))
    return EXIT_CONFIG if any(p.severity == "error" for p in problems) else 0


def _explain(key: str, tree: dict[str, Any], composed: Plain, console: Console) -> bool:
    found, value = _lookup(tree, key)
    if not found:
        _unknown_key(key, tree, composed)
        return False
    leaves = list(_leaves(key, value)) if isinstance(value, dict) and value else [(key, value)]
    for leaf, leaf_value in leaves:
        origin = composed.provenance.origin(leaf)
        exact = origin is not None and _is_own(leaf, composed.provenance)
        console.print(f"[cyan]{escape(leaf)}[/] = {escape(_text(leaf_value))}")
        if exact and origin is not None:
            console.print(f"    set in: [magenta]{escape(scrub_text(origin.source))}[/]")
            if origin.chosen_by:
                console.print(f"    chosen by: {escape(scrub_text(origin.chosen_by))}")
            if isinstance(origin.raw, str) and "${" in origin.raw:
                console.print(f"    written as: {escape(scrub_text(origin.raw))}")
        else:
            console.print("    set in: [magenta](schema default: no config file or override sets it)[/]")
        _describe(leaf, tree, origin.source if exact and origin is not None else "", console)
    return True


def _describe(key: str, tree: dict[str, Any], source: str, console: Console) -> None:
    """The key's type, domain, default and comments: the configuration reference's own text."""
    from launch.config.field_docs import comment_in_file, doc_at, yaml_comments  # lazy: only for --explain

    doc = doc_at(key, tree)
    if doc is not None:
        console.print(f"    [dim]{escape(doc.summary())}[/]")
        if doc.comment:
            console.print(f"    {escape(doc.comment)}")
    note = comment_in_file(key, yaml_comments(Path(source).read_text())) if Path(source).is_file() else ""
    if note and (doc is None or note != doc.comment):
        console.print(f"    {escape(source)}: {escape(note)}")


def _is_own(key: str, provenance: Provenance) -> bool:
    """True when a file or override set exactly this key (not only an ancestor or descendant)."""
    return any(k == key for k, _ in provenance.items())


def _unknown_key(key: str, tree: dict[str, Any], composed: Plain) -> None:
    parent, _, leaf = key.rpartition(".")
    found, node = _lookup(tree, parent) if parent else (True, tree)
    known = sorted(node) if found and isinstance(node, dict) else []
    guess = did_you_mean(leaf, known)
    deeper = _keys_ending_in(key, tree)
    listed = [part for part in re.split(r"[,\s]+", key) if part]
    if len(listed) > 1 and all(_lookup(tree, part)[0] for part in listed):
        # `--explain model.name,seed`: several keys in one value; the option takes one and repeats
        fix = f"{' '.join(f'--explain {part}' for part in listed)} (one key each: --explain repeats)"
    elif guess:
        fix = f"did you mean --explain {parent + '.' if parent else ''}{guess}?"
    elif deeper:
        # `--explain lr`: the key named by its last parts, as people say it, not by its whole path.
        fix = f"did you mean --explain {' or --explain '.join(deeper[:4])}?"
    elif known:
        fix = f"keys under '{parent or '<root>'}': {', '.join(known)}"
    else:
        fix = f"'{parent}' is not a section"
    render_problems(
        [Problem(key, "no such key in the resolved config", "--explain", fix)], command_console(stderr=True)
    )


def _keys_ending_in(key: str, tree: dict[str, Any]) -> list[str]:
    """Every key of the config (sections too) whose last dotted parts are `key`, shallowest first."""
    found: list[str] = []

    def walk(node: Any, prefix: str) -> None:
        if not isinstance(node, dict):
            return
        for name, child in node.items():
            path = f"{prefix}.{name}" if prefix else str(name)
            if path.endswith(f".{key}"):
                found.append(path)
            walk(child, path)

    walk(tree, "")
    return sorted(found, key=lambda k: (k.count("."), k))


def _lookup(tree: Any, key: str) -> tuple[bool, Any]:
    node = tree
    for part in key.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False, None
    return True, node


def _leaves(prefix: str, node: Any) -> Any:
    if isinstance(node, dict) and node:
        for k, v in node.items():
            yield from _leaves(f"{prefix}.{k}", v)
    else:
        yield prefix, node


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


# -------------------------------------------------------------------------------------------------- ls


def ls_command(group: str | None, config_dirs: list[str], option: str | None = None) -> int:
    from launch.config.direct.listing import direct_listing  # lazy: only for ls
    from launch.config.hidden_options import hidden_files, shown_path  # lazy: only for ls

    listing: Listing = direct_listing(config_dirs) or _HydraListing(config_dirs)
    try:
        known = listing.groups()
        defaults = listing.defaults()
    except ConfigError as error:
        render_problems(error.problems, command_console(stderr=True))
        return EXIT_CONFIG
    if group is not None and group not in known and group not in REGISTRY_GROUPS:
        # `model=qwen3_8b`, `+experiment=x` (an override's form): the group is before '='; the option
        # is seen with `t3rl show`, which takes the override as typed.
        chosen = group.lstrip("+~").partition("=")[0] if "=" in group else None
        guess = chosen if chosen in known else did_you_mean(group, [*known, *REGISTRY_GROUPS])
        fix = f"did you mean `t3rl ls {guess}`?" if guess else f"groups: {', '.join(known)}"
        if chosen in known:
            fix += f" (its options; `t3rl show {group}` shows the config that one composes)"
        problem = Problem(group, f"no config group '{group}'", "t3rl ls", fix)
        render_problems([problem], command_console(stderr=True))
        return EXIT_CONFIG
    if group is not None and option is not None:
        options = listing.options(group) if group in known else []
        if option not in options:
            render_problems([_no_option(group, option, options)], command_console(stderr=True))
            return EXIT_CONFIG
    console = command_console()
    never_read = hidden_files(config_dirs)  # own files an earlier search-path entry's of the same name hides
    misnamed = _misnamed_groups(known, config_dirs)
    width = max((len(o) for g in known for o in listing.options(g)), default=0) + 2
    for name in [group] if group else known:
        console.print(f"[bold]{escape(name)}[/]")
        for listed in listing.options(name) if name in known else []:
            if option is not None and listed != option:
                continue
            shown, description = listing.source(f"{name}/{listed}") or ("", "")
            mark = "*" if defaults.get(name) == listed else " "
            console.print(f"  {escape(listed + mark):<{width}} {escape(description)}")
            if group:
                console.print(f"  {'':<{width}} [dim]{escape(shown)}[/]")
        for hidden in (h for h in never_read if h.option.rpartition("/")[0] == name):
            own, first = escape(shown_path(hidden.own)), escape(shown_path(hidden.first))
            console.print(f"  [yellow]{own} is never read: {first} has its name: rename it[/]")
        for folder, meant in misnamed.get(name, ()):
            console.print(
                f"  [yellow]{escape(shown_path(folder))} is no config group of t3rl's, so its files are "
                f"never read as options of '{meant}': mv {escape(shlex.quote(shown_path(folder)))} "
                f"{escape(shlex.quote(shown_path(folder.parent / meant)))}[/]"
            )
        if group and group in REGISTRY_GROUPS and option is None:
            _print_registry(group, listing if name in known else None, console)
    if group is not None and option is not None:
        chosen = f"{'+' if group in OPTIONAL_GROUPS else ''}{group}={option}"
        # an option of one's own config dir is found only with it: the line names it as `ls` was given it
        dirs = "".join(f" --config-dir {shlex.quote(d)}" for d in config_dirs)
        shown = escape(f"t3rl show{dirs} {chosen}")
        console.print(f"the config it composes: {shown}; choose it with {escape(chosen)}")
        return 0
    console.print("* = the default; choose another with GROUP=OPTION (an experiment with +experiment=NAME)")
    return 0


def _misnamed_groups(known: list[str], config_dirs: list[str]) -> dict[str, list[tuple[Path, str]]]:
    """Per group listed only from one's config dirs whose folder is misnamed for one of t3rl's own
    (`mine/experimet/`): (that folder, the group meant). `t3rl ls` listed it as a group of its own, whose
    options `+experiment=…` then could not find (composition_fixes.group_dir_misnamed refuses them)."""
    if not config_dirs:
        return {}
    from launch.config.direct.listing import direct_listing  # lazy: only for ls
    from launch.config.group_names import group_meant  # lazy: only with own config dirs

    own = (direct_listing([]) or _HydraListing([])).groups()
    found: dict[str, list[tuple[Path, str]]] = {}
    for group in (g for g in known if g not in own):
        meant = group_meant(group, own)
        folders = [Path(d) / group for d in config_dirs if (Path(d) / group).is_dir()]
        if meant is not None:
            found[group] = [(folder, meant) for folder in folders]
    return found


def _no_option(group: str, option: str, options: list[str]) -> Problem:
    """`t3rl ls model qwen3-8b`: the option meant, else the group's options."""
    guess = did_you_mean(option, options)
    if guess:
        fix = f"did you mean `t3rl ls {group} {guess}`?"
    elif options:
        fix = f"options of {group}: {', '.join(options)}"
    else:  # a group of registered names only (`t3rl ls env`): no config file to show
        fix = f"`t3rl ls {group}` lists what it holds"
    return Problem(group, f"no option '{option}' in config group '{group}'", "t3rl ls", fix)


class Listing(Protocol):
    """What `t3rl ls` reads of the search path (launch.config.direct.listing.DirectListing's methods)."""

    def groups(self) -> list[str]: ...
    def defaults(self) -> dict[str, str | None]: ...
    def options(self, group: str) -> list[str]: ...
    def source(self, config_path: str) -> tuple[str, str] | None: ...
    def name(self, config_path: str) -> str | None: ...


class _HydraListing:
    """The listing through Hydra's loader, each part read when asked: where the direct one declines."""

    def __init__(self, config_dirs: list[str]) -> None:
        self._dirs = config_dirs

    def groups(self) -> list[str]:
        from launch.config.compose import groups  # lazy: Hydra, only when the direct listing declines

        return groups(self._dirs)

    def defaults(self) -> dict[str, str | None]:
        from launch.config.compose import compose  # lazy: likewise

        return compose([], self._dirs).choices

    def options(self, group: str) -> list[str]:
        from launch.config.compose import group_options  # lazy: likewise

        return group_options(group, self._dirs)

    def source(self, config_path: str) -> tuple[str, str] | None:
        from launch.config.compose import config_source  # lazy: likewise

        return config_source(config_path, self._dirs)

    def name(self, config_path: str) -> str | None:
        from launch.config.compose import option_name  # lazy: likewise

        return option_name(config_path, self._dirs)


# Config groups (and the eval engine) whose `name` picks a registry entry, by registries attribute.
REGISTRY_GROUPS = {
    "env": "ENVS",
    "reward": "REWARDS",
    "engine": "ENGINES",
    "sandbox": "SANDBOXES",
    "user_sim": "USER_SIMULATORS",
}


def _print_registry(group: str, listing: Listing | None, console: Console) -> None:
    """The names a section's `name` may take: built-ins, installed entry-point plugins, and plugins
    the group's options name by import path, each with its source."""
    registry = getattr(registries, REGISTRY_GROUPS[group])
    rows = registry.listing()
    for option in listing.options(group) if listing is not None else []:
        name = listing.name(f"{group}/{option}")
        if name is not None and is_import_path(name):
            shown = (listing.source(f"{group}/{option}") or ("?", ""))[0]
            rows.append(Listed(name, f"import path, {group}={option} ({shown})"))
    width = max(len(row.name) for row in rows) + 2
    console.print(f"  [bold]{registry.kind} names[/] (`name:` of the section; plugins: {registry.group})")
    for row in rows:
        console.print(f"  {escape(row.name):<{width}} {escape(row.source)}  [dim]{escape(row.target)}[/]")
    console.print(f"  {'pkg.module:Class':<{width}} a plugin by import path (see t3rl_core.plugins)")
