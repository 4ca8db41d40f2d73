"""A composition with Hydra, its interpolations resolved by OmegaConf: the plain config the schema
validates and its provenance, or every problem in words a user can act on.

`launch.config.resolved` comes here for what the direct composition (`launch.config.direct`) leaves to
Hydra, and the commands that inspect a composition (`t3rl show`, `score`, `check-template`) for its
layers. Importing this module imports Hydra and OmegaConf.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.basecontainer import BaseContainer
from omegaconf.errors import OmegaConfBaseException

from launch.config.compose import Composition, compose
from launch.config.env_references import keep_environment_references, unset_variables
from launch.config.errors import ConfigError, Problem, did_you_mean
from launch.config.plain import Plain, Reads
from launch.config.provenance import Provenance
from launch.config.search_path import PACKAGE, package_dir
from launch.config.secrets import remember_config, remember_overrides

# The resolvers a t3rl config may name: OmegaConf's own (t3rl registers none).
OWN_RESOLVERS = "oc."
# OmegaConf's resolvers whose result depends on the config alone.
PURE_RESOLVERS = frozenset(
    {"oc.create", "oc.decode", "oc.deprecated", "oc.select", "oc.dict.keys", "oc.dict.values"}
)


@dataclass(frozen=True)
class Composed:
    """A composed config with interpolations resolved, before schema and cross-field validation."""

    composition: Composition
    provenance: Provenance
    data: dict[str, Any]


def compose_resolved(overrides: Sequence[str], config_dirs: Sequence[str] = ()) -> Composed:
    """Compose and resolve interpolations only (for inspecting configs that may not validate)."""
    remember_overrides(overrides)
    composition = compose(overrides, config_dirs)
    keep_environment_references(composition.config)  # a job's variables and credentials stay references
    provenance = Provenance.from_layers(composition.layers, composition.overrides)
    data = _plain(composition, provenance)
    remember_config(data)  # masked from here on wherever they reappear (show, errors, files, logs)
    return Composed(composition, provenance, data)


def plain_with_hydra(overrides: Sequence[str], config_dirs: Sequence[str], reads: Reads) -> Plain:
    """`compose_resolved` as plain data, recording in `reads` what its resolvers read."""
    with recording_resolvers(reads):
        composed = compose_resolved(overrides, config_dirs)
    hydra_node = composed.composition.hydra
    hydra = OmegaConf.to_container(hydra_node, resolve=False) if hydra_node else {}
    return Plain(composed.data, composed.provenance, hydra)  # type: ignore[arg-type]


def _plain(composition: Composition, provenance: Provenance) -> dict[str, Any]:
    """The config with interpolations resolved; a broken interpolation names its key and source."""
    unset = unset_variables(provenance)
    if unset:
        raise ConfigError(unset)
    try:
        data = OmegaConf.to_container(composition.config, resolve=True, throw_on_missing=True)
    except OmegaConfBaseException as error:
        # OmegaConf names a list's element `pass_k[1]`; every key t3rl reads and prints is dotted
        key = re.sub(r"\[(\d+)\]", r".\1", str(getattr(error, "full_key", "") or ""))
        message = str(getattr(error, "msg", error)).splitlines()[0]
        replaced = _section_replaced(provenance, key, message) or _section_listed(
            composition, provenance, key
        )
        if replaced is not None:
            raise ConfigError([replaced]) from None
        fix = _interpolation_fix(composition, provenance, key, message)
        raise ConfigError(
            [Problem(key, f"cannot resolve the value: {message}", provenance.source(key), fix)]
        ) from None
    assert isinstance(data, dict)
    return data


@contextlib.contextmanager
def recording_resolvers(reads: Reads) -> Iterator[None]:
    """Record in `reads` every resolver call made inside the block (the variables `oc.env` reads).

    Inside it, a config sees OmegaConf's own `oc.*` resolvers alone: one that another part of the process
    registered (Hydra's `now`, `hydra` and `python_version`, as soon as a sweeper creates a Hydra app)
    would otherwise make `seed=${now:%H}` valid in that process and refused in a fresh one."""
    registry = BaseContainer._resolvers
    hidden = {name: registry.pop(name) for name in list(registry) if not name.startswith(OWN_RESOLVERS)}
    originals = dict(registry)
    wrappers = {name: _recording(name, resolver, reads) for name, resolver in originals.items()}
    registry.update(wrappers)
    try:
        yield
    finally:
        # A resolver registered meanwhile went unrecorded: its composition is not cached.
        reads.impure.update(set(registry) - set(originals))
        for name, wrapper in wrappers.items():
            if registry.get(name) is wrapper:
                registry[name] = originals[name]
        for name, resolver in hidden.items():
            registry.setdefault(name, resolver)


def _recording(name: str, resolver: Callable[..., Any], reads: Reads) -> Callable[..., Any]:
    # OmegaConf calls a registered resolver as (config, parent, node, args, args_str).
    def record(config: Any, parent: Any, node: Any, args: tuple[Any, ...], args_str: tuple[str, ...]) -> Any:
        if name == "oc.env" and args:
            reads.env[str(args[0])] = os.environ.get(str(args[0]))
        elif name not in PURE_RESOLVERS and not _in_hydra_node(node):
            reads.impure.add(name)
        return resolver(config, parent, node, args, args_str)

    return record


def _in_hydra_node(node: Any) -> bool:
    """A value of Hydra's own node (`hydra.run.dir: outputs/${now:…}`, which Hydra's merge resolves once
    its resolvers are registered): t3rl keeps that node unresolved (`plain_with_hydra`), so what the
    resolver returned there is in no composition's result."""
    key = node._get_full_key(None) if node is not None else ""
    return str(key).startswith("hydra.")


