"""Compose a run config from t3rl's config groups with Hydra, recording which file set what.

The search path is the installed package `pkg://t3rl_conf` (repo `conf/`, shipped in the wheel), then
each user `--config-dir`, then any `hydra.searchpath=[...]` override — Hydra's own order, so a user dir
adds groups and options without forking ours.

This runs Hydra's composition steps directly (defaults list → load each config at its package → merge
→ apply overrides) instead of `hydra.compose`, for two reasons: each loaded config is kept as a
`Layer`, which is exactly the provenance `t3rl show --explain` needs; and nothing global (GlobalHydra,
plugin discovery, logging) is set up, so it is cheap to call once per sweep point. The Hydra
internals used here are those of hydra-core 1.3 (pinned in requirements/lock.txt).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from hydra.core.default_element import ResultDefault
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import ConfigCompositionException, HydraException, MissingConfigException
from omegaconf import DictConfig, OmegaConf, flag_override, open_dict
from omegaconf.errors import OmegaConfBaseException

from launch.config import hydra_internals as internals
from launch.config.errors import (
    WITH_PLUS,
    ConfigError,
    Problem,
    did_you_mean,
    not_text_problem,
    undecodable_file,
)
from launch.config.hydra_internals import ConfigLoaderImpl
from launch.config.key_refusals import added_again, unknown_key
from launch.config.layers import AppliedOverride, Layer, leaves
from launch.config.optional_groups import OPTIONAL_GROUPS, optional_group_choice
from launch.config.override_fixes import nothing_to_delete
from launch.config.override_syntax import ConfigLookup
from launch.config.search_path import PACKAGE_SOURCE, display_path, first_comment, local_file

PRIMARY_CONFIG = "config"


@dataclass(frozen=True)
class Composition:
    """A composed, unresolved run config and how it was built."""

    config: DictConfig
    # Hydra's own node (sweeper/launcher settings), kept apart from the run config.
    hydra: DictConfig
    layers: list[Layer]
    overrides: list[AppliedOverride]
    # Config group (with package when mounted elsewhere) -> chosen option.
    choices: dict[str, str | None]


def compose(overrides: Sequence[str], config_dirs: Sequence[str] = ()) -> Composition:
    """Compose t3rl's primary config with Hydra overrides; raises ConfigError with every problem."""
    try:
        with internals.libyaml_parsing():
            return _compose(overrides, config_dirs)
    except yaml.YAMLError as error:
        raise ConfigError([yaml_problem(error)]) from None


def yaml_problem(error: Exception) -> Problem:
    """A config file that is not valid YAML (syntax, duplicated key): its file, line and column."""
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    where = f"{mark.name}:{mark.line + 1}:{mark.column + 1}" if mark is not None else "a config file"
    what = " ".join(str(getattr(error, "problem", "") or error).split())
    context = getattr(error, "context", None)
    if context and "duplicate" in what:
        first = getattr(error, "context_mark", None)
        what += f" (the mapping starts at line {first.line + 1})" if first is not None else ""
    fix = (
        "keep one of the two entries (YAML mappings take each key once)"
        if "duplicate" in what
        else "fix the YAML syntax there (a missing ':' or closing bracket, a tab, an unquoted ': ')"
    )
    if "'\\t'" in what and mark is not None:
        # A tab where YAML wants spaces (an editor's indent): the sed that replaces each with two.
        import shlex  # lazy: only for this error

        fix = f"YAML indents with spaces, never tabs: sed -i 's/\\t/  /g' {shlex.quote(str(mark.name))}"
    return Problem(key=where, message=f"not valid YAML: {what}", source=where, fix=fix)


