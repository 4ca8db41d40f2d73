"""Shell completion of what t3rl's arguments name: config groups after `t3rl ls `, and in overrides a
group's `group=` key and then its options (`model=qwen3_<TAB>`), `+experiment=` with the experiments,
from t3rl's config dirs and the command line's own --config-dir (`t3rl --install-completion` installs
the shell's side; subcommands and options complete as before).

Each completer reads the config search path only (no schema), a TAB costing a fraction of a second; a
stage (`--from`/`--only <TAB>`) or a key (`show --explain <TAB>`) is the command line's composition's,
composed directly (`launch.config.direct`, ~0.1 s; a line it leaves to Hydra completes nothing), or of
the `--run-dir` given. A config dir that does not exist completes nothing rather than failing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

import typer

from launch.config.errors import ConfigError
from launch.config.optional_groups import OPTIONAL_GROUPS


def overrides_argument(help: str) -> Any:
    """The OVERRIDES argument of a command that composes a config (completed by `overrides`)."""
    return typer.Argument(metavar="OVERRIDES", help=help, show_default=False, autocompletion=overrides)


def choices(values: Iterable[str]) -> Callable[[Any, str], list[str]]:
    """A completer of a fixed set of words (`t3rl score <TAB>`, `t3rl runs --status <TAB>`)."""
    words = tuple(values)

    def complete(ctx: Any, incomplete: str) -> list[str]:
        return [word for word in words if word.startswith(incomplete)]

    return complete


def metrics(ctx: Any, incomplete: str) -> list[str]:
    """`--metric <TAB>`: the numbers of an eval summary's overall block (pass@k for the k asked)."""
    from launch.cli.runs_filter import block_numbers  # lazy: the eval's metric names, only while completing

    names = [f"overall.{name}" for name in block_numbers()]
    wanted = incomplete.rpartition("@")[2] if "pass" in incomplete else ""
    names += [f"overall.{p}{wanted}" for p in ("pass@", "pass^") if wanted.isdigit()]
    return [name for name in dict.fromkeys(names) if name.startswith(incomplete)]


def groups(ctx: Any, incomplete: str) -> list[tuple[str, str]]:
    """`t3rl ls <TAB>`: the config groups (with what choosing one does)."""
    return [
        (g, f"choose with {_spelled(g)}=OPTION")
        for g in _groups(_config_dirs(ctx))
        if g.startswith(incomplete)
    ]


def options(ctx: Any, incomplete: str) -> list[str]:
    """`t3rl ls GROUP <TAB>`: GROUP's options, as `GROUP=<TAB>` offers them in an override (was: nothing,
    so the shell offered the working directory's files)."""
    group = (getattr(ctx, "params", None) or {}).get("group")
    return _options_of(ctx, group, incomplete) if group else []


def models(ctx: Any, incomplete: str) -> list[str]:
    """`t3rl check-template <TAB>`: the model options and the chat families MODEL takes (was: nothing of
    t3rl's, the working directory's files)."""
    from t3rl_core.chat.families import FAMILIES  # lazy: only while completing

    families = [f for f in sorted(FAMILIES) if f.startswith(incomplete)]
    return list(dict.fromkeys([*_options_of(ctx, "model", incomplete), *families]))


def stages(ctx: Any, incomplete: str) -> list[str]:
    """`t3rl run … --from <TAB>`, `--only <TAB>`: the stages of the experiment the line composes, or of
    its --run-dir's config (was: the working directory's files)."""
    config = _composed(ctx)
    names = config.get("stages") if isinstance(config, dict) else None
    return [name for name in names if name.startswith(incomplete)] if isinstance(names, dict) else []


def keys(ctx: Any, incomplete: str) -> list[str]:
    """`t3rl show … --explain <TAB>`: the dotted keys of the line's config, one level at a time
    (`stages.<TAB>` offers `stages.train`, …)."""
    node: Any = _composed(ctx)
    parent, dot, _ = incomplete.rpartition(".")
    for part in parent.split(".") if dot else ():
        node = node.get(part) if isinstance(node, dict) else None
    if not isinstance(node, dict):
        return []
    return [f"{parent}{dot}{key}" for key in node if f"{parent}{dot}{key}".startswith(incomplete)]


def _composed(ctx: Any) -> dict[str, Any] | None:
    """The config the command line being completed names: its --run-dir's config.yaml, else its
    overrides composed directly; None when neither reads."""
    params = getattr(ctx, "params", None) or {}
    if params.get("run_dir"):
        from pathlib import Path  # lazy: only while completing

        from launch.run.record_files import read_yaml  # lazy: only while completing

        try:
            return read_yaml(Path(str(params["run_dir"])).expanduser() / "config.yaml", dict)
        except Exception:  # a run dir typed so far, unreadable: nothing to offer, never a traceback
            return None
    from launch.config.direct.compose import compose_directly  # lazy: only while completing

    # While completing, Click leaves the words before the option being completed in ctx.args, not in
    # the OVERRIDES argument.
    words = [*(params.get("overrides") or ()), *(getattr(ctx, "args", None) or ())]
    overrides = [word for word in words if not word.startswith("-")]
    try:
        composed = compose_directly(overrides, _config_dirs(ctx), {})
    except Exception:  # an override or config dir typed so far that does not compose: nothing to offer
        return None
    return composed.data if composed is not None else None


def _options_of(ctx: Any, group: str, incomplete: str) -> list[str]:
    return [choice.partition("=")[2] for choice in overrides(ctx, f"{group}={incomplete}")]


def overrides(ctx: Any, incomplete: str) -> list[str]:
    """An override being typed: `group=` keys first, then `group=option` once the `=` is there."""
    config_dirs = _config_dirs(ctx)
    key, equals, value = incomplete.partition("=")
    bare = key.lstrip("+~")
    known = _groups(config_dirs)
    if equals:
        if bare not in known:
            return []  # a config key's value: nothing to offer
        from launch.config.direct import search_files  # lazy: only while completing

        options = search_files.group_options(bare, config_dirs)
        if options is None:  # a search path the direct reader leaves to Hydra
            from launch.config.compose import group_options  # lazy: Hydra, only then

            options = _safe(group_options, bare, config_dirs)
        return [f"{key}={option}" for option in options if option.startswith(value)]
    return [f"{_spelled(g)}=" for g in known if _spelled(g).startswith(key) or g.startswith(bare)]


def _spelled(group: str) -> str:
    """How an override names the group: `+experiment` for those the primary config leaves empty."""
    return f"+{group}" if group in OPTIONAL_GROUPS else group


def _groups(config_dirs: list[str]) -> list[str]:
    from launch.config.direct import search_files  # lazy: only while completing

    found = search_files.groups(config_dirs)
    if found is not None:
        return found
    from launch.config.compose import groups as config_groups  # lazy: Hydra, where the direct reader declines

    return _safe(config_groups, config_dirs)


def _safe(function: Any, *args: Any) -> list[str]:
    try:
        return list(function(*args))
    except ConfigError:  # e.g. a --config-dir typed so far that does not exist
        return []


def _config_dirs(ctx: Any) -> list[str]:
    given = (getattr(ctx, "params", None) or {}).get("config_dir") or []
    return [os.path.abspath(os.path.expanduser(str(d))) for d in given]
