"""The plain config a command line composes (what the schema validates) and its provenance.

Free of the schema and of pydantic on purpose: `launch.config.compose_ahead` runs this in a forked
child while the parent imports and builds the schema, so it must not pay for them. Free of Hydra and
OmegaConf too: a plain command line composes directly (`launch.config.direct`), and a repeated one
comes from the composition cache; only what the direct composition leaves to Hydra imports them.
"""

from __future__ import annotations

from collections.abc import Sequence

from launch.config.compose_cache import cached_compose
from launch.config.direct.compose import compose_directly, composed_by_hydra
from launch.config.errors import ConfigError, Problem
from launch.config.plain import Plain, Reads


def composed_plain(overrides: Sequence[str], config_dirs: Sequence[str] = ()) -> Plain:
    """The plain composition of this command line, from the composition cache when it is current (a
    composition it computes remembers the overrides' and config's secrets first)."""
    return cached_compose(
        overrides, config_dirs, lambda reads: plain_composition(overrides, config_dirs, reads)
    )


def plain_composition(overrides: Sequence[str], config_dirs: Sequence[str], reads: Reads) -> Plain:
    """Composed directly where that gives Hydra's result exactly, else with Hydra."""
    direct = compose_directly(overrides, config_dirs, reads.env)
    if direct is not None:
        return direct
    from launch.config.composed import plain_with_hydra  # lazy: Hydra and OmegaConf, only when needed

    reads.by_hydra = True
    try:
        composed = plain_with_hydra(overrides, config_dirs, reads)
    except TypeError as error:  # OmegaConf's ConfigTypeError: a list file merged into a mapping
        problems = _not_mappings(config_dirs) if "Cannot merge" in str(error) else []
        if not problems:
            raise
        raise ConfigError(problems) from None
    except RecursionError:
        # Hydra's defaults tree and OmegaConf recurse per level: a user's file nested thousands of levels
        # deep, or two files whose defaults lists name each other, end here (the direct composition names
        # the file; a command line it leaves to Hydra did not).
        raise ConfigError([_recursed(config_dirs)]) from None
    composed_by_hydra(overrides, config_dirs, composed.provenance)
    return composed


def _not_mappings(config_dirs: Sequence[str]) -> list[Problem]:
    """The files of the config dirs that hold no mapping (a list, a scalar): Hydra merged one into a
    mapping and OmegaConf's ConfigTypeError was a traceback (a search, composed by Hydra alone)."""
    from pathlib import Path  # lazy: only to explain a mistake

    from t3rl_core.yaml_text import safe_load  # lazy: only to explain a mistake

    problems = []
    for directory in config_dirs:
        for file in sorted(Path(directory).expanduser().rglob("*.yaml")):
            try:
                data = safe_load(file.read_text(encoding="utf-8"))
            except Exception:  # unreadable or not YAML: another problem's
                continue
            if data is not None and not isinstance(data, dict):
                kind = "a list" if isinstance(data, list) else f"a single {type(data).__name__}"
                message = f"{kind} where a config file holds a mapping of keys"
                fix = "write it as `key: value` lines (a list goes under a key)"
                problems.append(Problem(str(file), message, str(file), fix))
    return problems


def _recursed(config_dirs: Sequence[str]) -> Problem:
    dirs = ", ".join(config_dirs) or "conf/"
    return Problem(
        key="defaults",
        message=(
            f"composing recursed without end: a config file of {dirs} nests thousands of levels deep, "
            "or its defaults list names a file whose list names it again"
        ),
        source=dirs,
        fix="flatten the deep keys, or delete the entry that closes the loop",
    )