def _compose(overrides: Sequence[str], config_dirs: Sequence[str]) -> Composition:
    loader = _loader(_normalise_dirs(config_dirs))
    written = {optional_group_choice(o): o for o in overrides}
    overrides = list(written)
    parsed = _parse(overrides, config_dirs, typed=list(written.values()))
    sweeps = [o for o in parsed if o.is_sweep_override()]
    if sweeps:
        raise ConfigError(_sweep_problems(overrides, sweeps, config_dirs))
    missing = [p for o in parsed if _is_searchpath(o) for p in _missing_searchpath_dirs(o)]
    if missing:
        raise ConfigError(missing)
    foreign = [_hydra_setting_problem(o) for o in parsed if _is_hydra_setting(o)]
    if foreign:
        raise ConfigError(foreign)
    if any(o.key_or_group.startswith("hydra.sweeper.") for o in parsed):
        from launch.config.sweeper_settings import search_settings_without_search  # lazy: only for these

        unsearched = search_settings_without_search(parsed, group_options("hparams_search", config_dirs))
        if unsearched:
            raise ConfigError(unsearched)
    if any(isinstance(o.value(), list) for o in parsed):
        from launch.config.group_lists import listed_options  # lazy: only a list on the command line

        listed = listed_options(
            parsed,
            lambda group: internals.group_exists(loader, group),
            lambda group: internals.group_options(loader, group),
        )
        if listed:
            raise ConfigError(listed)
    named = _file_name_as_option(parsed, loader, written)
    if named is not None:
        raise ConfigError([named])
    with_hydra = _needs_hydra_node(parsed)
    if with_hydra:
        # lazy: Hydra's plugin discovery, only when Hydra's own groups compose
        from hydra.core.plugins import Plugins

        Plugins.instance()  # registers Hydra's sweeper/launcher config groups
    try:
        repo, defaults = internals.defaults_list(
            loader,
            PRIMARY_CONFIG,
            [o for o in parsed if with_hydra or not _is_searchpath(o)],
            with_hydra=with_hydra,
            command_line=parsed,
        )
    except MissingConfigException as e:
        from launch.config.composition_fixes import (  # lazy: only to explain a mistake
            group_dir_given,
            group_dir_misnamed,
        )
        from launch.config.hub_ids import hub_id_as_option  # lazy: only to explain a mistake

        problem = (
            hub_id_as_option(parsed, loader, written)
            or _path_as_option(parsed, loader, written)
            or group_dir_given(e, parsed, _normalise_dirs(config_dirs), written)
            or group_dir_misnamed(e, parsed, _normalise_dirs(config_dirs))
            or _missing_config_problem(e, parsed, loader, written)
        )
        raise ConfigError([_in_user_words(problem, written)]) from None
    except OSError as e:
        # A group option longer than a file name can be (`model=<300 characters>`): Hydra's file search
        # raised ENAMETOOLONG; no such option exists, said as for any other unknown one.
        chosen = _too_long_option(parsed, e)
        if chosen is None:
            raise
        missing = MissingConfigException(str(e), missing_cfg_file=chosen)
        raise ConfigError(
            [_in_user_words(_missing_config_problem(missing, parsed, loader, written), written)]
        ) from None
    except UnicodeDecodeError as e:
        file = undecodable_file(_normalise_dirs(config_dirs)) or "a config file"
        raise ConfigError([not_text_problem(file, e)]) from None
    except (ConfigCompositionException, OmegaConfBaseException, ValueError) as e:
        raise ConfigError([_in_user_words(_composition_problem(e, parsed, loader), written)]) from None

    cfg = OmegaConf.create()
    layers: list[Layer] = []
    metadata = defaults.overrides.override_metadata
    with flag_override(cfg, "no_deepcopy_set_nodes", True):
        for default in defaults.defaults:
            loaded = internals.load_single_config(loader, default, repo)
            experiment = (default.config_path or "").startswith("experiment/")
            own = leaves(OmegaConf.to_container(loaded.config, resolve=False)) if experiment else {}
            try:
                cfg.merge_with(loaded.config)
            except OmegaConfBaseException as error:
                # lazy: only a file's mapping over a list, or list over a mapping
                from launch.config.other_shapes import cleared_other_shapes

                if not cleared_other_shapes(cfg, loaded.config):
                    raise ConfigError(
                        [_unmerged(error, display_path(loaded.path, default.config_path))]
                    ) from None
                cfg.merge_with(loaded.config)  # the file's value replaces it; the schema judges its shape
            if default.config_path is None or default.config_path.startswith("hydra/"):
                continue
            layers.append(
                Layer(
                    config_path=default.config_path,
                    source=display_path(loaded.path, default.config_path),
                    package=default.package or "",
                    content=loaded.config,
                    chosen_by=_chosen_by(default, metadata, parsed, written),
                    written=own,
                )
            )
    _strip_defaults(cfg)
    OmegaConf.set_struct(cfg, True)
    if with_hydra:
        OmegaConf.set_readonly(cfg.hydra, False)
    applied = _apply_overrides(cfg, defaults.config_overrides)

    with open_dict(cfg):
        hydra_node = cfg.pop("hydra", None) or OmegaConf.create()
    choices = {k: v for k, v in defaults.overrides.known_choices.items() if not k.startswith("hydra")}
    return Composition(config=cfg, hydra=hydra_node, layers=layers, overrides=applied, choices=choices)


def parse_overrides(overrides: Sequence[str], config_dirs: Sequence[str] = ()) -> list[Override]:
    """Hydra's parse of command-line overrides; ConfigError with the corrected override per mistake."""
    return _parse(overrides, config_dirs, overrides)


def _parse(overrides: Sequence[str], config_dirs: Sequence[str], typed: Sequence[str]) -> list[Override]:
    """`typed`: the overrides as the user spelt them (`+experiment=x` for `experiment=x`), for problems."""
    try:
        return OverridesParser.create().parse_overrides(list(overrides))
    except HydraException:
        from launch.config.override_syntax import syntax_problems  # lazy: only a line Hydra refuses

        raise ConfigError(syntax_problems(typed, _lookup(config_dirs))) from None