def _section_replaced(provenance: Provenance, key: str, message: str) -> Problem | None:
    """A section an override gave a scalar (`model.parsers=5`) that another file's interpolation reads
    into (`${model.parsers.think_tags}`): the override is the cause, not the file that reads it, and a
    section is a mapping whatever reads it (as the schema says when nothing interpolates it)."""
    found = re.search(r"node `([^`]+)` is not a container and thus cannot contain `([^`]+)`", message)
    origin = provenance.origin(found.group(1)) if found else None
    if found is None or origin is None or not origin.source.startswith("override `"):
        return None
    return _not_a_mapping(found.group(1), found.group(2), origin.source, origin.raw, key)


def _not_a_mapping(section: str, child: str, source: str, raw: Any, key: str) -> Problem:
    """`section`, which `key` reads `child` of, given `raw` by `source` (an override, or a config file)."""
    message = f"{section} must be a mapping (a section of keys), not {raw!r}: {key} reads {section}.{child}"
    if source.startswith("override `"):
        typed = source.removeprefix("override ")
        fix = f"drop {typed} ({section} is a section: set its keys, {section}.<key>=…)"
    else:  # no override gives a file's section its keys back
        fix = f"in {source.split(' (')[0]}, give {section} keys ({child}: …), not {raw!r}"
    return Problem(section, message, source, fix)


def _section_listed(composition: Composition, provenance: Provenance, key: str) -> Problem | None:
    """A section given a list, by an override or a file (`parsers: [1]`), that an interpolation reads a
    key of (`${model.parsers.think_tags}`): OmegaConf says "Index 'think_tags' (str) is not an int", at
    the key that reads it."""
    parent, _, leaf = key.rpartition(".")
    holder = OmegaConf.select(composition.config, parent, throw_on_missing=False) if parent else None
    node = holder._get_node(leaf) if isinstance(holder, DictConfig) and leaf else None
    raw = node._value() if node is not None else None
    found = re.fullmatch(r"\$\{([\w.]+)\}", raw) if isinstance(raw, str) else None
    if found is None:
        return None
    parts = found.group(1).split(".")
    for depth in range(1, len(parts)):
        section = ".".join(parts[:depth])
        origin = provenance.origin(section)
        if origin is not None and isinstance(OmegaConf.select(composition.config, section), ListConfig):
            return _not_a_mapping(section, parts[depth], origin.source, origin.raw, key)
    return None


def _interpolation_fix(composition: Composition, provenance: Provenance, key: str, message: str) -> str:
    """The value with its misspelt interpolation key corrected, when a close key exists."""
    generic = "fix the ${...} interpolation (it must name an existing key, or ${oc.env:VAR,default})"
    found = re.search(r"Interpolation key '([^']+)' not found", message)
    origin = provenance.origin(key)
    raw = origin.raw if origin is not None else None
    typed = (
        origin.source.removeprefix("override ") if origin and origin.source.startswith("override `") else ""
    )
    if "Recursive interpolation" in message and typed:
        # a value that reads itself, through other keys or not, has none: without the override it had one
        return f"drop {typed} (the value reads itself: {raw})"
    if not found and typed and isinstance(raw, str):
        return _unresolvable_fix(key, raw, typed, message)
    if not found or not isinstance(raw, str):
        return generic
    missing = found.group(1)
    parent = missing.rpartition(".")[0]
    node = OmegaConf.select(composition.config, parent) if parent else composition.config
    keys = [str(k) for k in node] if OmegaConf.is_dict(node) else []
    guess = _resolving_guess(composition, key, raw, missing, keys)
    if guess is None:
        # typed on the command line: without it the key has the value the files give it
        dropped = typed and f"drop {typed} (the interpolation names no key '{missing}', nor one like it)"
        return _missing_key_fix(composition, provenance, missing, key) or dropped or generic
    corrected = raw.replace("${" + missing + "}", "${" + (f"{parent}.{guess}" if parent else guess) + "}")
    target = f"{parent}.{guess}" if parent else guess
    return f"set {key}={corrected} (the interpolation names no key '{missing}'; did you mean '{target}'?)"