def _sweep_problems(
    overrides: Sequence[str], sweeps: list[Override], config_dirs: Sequence[str]
) -> list[Problem]:
    """A sweep in a command that runs once; a list is what it often meant, when the key holds one."""
    from launch.config.guess_values import one_value_with_commas  # lazy: an error's path
    from launch.config.override_fixes import holds_list, sweep_problem  # lazy: an error's path

    data = _lookup(config_dirs).composed([o for o in overrides if o not in {s.input_line for s in sweeps}])
    return [
        sweep_problem(
            o,
            data is not None and holds_list(o.key_or_group, data),
            # `executor.partition=gpu,debug`: SLURM's own list, one value the key takes whole
            whole=data is not None and _whole_value_taken(o, data, one_value_with_commas),
        )
        for o in sweeps
    ]


def _whole_value_taken(override: Override, data: dict[str, Any], whole: Callable[..., bool]) -> bool:
    """Whether the sweep's text, commas and all, is the one value its key declares a list split at ','
    (a plain choice sweep of words, not a range or a glob)."""
    kind = override.value_type.name if override.value_type is not None else ""
    text = override.input_line.partition("=")[2]
    return (
        kind == "SIMPLE_CHOICE_SWEEP"
        and "'" not in text
        and '"' not in text
        and whole(override.key_or_group, text, data)
    )


def _lookup(config_dirs: Sequence[str]) -> ConfigLookup:
    """Other compositions and the config options, for reading a mistake in the overrides."""

    def composed(overrides: Sequence[str]) -> dict[str, Any] | None:
        try:
            data = OmegaConf.to_container(compose(overrides, config_dirs).config, resolve=False)
        except ConfigError:
            return None
        return data if isinstance(data, dict) else None  # type: ignore[return-value]

    def choice_of(option: str) -> str | None:
        group = next((g for g in groups(config_dirs) if option in group_options(g, config_dirs)), None)
        return None if group is None else f"{'+' if group in OPTIONAL_GROUPS else ''}{group}={option}"

    def misspelt_group(name: str, value: object, keys: Collection[str]) -> str | None:
        return group_choice(name, value, keys, config_dirs)

    return ConfigLookup(composed, choice_of, misspelt_group, tuple(config_dirs))


def group_choice(
    name: str, value: object, keys: Collection[str], config_dirs: Sequence[str] = ()
) -> str | None:
    """The override choosing the config group a misspelt top-level `name` meant, if a group is nearer to
    it than the `keys` (`launch.config.group_names`)."""
    from launch.config.group_names import nearest_group_choice  # lazy: only to explain a mistake

    return nearest_group_choice(
        name, value, keys, groups(config_dirs), lambda group: group_options(group, config_dirs)
    )


def group_options(group: str, config_dirs: Sequence[str] = ()) -> list[str]:
    """Options of a config group across the search path (e.g. "model" -> ["deepseek_v3", ...])."""
    return internals.group_options(_loader(_normalise_dirs(config_dirs)), group)


def groups(config_dirs: Sequence[str] = ()) -> list[str]:
    """Config groups across the search path (Hydra's own groups excluded)."""
    return _groups_of(_loader(_normalise_dirs(config_dirs)))


def _groups_of(loader: ConfigLoaderImpl) -> list[str]:
    return [g for g in internals.config_groups(loader) if g != "hydra"]


def config_source(config_path: str, config_dirs: Sequence[str] = ()) -> tuple[str, str] | None:
    """(display path, first comment line) of one config file, e.g. "model/qwen3_8b"; None if absent."""
    dirs = _normalise_dirs(config_dirs)
    try:
        result = internals.load_config_file(_loader(dirs), config_path)
    except yaml.YAMLError as error:
        raise ConfigError([yaml_problem(error)]) from None
    except UnicodeDecodeError as error:
        raise ConfigError([not_text_problem(undecodable_file(dirs) or config_path, error)]) from None
    if result is None:
        return None
    shown = display_path(result.path, config_path)
    return shown, first_comment(local_file(result.path, config_path))


def option_package(config_path: str, config_dirs: Sequence[str] = ()) -> str | None:
    """The `# @package` a config file declares ("env.user" for user_sim/llm), if any."""
    loader = _loader(_normalise_dirs(config_dirs))
    header = internals.config_header(loader, config_path)
    if header is None:  # what only Hydra's load tells (an error, another source, unusual data)
        result = loader.repository.load_config(config_path)
        header = result.header if result is not None else {}
    package = header.get("package")
    return package if isinstance(package, str) else None


def option_name(config_path: str, config_dirs: Sequence[str] = ()) -> str | None:
    """The top-level `name` a config file sets (the registry entry of env/reward/... options), if any."""
    result = _loader(_normalise_dirs(config_dirs)).repository.load_config(config_path)
    name = result.config.get("name") if result is not None else None
    return name if isinstance(name, str) else None


def option_kinds(group: str) -> dict[str, str]:
    """Each shipped option of `group` → the registry name its file sets, else the option itself (an
    option chooses its section's kind by that name, or, a union told apart by `kind`, is named so)."""
    return {option: option_name(f"{group}/{option}") or option for option in group_options(group)}


def _normalise_dirs(config_dirs: Sequence[str]) -> tuple[str, ...]:
    dirs = tuple(os.path.abspath(os.path.expanduser(d)) for d in config_dirs)
    missing = [d for d in dirs if not os.path.isdir(d)]
    if missing:
        from launch.config.composition_fixes import nearest_dir_fix  # lazy: only to explain a mistake

        raise ConfigError(
            [
                Problem(
                    key="--config-dir",
                    message=f"config directory {d} {'is a file' if os.path.exists(d) else 'does not exist'}",
                    source=f"--config-dir {d}",
                    fix=nearest_dir_fix(d),
                )
                for d in missing
            ]
        )
    return dirs


@lru_cache(maxsize=16)
def _loader(config_dirs: tuple[str, ...]) -> ConfigLoaderImpl:
    return internals.new_loader(
        [
            ("hydra", "pkg://hydra.conf"),
            ("main", PACKAGE_SOURCE),
            *(("command-line", f"file://{directory}") for directory in config_dirs),
            ("schema", "structured://"),
        ]
    )


def _needs_hydra_node(parsed: list[Override]) -> bool:
    """Hydra's own groups (sweeper, launcher, ...) cost a third of a composition; compose them only
    when an override touches them or a sweep definition (hparams_search) may select them."""
    return any(
        (o.key_or_group.startswith("hydra") and not _is_searchpath(o)) or o.key_or_group == "hparams_search"
        for o in parsed
    )


# Hydra's own settings t3rl uses: the search path and the sweeper of an hparams_search.
HYDRA_KEYS_USED = ("hydra.searchpath", "hydra.sweeper", "hydra/sweeper")
# Hydra settings t3rl replaces with its own, and what to write instead.
HYDRA_EQUIVALENTS = {
    "hydra.run": (
        "t3rl writes each run to <paths.runs_dir>/<name>/<timestamp>",
        "paths.runs_dir=<dir> (or name=<name>); to continue a run: t3rl run --run-dir <run dir>",
    ),
    "hydra.sweep": (
        "t3rl writes each sweep to <paths.runs_dir>/<name>/sweep-<timestamp>/pNN",
        "paths.runs_dir=<dir>; to continue a sweep: t3rl run --run-dir <sweep dir>",
    ),
    "hydra.job.name": ("the run's name is t3rl's `name`", "name=<run name>"),
    "hydra.job.chdir": ("t3rl never changes directory: each stage runs in its own stage dir", "drop it"),
    "hydra.output_subdir": (
        "every run dir holds config.yaml, overrides.yaml and manifest.json",
        "drop it (`t3rl show` prints the resolved config)",
    ),
}


def _is_hydra_setting(override: Override) -> bool:
    key = override.key_or_group
    return (key == "hydra" or key.startswith(("hydra.", "hydra/"))) and not key.startswith(HYDRA_KEYS_USED)


def _hydra_setting_problem(override: Override) -> Problem:
    key = override.key_or_group
    found = next((k for k in HYDRA_EQUIVALENTS if key == k or key.startswith(k + ".")), None)
    what, fix = HYDRA_EQUIVALENTS.get(
        found or "", ("t3rl does not run through @hydra.main, so Hydra's own settings do nothing", "drop it")
    )
    return Problem(
        key=key,
        message=f"Hydra setting {key} has no effect in t3rl: {what}",
        source=f"override `{override.input_line}`",
        fix=fix,
    )


def _is_searchpath(override: Override) -> bool:
    return override.key_or_group == "hydra.searchpath"


def _missing_searchpath_dirs(override: Override) -> list[Problem]:
    """Hydra only warns about a search-path entry that does not exist; for t3rl it is an error."""
    entries = override.value()
    entries = entries if isinstance(entries, list) else [entries]
    return [
        Problem(
            key="hydra.searchpath",
            message=f"search path entry {entry} is not an existing directory",
            source=f"override `{override.input_line}`",
            fix="list existing config dirs as file:///abs/dir (or use --config-dir DIR)",
        )
        for entry in entries
        if isinstance(entry, str)
        and entry.startswith("file://")
        and not os.path.isdir(entry[len("file://") :])
    ]


def _chosen_by(
    default: ResultDefault, metadata: dict[str, Any], parsed: list[Override], written: dict[str, str]
) -> str:
    """Why a config was picked: a command-line override, the file whose defaults list named it, or ""
    when it is the primary config's own default."""
    group = default.config_path.rpartition("/")[0] if default.config_path else ""
    key = default.override_key or group
    meta = metadata.get(key)
    if meta is not None and not meta.external_override and meta.containing_config_path:
        return f"{meta.containing_config_path}.yaml"
    # The last override of the group is the one Hydra applies (`model=a model=b` chooses b).
    text = next((o.input_line for o in reversed(parsed) if o.get_key_element().lstrip("+~") == key), None)
    if text:
        return f"override `{written.get(text, text)}`"
    if default.parent and default.parent not in (PRIMARY_CONFIG, _VIRTUAL_ROOT):
        return f"{default.parent}.yaml"
    return ""