def _resolving_guess(
    composition: Composition, key: str, raw: str, missing: str, keys: list[str]
) -> str | None:
    """The key nearest to `missing`'s leaf whose correction resolves at `key`: the nearest can be `key`
    itself (`eval.repeats: ${eval.reps}` → `${eval.repeats}`), or a key that reads `key` back, and a fix
    that makes the value read itself fails as "Recursive interpolation" in turn."""
    parent, _, leaf = missing.rpartition(".")
    candidates = list(keys)
    while (guess := did_you_mean(leaf, candidates)) is not None:
        target = f"{parent}.{guess}" if parent else guess
        trial = composition.config.copy()
        OmegaConf.update(trial, key, raw.replace("${" + missing + "}", "${" + target + "}"), force_add=True)
        try:
            OmegaConf.select(trial, key, throw_on_resolution_failure=True)
        except OmegaConfBaseException:
            candidates.remove(guess)
            continue
        return guess
    return None


_CWD = "${hydra:runtime.cwd}"


def _unresolvable_fix(key: str, raw: str, typed: str, message: str) -> str:
    """An override whose interpolation no resolver t3rl has reads (Hydra's `${hydra:runtime.cwd}` and
    `${now:…}`, which only a Hydra app registers; `${..seed}` above the root): its value without the
    override, or, for the directory t3rl starts in, the relative path that means it (t3rl reads a relative
    path from there). The generic words named no fix that validates."""
    relative = raw.removeprefix(_CWD + "/").lstrip("/")
    if raw.startswith(_CWD + "/") and relative and "${" not in relative:  # a path below it
        return (
            f"set {key}={relative} (a relative path is read from the directory t3rl starts in, which "
            f"{_CWD} names; t3rl resolves no hydra: interpolation)"
        )
    unsupported = re.search(r"Unsupported interpolation type (\S+)", message)
    why = (
        f"t3rl registers no resolver {unsupported.group(1)}: only oc.env and OmegaConf's oc.* resolvers"
        if unsupported
        else f"{raw} names no key"
    )
    return f"drop {typed} ({why})"


def _swapped_in(provenance: Provenance, key: str) -> str | None:
    """The group option typed on the command line (`env=bfcl_multi_turn`, not `+experiment=…`) that chose
    the shipped file `key` comes from: a swap whose keys differ from the option it replaced (a file of the
    user's own lacks the key: its fix is the file)."""
    origin = provenance.origin(key)
    text = origin.chosen_on_line if origin is not None else None
    if text is None:
        return None
    shipped = package_dir(PACKAGE)
    in_package = shipped is not None and Path(origin.source).resolve().is_relative_to(shipped)
    return text if in_package and not text.lstrip("`+").startswith("experiment=") else None


def _missing_key_fix(composition: Composition, provenance: Provenance, missing: str, key: str) -> str | None:
    """Where a key an interpolation reads is missing: the file that set its nearest existing ancestor
    (a config of your own that lacks a key t3rl's options have), not the file holding the reference."""
    parts = missing.split(".")
    for depth in range(len(parts) - 1, 0, -1):
        ancestor = ".".join(parts[:depth])
        node = OmegaConf.select(composition.config, ancestor)
        if node is not None:
            from launch.config.schema_walk import field_names  # lazy: only to explain a missing key

            plain = OmegaConf.to_container(composition.config)
            assert isinstance(plain, dict)
            fields = field_names(ancestor, plain)
            swap = _swapped_in(provenance, ancestor) or _swapped_in(provenance, key)
            # An empty section (a user's empty option file) tells the schema no kind: its fields are
            # not the ones its options have, and the file that left it empty is the one to name.
            empty = OmegaConf.is_dict(node) and len(node) == 0
            if fields and parts[depth] not in fields and not empty:  # no option has it: no file lacks it
                return f"drop {swap} (the option it replaced fits)" if swap else None
            from launch.config.schema_errors import default_of  # lazy: only to explain a missing key

            default = default_of(missing, plain) if depth == len(parts) - 1 else None
            if default is not None:  # the schema's default is its one truth: no shipped file restates it
                return (
                    f"add +{missing}={default} (t3rl's default, which no config file sets: an "
                    "interpolation reads only the keys files and overrides set)"
                )
            source = provenance.source(ancestor)
            where = f"in {source}" if source else "in the config"
            give = (
                f"give {missing} a value {where}: it sets {ancestor} without {'.'.join(parts[depth:])} "
                f"(`t3rl show --explain {missing}` shows t3rl's default one)"
            )
            return f"drop {swap} (the option it replaced fits); or {give}" if swap else give
    return None