# The parent Hydra gives the primary config when its own node is composed (a search's line): no file.
_VIRTUAL_ROOT = "<root>"


def _apply_overrides(cfg: DictConfig, overrides: list[Override]) -> list[AppliedOverride]:
    applied = []
    problems = []
    for override in overrides:
        key = override.key_or_group
        try:
            internals.apply_override(override, cfg)
        except (ConfigCompositionException, OmegaConfBaseException) as e:
            if not _replaced_other_shape(override, cfg):
                problems.append(_override_problem(override, cfg, e))
                continue
        if not key.startswith("hydra.") and key != "hydra":
            applied.append(
                AppliedOverride(
                    text=override.input_line or key,
                    key=key,
                    value=override.value(),
                    delete=override.is_delete(),
                )
            )
    if problems:
        raise ConfigError(problems)
    return applied


def _replaced_other_shape(override: Override, cfg: DictConfig) -> bool:
    """`env.data.categories={a: 1}`: a mapping typed over a list (at any depth of the mapping), or a list
    over a mapping where the schema has a list, replaces it, as a mapping typed over a number does, and the
    schema judges it at the key with its fix; Hydra's merge failed with "Error merging override" and no fix
    (launch/config/other_shapes.py)."""
    value, key = override.value(), override.key_or_group
    if override.is_delete() or not isinstance(value, dict | list):
        return False
    from launch.config.other_shapes import cleared_other_shapes  # lazy: only an override Hydra refused
    from launch.config.schema_walk import model_at  # lazy: only an override Hydra refused

    # A list over a mapping replaces it only where the schema has no section (a file's `categories: {a: 1}`,
    # fixed on the command line); typed for a section it has its own refusal (`_override_problem`).
    lists = isinstance(value, list) and model_at(key, OmegaConf.to_container(cfg, resolve=False)) is None
    parent, _, leaf = key.rpartition(".")
    node = OmegaConf.select(cfg, parent) if parent else cfg
    if not (isinstance(node, DictConfig) and cleared_other_shapes(node, {leaf: value}, lists=lists)):
        return False
    try:
        OmegaConf.update(cfg, key, value, merge=True, force_add=True)
    except OmegaConfBaseException:
        return False
    return True


def _override_problem(override: Override, cfg: DictConfig, error: Exception) -> Problem:
    key = override.key_or_group
    text = override.input_line or key
    parent, _, leaf = key.rpartition(".")
    node = OmegaConf.select(cfg, parent) if parent else cfg
    while node is None and parent:  # a parent the config lacks: the first missing level is judged
        parent, _, leaf = parent.rpartition(".")
        node = OmegaConf.select(cfg, parent) if parent else cfg
    if override.is_add() and OmegaConf.select(cfg, key, throw_on_missing=False) is not None:
        return added_again(key, text)
    if override.is_delete() and not (isinstance(node, DictConfig) and leaf in node):
        siblings = [str(k) for k in node] if isinstance(node, DictConfig) else []

        return nothing_to_delete(key, text, siblings)
    if isinstance(node, DictConfig) and leaf not in node:
        composed = OmegaConf.to_container(cfg, resolve=False)
        assert isinstance(composed, dict)
        return unknown_key(
            key, text, override.value(), parent, node.keys(), composed, group_choice, option_kinds
        )
    from launch.config.composition_fixes import unmet_condition  # lazy: only to explain a mistake

    unmet = unmet_condition(text, key, str(error)) if override.is_delete() else None
    if unmet is not None:  # `~executor={a: 1}`, `~seed=7`: a condition the value does not meet
        return unmet
    section = isinstance(node, DictConfig) and isinstance(node.get(leaf), DictConfig)
    if section and not override.is_delete() and not isinstance(override.value(), dict):
        # `model.parsers=[1]`, `++stages.train=[]`: no '+' makes a list or a number fit a section
        return Problem(
            key=key,
            message=f"{key} must be a mapping (a section of keys), not {override.value()!r}",
            source=f"override `{text}`",
            fix=f"drop `{text}` ({key} is a section: set its keys, {key}.<key>=…)",
        )
    if section and text.startswith(key):  # a mapping typed without '+' (anything else is refused above)
        from launch.config.mapping_keys import unknown_mapping_key  # lazy: only to explain a mistake

        unknown = unknown_mapping_key(key, text, override.value(), cfg)
        if unknown is not None:  # `env.data={a: 1}`: '+' would add a key the section has no field for
            return unknown
        # `key={a: 1}` on a mapping a config file sets: Hydra merges new keys into it only with '+'
        fix = f"{WITH_PLUS}+{text}"
        return Problem(
            key=key, message=f"cannot apply override: {error}", source=f"override `{text}`", fix=fix
        )
    # What else Hydra refuses (`~hydra.sweeper`: its own node's keys): the line without it is the config.
    return Problem(
        key=key,
        message=f"cannot apply override: {error}",
        source=f"override `{text}`",
        fix=f"drop `{text}`",
    )


def _too_long_option(parsed: list[Override], error: OSError) -> str | None:
    """`group/option` of the override whose option is too long a name for a file, when that is `error`."""
    if error.errno != errno.ENAMETOOLONG:
        return None
    for override in reversed(parsed):
        value = override.value()
        if isinstance(value, str) and len(value.encode("utf-8", "surrogateescape")) > 255:
            return f"{override.key_or_group.split('@')[0]}/{value}"
    return None


def _missing_config_problem(
    error: MissingConfigException, parsed: list[Override], loader: ConfigLoaderImpl, written: dict[str, str]
) -> Problem:
    missing = error.missing_cfg_file or ""
    group, _, option = missing.rpartition("/")
    options = list(error.options or []) or (internals.group_options(loader, group) if group else [])
    # The override that chose the missing option (`model=a model=nosuch`: not the first of the group).
    chosen = [o for o in parsed if o.key_or_group.split("@")[0] == group]
    text = next((o.input_line for o in reversed(chosen) if o.value() == option), None) or next(
        (o.input_line for o in reversed(chosen)), None
    )
    source = f"override `{text}`" if text else _source_of_default(str(error))
    guess = did_you_mean(option, options)
    if not group:
        return Problem(key=missing, message=str(error).strip(), source=source)
    if not options and not internals.group_exists(loader, group):
        known_groups = _groups_of(loader)
        g_guess = did_you_mean(group, known_groups)
        return Problem(
            key=group,
            message=f"unknown config group '{group}'",
            source=source,
            fix=f"did you mean '{g_guess}'?" if g_guess else f"known groups: {', '.join(known_groups)}",
        )
    # As typed when t3rl rewrote it (`+experiment=quikstart` → `+experiment=quickstart`, the README's
    # form); `+model=…` is not rewritten, and the fix drops its '+' (the group is in the defaults).
    original = written.get(text or "", text)
    typed = original.partition("=")[0].strip() if original and original != text else group
    fix = f"did you mean {typed}={guess}?" if guess else f"choose one of: {', '.join(options)}"
    # `model=h200x8`, `executor=wandb`: the option, spelt exactly, of another group, not a misspelt one
    typed_groups = {o.key_or_group.split("@")[0] for o in parsed}  # a group chosen already stays chosen
    elsewhere = [
        g
        for g in _groups_of(loader)
        if g not in typed_groups and option in internals.group_options(loader, g)
    ]
    if elsewhere and text is not None and option not in options:
        chosen_there = " or ".join(f"{'+' if g in OPTIONAL_GROUPS else ''}{g}={option}" for g in elsewhere)
        fix = f"{chosen_there} instead of `{text}` ('{option}' is an option of {', '.join(elsewhere)})"
    if text is None:  # a defaults list's entry: Hydra names the primary config for an `override` one
        from launch.config.defaults_order import entry_choosing  # lazy: only to explain a mistake

        where = entry_choosing(group, option, _chosen_configs(parsed, loader), loader)
        if where is not None:
            source, entry = where
            fix = (
                f"set {group}={guess} (or write `- override /{group}: {guess}` for `- {entry}` in {source})"
                if guess
                else f"in {source}'s defaults list, name one of: {', '.join(options)}"
            )
    return Problem(
        key=group, message=f"unknown option '{option}' for config group '{group}'", source=source, fix=fix
    )


def _path_as_option(
    parsed: list[Override], loader: ConfigLoaderImpl, written: dict[str, str]
) -> Problem | None:
    """A group option given as a file's path (`+experiment=conf/experiment/x.yaml`, `model=./m.yaml`):
    Hydra reads the path's directories as nested groups and names a group that does not exist."""
    for override in parsed:
        value = override.value()
        group = override.key_or_group.split("@")[0]
        if not internals.group_exists(loader, group) or not (
            _looks_like_a_path(value) or _names_an_option_below(value, group, loader)
        ):
            continue
        typed = written.get(override.input_line, override.input_line)
        assign = typed.split("=", 1)[0]
        name = Path(value).name.removesuffix(".yaml")
        message = f"'{value}' is a path; an option of config group '{group}' is a name ({group}/NAME.yaml)"
        if name in internals.group_options(loader, group):
            fix = f"{assign}={name}"
        elif Path(value).resolve().parent.name == group and Path(value).is_file():
            fix = f"--config-dir {Path(value).resolve().parent.parent} {assign}={name}"
        else:
            fix = f"put the file in DIR/{group}/{name}.yaml and give --config-dir DIR {assign}={name}"
        return Problem(key=group, message=message, source=f"override `{typed}`", fix=fix)
    return None


def _file_name_as_option(
    parsed: list[Override], loader: ConfigLoaderImpl, written: dict[str, str]
) -> Problem | None:
    """A group option given by its file's name (`+experiment=quickstart.yaml`): Hydra composed it, but
    the run recorded the override as typed (another run's to a resume, `t3rl runs --where`, the note of
    an unfinished run of the same overrides) and `--explain` named `experiment/quickstart.yaml.yaml`;
    `.yml` printed Hydra's deprecation warning from its site-packages file first."""
    for override in parsed:
        value, group = override.value(), override.key_or_group.split("@")[0]
        if not (isinstance(value, str) and value.endswith((".yaml", ".yml")) and "/" not in value):
            continue
        name = value.rpartition(".")[0]
        if not internals.group_exists(loader, group) or name not in internals.group_options(loader, group):
            continue
        typed = written.get(override.input_line, override.input_line)
        return Problem(
            key=group,
            message=f"'{value}' is a file's name; an option of config group '{group}' is named without it "
            f"({group}/{name}.yaml is the option {name})",
            source=f"override `{typed}`",
            fix=f"{typed.split('=', 1)[0]}={name}",
        )
    return None


def _names_an_option_below(value: Any, group: str, loader: ConfigLoaderImpl) -> bool:
    """`experiment/quickstart`, `conf/experiment/quickstart`: folders before an option's name (Hydra
    read them as a nested group `experiment/experiment`, and blamed config.yaml)."""
    return (
        isinstance(value, str)
        and "/" in value
        and value not in internals.group_options(loader, group)
        and Path(value).name.removesuffix(".yaml") in internals.group_options(loader, group)
    )


def _looks_like_a_path(value: Any) -> bool:
    """A file's path rather than a nested group's option (`model=mine/big` with a model/mine/ group)."""
    return (
        isinstance(value, str)
        and "/" in value
        and (value.endswith(".yaml") or value.startswith(("/", ".", "~")) or Path(value).exists())
    )


def _composition_problem(error: Exception, parsed: list[Override], loader: ConfigLoaderImpl) -> Problem:
    from launch.config.composition_fixes import (  # lazy: only to explain a mistake
        entry_named_otherwise,
        group_added_again,
        override_key,
    )
    from launch.config.defaults_entries import misread_entry  # lazy: likewise
    from launch.config.defaults_order import (  # lazy: likewise
        chosen_files,
        group_listed_again,
        null_key,
        override_before_entry,
    )

    message = str(error).strip()
    misread = misread_entry(message, loader, _groups_of(loader))
    if misread is not None:
        return misread
    added = group_added_again(message, parsed, lambda group: internals.group_exists(loader, group))
    if added is not None:
        return added
    renamed = entry_named_otherwise(message, parsed, lambda group: internals.group_options(loader, group))
    if renamed is not None:
        return renamed
    early = override_before_entry(message, loader)
    if early is not None:
        return early
    chosen = _chosen_configs(parsed, loader)
    # `- overide /model: …`: Hydra took a misspelt keyword as a plain entry, choosing the group again
    if "Multiple values for" in message:
        from launch.config.defaults_keywords import misspelt_keyword  # lazy: only to explain a mistake

        misspelt = misspelt_keyword(chosen_files(chosen, loader))
        if misspelt is not None:
            return misspelt
    again = group_listed_again(message, chosen, loader)
    if again is not None:
        return again
    from launch.config.listed_twice import group_listed_twice  # lazy: only to explain a mistake

    twice = group_listed_twice(message, chosen, loader)
    if twice is not None:
        return twice
    nothing = null_key(message, chosen, loader)
    if nothing is not None:
        return nothing
    nulled = next(
        (
            o
            for o in parsed
            if not o.is_delete()
            and not isinstance(o.value(), str | list)
            and internals.group_exists(loader, o.key_or_group)
        ),
        None,
    )
    if nulled is not None:  # `eval=null`, `model=5`: Hydra's words name no key and no override
        group, text = nulled.key_or_group, nulled.input_line
        options = internals.group_options(loader, group)
        value = nulled.value()
        dropped, shown = ("that override", "null") if value is None else (f"`{text}`", value)
        return Problem(
            key=group,
            message=f"config group '{group}' takes one of its options, not {shown}",
            source=f"override `{text}`",
            fix=f"drop {dropped} (the option the config chose stays); or one of: {', '.join(options)}",
        )
    condition = next(
        (
            o
            for o in parsed
            if o.is_delete()
            and o.value() is not None
            and not isinstance(o.value(), str)
            and internals.group_exists(loader, o.key_or_group.split("@")[0])
        ),
        None,
    )
    if condition is not None:  # `~tracking=1e-6`: Hydra shows its Override object's repr
        group, text = override_key(condition), condition.input_line
        options = internals.group_options(loader, condition.key_or_group)
        return Problem(
            key=group,
            message=f"`{text}` deletes group {group} only while its option is the one after `=`, and "
            f"{text.partition('=')[2]} is no option's name (options: {', '.join(options)})",
            source=f"override `{text}`",
            fix=f"drop `{text}`; or `~{group}` to delete the group's entry whatever is chosen",
        )
    quoted = message.split("'")
    name = quoted[1] if len(quoted) > 2 else ""
    text = next((o.input_line for o in parsed if name and name in (o.key_or_group, override_key(o))), None)
    group, conditioned, option = name.partition("=")
    if "No match in the defaults list" in message and conditioned and internals.group_exists(loader, group):
        # `~group=option` deletes the group only while that option is chosen
        text = next((o.input_line for o in parsed if o.is_delete() and o.key_or_group == group), f"~{name}")
        return Problem(
            key=group,
            message=f"`{text}` deletes group {group} only while its option is {option}, which this config "
            "did not choose (the option after `=` is a condition, not what to delete)",
            source=f"override `{text}`",
            fix=f"drop `{text}`; or `~{group}` instead, to delete it whatever is chosen",
        )
    if "No match in the defaults list" in message and name:
        key = name.partition("=")[0]  # `~group@package=option`: Hydra quotes the condition too
        typed = text or next((o.input_line for o in parsed if override_key(o) == key), None)
        source = f"override `{typed}`" if typed else "the defaults list"
        group = key.split("@")[0]
        if "@" in key and internals.group_exists(loader, group):
            return Problem(
                key=key,
                message=f"'{key}' names no entry of the defaults list (group '{group}' is listed as "
                f"'{group}')",
                source=source,
                fix=f"drop `{typed}`; or `~{group}` to delete the group's entry" if typed else f"~{group}",
            )
        known = _groups_of(loader)
        guess = did_you_mean(group, known)
        return Problem(
            key=name,
            message=f"'{name}' is not a config group of the defaults list",
            source=source,
            fix=f"did you mean '{guess}'?"
            if guess
            else f"config groups: {', '.join(known)}; to add one use +{name}=...",
        )
    # Never blank: a blank source reads "(schema default)", and a composition error is no default's.
    source = f"override `{text}`" if text else _source_of_default(message) or "the defaults list"
    return Problem(key=name, message=message, source=source)


def _unmerged(error: OmegaConfBaseException, source: str) -> Problem:
    """A config file's key that the typed node it merges into has no field for: Hydra's own settings
    under a schema of another option (Optuna's `direction` under `hydra/sweeper: basic`). Was: "t3rl failed
    unexpectedly: ConfigKeyError" (or ConfigCompositionException from Hydra's multirun)."""
    key = str(getattr(error, "full_key", "") or "")
    schema = getattr(error, "object_type_str", None) or "its schema"
    message = str(getattr(error, "msg", error)).splitlines()[0]
    section, _, leaf = key.rpartition(".")
    fix = (
        f"in {source}, drop `{leaf}:` under {section}, or choose the option whose schema has it"
        if leaf
        else f"fix {source}"
    )
    return Problem(key or "config", f"{message}: {section or 'the node'} is typed by {schema}", source, fix)


def _in_user_words(problem: Problem, written: dict[str, str]) -> Problem:
    """Quote overrides as the user typed them (`+experiment=x`, not the rewritten `experiment=x`)."""
    for rewritten, original in written.items():
        if problem.source == f"override `{rewritten}`":
            return problem.replace(source=f"override `{original}`")
    return problem


def _chosen_configs(parsed: list[Override], loader: ConfigLoaderImpl) -> list[str]:
    """The configs the command line chooses (`experiment/mine` for `+experiment=mine`)."""
    return [
        f"{o.key_or_group.split('@')[0]}/{o.value()}"
        for o in parsed
        if isinstance(o.value(), str) and internals.group_exists(loader, o.key_or_group.split("@")[0])
    ]


def _source_of_default(message: str) -> str:
    # Hydra words it "In '<config_path>': Could not find ..." when a defaults list names the option.
    if message.startswith("In '"):
        return message.split("'")[1] + ".yaml"
    return ""


def _strip_defaults(cfg: Any) -> None:
    """Remove defaults lists left in structured configs (Hydra does the same after merging)."""
    if not isinstance(cfg, DictConfig) or cfg._is_missing() or cfg._is_none():
        return
    with flag_override(cfg, ["readonly", "struct"], False):
        if cfg._get_flag("HYDRA_REMOVE_TOP_LEVEL_DEFAULTS"):
            cfg._set_flag("HYDRA_REMOVE_TOP_LEVEL_DEFAULTS", None)
            cfg.pop("defaults", None)
    for _key, value in cfg.items_ex(resolve=False):
        _strip_defaults(value)
