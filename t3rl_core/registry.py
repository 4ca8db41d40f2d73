"""Registries by name: a config names an entry, the registry imports and builds it.

Each built-in entry points at two dotted paths, so that validating a config only imports the (light)
pydantic config module and building it imports the (possibly heavy) implementation.

A name that is not built in is a plugin (see `t3rl_core.plugins` for what a plugin object is):
- an import path, `name: my_pkg.module:MyReward`, imported when the config is validated;
- or an entry point of the registry's group (`[project.entry-points."t3rl.rewards"] exact = "…"`),
  looked up only when a name is neither built in nor an import path, so built-in names never pay for
  scanning the installed distributions.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, BeforeValidator, TypeAdapter, ValidationError
from pydantic_core import core_schema

from t3rl_core.counts import counted
from t3rl_core.import_paths import resolve as resolve_import_path
from t3rl_core.import_paths import spelt_otherwise
from t3rl_core.records import Record

if TYPE_CHECKING:
    # Imported where entry points are scanned: a config of built-in names never pays for it.
    import importlib.metadata  # lazy: importlib.metadata, only when a name is not built in
    from collections.abc import Iterator

    from packaging.requirements import Requirement
    from pydantic import GetCoreSchemaHandler

BUILT_IN = "built-in"
# Modules `t3rl plan` and `t3rl validate` never load (seconds of CPU each): a plugin whose import loads
# one is named by pre-flight (launch/checks/rules/components.py).
HEAVY_MODULES = ("torch", "transformers", "ray", "sglang", "wandb")
# How `import_effects` names a thread that keeps the process from exiting (pre-flight reads it).
NOT_A_DAEMON = "not a daemon: the process cannot exit before it ends"


class UnknownNameError(ValueError):
    """A config names a registry entry that does not exist."""

    def __init__(self, kind: str, name: str, known: list[str]) -> None:
        import difflib  # lazy: only for an unknown name, not on every cold validate

        # The same name spelt otherwise (`Exact`, `my-world` for `my_world`) first: difflib compares
        # text as written and found nothing for `BFCL-MULTI-TURN`.
        same = spelt_otherwise(name, known)
        close = [same] if same else difflib.get_close_matches(name, known, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        super().__init__(
            f"unknown {kind} '{name}'; known: {', '.join(sorted(known))}.{hint} "
            "A plugin is named by its import path, e.g. my_pkg.module:MyClass"
        )
        self.kind, self.name, self.known, self.suggestion = kind, name, known, close[0] if close else None


class PluginError(ValueError, ImportError):
    """A plugin named in a config cannot be used: it does not import, or is not a plugin of its kind.

    A ValueError, so that pydantic reports it at the config key that names the plugin; an ImportError,
    so that code looking through every registered name skips the plugins it cannot load.
    """

    def __init__(self, kind: str, name: str, reason: str, fix: str, nearest: str | None = None) -> None:
        super().__init__(f"{kind} plugin '{name}': {reason}")
        self.kind, self.name, self.reason, self.fix = kind, name, reason, fix
        # The existing import path closest to a misspelt one.
        self.nearest = nearest


def load_object(path: str) -> Any:
    """Import `package.module:attr` (or slime-style `package.module.attr`) and return the attribute."""
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    target: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        target = getattr(target, part)
    return target


def is_import_path(name: str) -> bool:
    """`pkg.module:Attr`: the form a config uses to name a plugin directly."""
    module, sep, attr = name.partition(":")
    return bool(sep and module and attr)


class Entry(Record):
    """Where a registry entry lives: its config model and its factory, as `module:attr` paths (or, for
    a plugin already imported, the objects themselves)."""

    config: str | type[BaseModel]
    factory: str | Any
    # "built-in", or where a plugin came from (its import path, or its entry point and distribution).
    source: str = BUILT_IN
    # The plugin's import path `pkg.module:Object` (what a Ray job must be able to import); None for
    # built-ins.
    target: str | None = None
    # The heavy packages importing the plugin loaded (`loaded_since`; pre-flight warns: plan and validate
    # load none).
    heavy: tuple[str, ...] = ()
    # What importing the plugin did to this process besides defining it (`import_effects`): pre-flight
    # warns, since every process that imports it (each stage, slime's rollout workers) does it again.
    effects: tuple[str, ...] = ()
    # What its distribution requires that is not installed here (`missing_requirements`): pre-flight warns.
    missing: tuple[str, ...] = ()


class Listed(Record):
    """One name a registry answers to, and where it comes from (for `t3rl ls`)."""

    name: str
    source: str
    target: str = ""


class Registry:
    """Name → (config model, factory), imported on first use.

    `group` is the entry-point group plugins register under; `base` the config class (as a path) every
    plugin config must extend; `attribute` the plugin object's attribute that is this registry's factory
    (the data registry reads an env plugin's `prepare`), None = the object itself.
    """

    # A plain class, not a dataclass: every cold command imports this module, and a dataclass compiles
    # its methods from text as its class is created (~2 M instructions).
    def __init__(
        self,
        kind: str,
        entries: Mapping[str, Entry],
        group: str | None = None,
        base: str | None = None,
        attribute: str | None = None,
    ) -> None:
        self.kind, self.entries, self.group, self.base, self.attribute = kind, entries, group, base, attribute
        self._plugins: dict[str, Entry] = {}

    def names(self) -> list[str]:
        """Built-in names and the names of installed entry points (scans the installed distributions)."""
        return sorted({*self.entries, *self._entry_points()})

    def built_in(self, name: str) -> bool:
        return name in self.entries

    def entry(self, name: str) -> Entry:
        if name in self.entries:
            return self.entries[name]
        if name not in self._plugins:
            self._plugins[name] = self._plugin(name)
        return self._plugins[name]

    def config_class(self, name: str) -> type[BaseModel]:
        config = self.entry(name).config
        return load_object(config) if isinstance(config, str) else config

    def validate(self, data: Any) -> BaseModel:
        """Validate a mapping with a `name` key into that entry's config model."""
        if isinstance(data, BaseModel):
            return data
        if not isinstance(data, Mapping) or "name" not in data:
            raise ValueError(
                f"a {self.kind} section needs a 'name' key (one of: {', '.join(sorted(self.entries))}, "
                "or a plugin's import path pkg.module:Class)"
            )
        name = str(data["name"])
        if name in self.entries and self.group and name in entry_point_names(self.group):
            self._refuse_a_clash(name)
        return self.config_class(name).model_validate(dict(data))

    def _refuse_a_clash(self, name: str) -> None:
        """An installed entry point of the registry's group named like a built-in: which of the two the
        name means cannot be told (the built-in ran, the plugin its user installed never did)."""
        point = entry_points(self.group or "").get(name)
        if point is None:  # the scan read an entry point importlib does not list (another group's file)
            return
        built_in = _path(self.entries[name].factory)
        raise PluginError(
            self.kind,
            name,
            f"'{name}' is both t3rl's built-in {self.kind} ({built_in}) and an entry point of "
            f"{self.group} ({point.value}{_distribution(point)}): the name cannot tell which one is meant",
            f"for the plugin, name it by its import path: name={point.value}; for the built-in, rename "
            f'the plugin\'s entry point under [project.entry-points."{self.group}"] and reinstall it, or '
            f"pip uninstall {point.dist.name if point.dist is not None else 'its distribution'}",
        )

    def factory(self, name: str) -> Any:
        """The imported factory of an entry."""
        factory = self.entry(name).factory
        return load_object(factory) if isinstance(factory, str) else factory

    def build(self, config: BaseModel, **kwargs: Any) -> Any:
        """Call the factory of the entry named by `config.name` with the config."""
        return self.factory(config.name)(config, **kwargs)  # type: ignore[attr-defined]

    def listing(self) -> list[Listed]:
        """Every built-in entry and installed entry-point plugin with its source."""
        rows = [Listed(name, BUILT_IN, _path(entry.factory)) for name, entry in sorted(self.entries.items())]
        group = self.group or ""
        for name, first in sorted(self._entry_points().items()):
            claims = claimants(group, name)
            for point in claims or (first,):
                source = _entry_point_source(group, point)
                if name in self.entries:
                    source += ", clashes with the built-in of the same name: a config naming it is refused"
                elif claims:
                    source += f", unusable by this name: {counted(len(claims), 'distribution')} register it"
                rows.append(Listed(name, source, point.value))
        return rows

    # ------------------------------------------------------------------------------------- plugins

    def _entry_points(self) -> dict[str, importlib.metadata.EntryPoint]:
        return entry_points(self.group) if self.group else {}

    def _plugin(self, name: str) -> Entry:
        if is_import_path(name):
            return self._from_object(name, name, f"import path {name}")
        point = self._entry_points().get(name)
        group = self.group or ""
        if point is None:
            astray = _in_other_groups(group, name)
            if astray:
                raise PluginError(self.kind, name, *_astray(group, name, astray))
            raise UnknownNameError(self.kind, name, self.names())
        problem = entry_point_problem(group, name)
        if problem is not None:
            raise PluginError(self.kind, name, *problem)
        entry = self._from_object(name, point.value, _entry_point_source(group, point))
        return entry._replace(missing=missing_requirements(point))

    def _from_object(self, name: str, path: str, source: str) -> Entry:
        module = path.partition(":")[0]
        before = list(sys.modules)
        state = process_state()
        try:
            try:
                target = load_object(path)
            finally:  # however the import ended: the cwd put back, the writes no longer watched
                effects = import_effects(state)
        except ImportError as exc:
            nearest = _nearest(path)
            raise PluginError(
                self.kind,
                name,
                f"cannot import {module}: {exc}",
                _not_importable_fix(module.split(".")[0]),
                nearest,
            ) from exc
        except AttributeError as exc:
            from t3rl_core.shadowed import namesake  # lazy: only for a name the module lacks

            other = namesake(module)
            if other is not None:  # the user's file of that name is not what Python loads for it
                loaded = getattr(sys.modules.get(module.partition(".")[0]), "__file__", None)
                raise PluginError(
                    self.kind,
                    name,
                    f"{module} has no {path.partition(':')[2]}: Python loads '{module}' from {loaded}, "
                    f"not from {other}, which has that name too",
                    f"rename {other.name if other.name != '__init__.py' else other.parent.name} (e.g. "
                    f"my_{module.partition('.')[0]}) and name it so: my_{path}",
                ) from exc
            nearest = _nearest(path)
            raise PluginError(
                self.kind,
                name,
                f"{module} has no {path.partition(':')[2]}",
                "check the name after ':'",
                nearest,
            ) from exc
        except (Exception, SystemExit) as exc:  # its module failed while importing: say so, not crash
            # SystemExit too: a module calling sys.exit() (a script's `main()` at its top) ended
            # `t3rl validate` with the plugin's exit code and not a word of why.
            raise PluginError(
                self.kind, name, f"importing {module} raised {type(exc).__name__}: {exc}", f"fix {module}"
            ) from exc
        heavy = tuple(sorted(loaded_since(before)))
        if isinstance(target, Entry):
            return Entry(target.config, target.factory, source, path, heavy, effects)
        config = getattr(target, "Config", None)
        self._check_config(name, config)
        factory = getattr(target, self.attribute, None) if self.attribute else target
        if self.attribute and factory is None:
            raise PluginError(
                self.kind, name, f"has no '{self.attribute}'", f"define {path}.{self.attribute}"
            )
        return Entry(config, factory, source, path, heavy, effects)

    def _check_config(self, name: str, config: Any) -> None:
        base = load_object(self.base) if self.base else BaseModel
        if not (isinstance(config, type) and issubclass(config, base)):
            raise PluginError(
                self.kind,
                name,
                f"its `Config` is {config!r}, not a subclass of {base.__module__}.{base.__name__}",
                f"give the plugin class a `Config = MyConfig` attribute, MyConfig extending {base.__name__}",
            )
        try:
            TypeAdapter(config.model_fields["name"].annotation).validate_python(name)
        except ValidationError:
            raise PluginError(
                self.kind,
                name,
                f"{config.__name__}.name does not accept '{name}', the name the config uses",
                "declare `name: str` in the plugin's Config (an import path or entry-point name is its name)",
            ) from None
        if config.model_config.get("extra") != "forbid":
            raise PluginError(
                self.kind,
                name,
                f"{config.__name__} accepts unknown keys (extra={config.model_config.get('extra')!r})",
                "do not override model_config['extra']: t3rl configs reject unknown keys",
            )


class ProcessState(Record):
    """What a plugin's import may change in the process that imports it."""

    cwd: str
    environ: dict[str, str]
    threads: frozenset[int]
    listing: frozenset[str]
    # Where in `_WRITES` the paths written since begin.
    writes_from: int = 0


# Audit events that write a file or directory, and which argument is the path written: a plugin's import
# (or a component's build) writing outside the working directory (a cache under ~, a lock in /tmp) was
# unsaid, as only the working directory's listing was compared.
_WRITING_EVENTS = {"open": 0, "os.mkdir": 0, "os.rename": 1, "shutil.copyfile": 1, "sqlite3.connect": 0}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
# The absolute paths written while some ProcessState is open (`_watching` of them), in order; whether
# the hook is installed.
_WRITES: list[str] = []
_watching = [0]
_hooked = [False]


def _on_audit(event: str, args: tuple[Any, ...]) -> None:
    """sys.addaudithook's hook, installed at the first plugin import (it cannot be removed): records the
    paths written while a plugin is imported or built; nothing otherwise."""
    if not _watching[0] or event not in _WRITING_EVENTS:
        return
    if event == "open" and not (isinstance(args[2], int) and args[2] & _WRITE_FLAGS):
        return  # read only
    path = args[_WRITING_EVENTS[event]]
    if isinstance(path, str | os.PathLike) and "__pycache__" not in os.fspath(path):  # its bytecode
        _WRITES.append(os.path.abspath(path))


def process_state() -> ProcessState:
    import threading  # lazy: only when a plugin is imported (a cold --help loads no threading)

    if not _hooked[0]:
        sys.addaudithook(_on_audit)
        _hooked[0] = True
    _watching[0] += 1
    try:
        cwd = os.getcwd()
        listing = frozenset(os.listdir(cwd))
    except OSError:  # a working directory removed under the process: nothing to compare with
        cwd, listing = "", frozenset()
    threads = frozenset(t.ident or 0 for t in threading.enumerate())
    return ProcessState(cwd, dict(os.environ), threads, listing, len(_WRITES))


def import_effects(before: ProcessState, settle_s: float = 0.0) -> tuple[str, ...]:
    """What changed since `before` (a plugin's import, or a component's build and close), each said; the
    working directory is put back (relative paths of the run, resolved after the import, would follow
    it). Values of environment variables are not shown: they may be credentials. A thread started since
    is waited for up to `settle_s` seconds in all (one a close asked to stop may take a moment)."""
    import threading  # lazy: see process_state

    deadline = time.monotonic() + settle_s
    for thread in threading.enumerate():
        if (thread.ident or 0) not in before.threads and thread is not threading.current_thread():
            thread.join(max(0.0, deadline - time.monotonic()))

    _watching[0] = max(0, _watching[0] - 1)
    found = []
    try:
        now = os.getcwd()
    except OSError:
        now = before.cwd
    if before.cwd and now != before.cwd:
        found.append(f"changed the working directory to {now} (t3rl put it back)")
        os.chdir(before.cwd)
    changed = sorted(
        k for k in before.environ.keys() | os.environ.keys() if before.environ.get(k) != os.environ.get(k)
    )
    if changed:
        found.append(f"set or removed environment variables {', '.join(changed)}")
    started = [t for t in threading.enumerate() if (t.ident or 0) not in before.threads]
    if started:
        names = ", ".join(f"{t.name}{'' if t.daemon else f' ({NOT_A_DAEMON})'}" for t in started)
        found.append(f"started threads {names}")
    try:
        written = sorted(set(os.listdir(before.cwd)) - before.listing) if before.cwd else []
    except OSError:
        written = []
    if written:
        found.append(f"wrote {', '.join(written[:5])} into the working directory")
    inside = os.path.join(before.cwd, "") if before.cwd else None
    outside = sorted(set(_WRITES[before.writes_from :]) - {before.cwd})
    if not _watching[0]:
        _WRITES.clear()  # no state reads them any more
    outside = [path for path in outside if inside is None or not path.startswith(inside)]
    if outside:
        more = f" (and {len(outside) - 5} more)" if len(outside) > 5 else ""
        found.append(f"wrote {', '.join(outside[:5])}{more} outside the working directory")
    return tuple(found)


# A package whose import loads this many of its modules is heavy whatever its name: pandas (294 modules,
# ~0.4 s of CPU), openai (487, ~0.6 s), litellm (748, ~2.6 s) were never named, the list above alone
# being read; numpy (84) and requests (68) stay below it.
HEAVY_MODULE_COUNT = 150
# t3rl's own packages: what a plugin's build imports of them is t3rl's, paid by every stage anyway.
_OWN = frozenset({"launch", "t3rl_core", "t3rl_conf"})


def loaded_since(before: Iterable[str]) -> set[str]:
    """The heavy packages imported since the modules `before` were: the HEAVY_MODULES, and every other
    top-level package of which HEAVY_MODULE_COUNT modules or more were (read by what an import loaded,
    not by a list of names)."""
    known = set(before)
    counts = Counter(name.partition(".")[0] for name in list(sys.modules) if name not in known)
    bulky = {package for package, n in counts.items() if n >= HEAVY_MODULE_COUNT and package not in _OWN}
    return bulky | {name for name in HEAVY_MODULES if name in counts}


# Per group, the names two or more installed distributions register for different objects, with
# each entry point: filled by `entry_points`' scan, so that one scan serves both.
_CLAIMED_TWICE: dict[str, dict[str, tuple[importlib.metadata.EntryPoint, ...]]] = {}


@cache
def entry_points(group: str) -> dict[str, importlib.metadata.EntryPoint]:
    """The installed entry points of a group by name (scanned once per process); a name several
    distributions register is the first one's here, `claimants` has them all."""
    import importlib.metadata  # lazy: importlib.metadata, only when a name is not built in

    found: dict[str, dict[str, importlib.metadata.EntryPoint]] = {}
    for point in importlib.metadata.entry_points(group=group):
        # The same target listed twice (one distribution on two sys.path entries) is one plugin.
        found.setdefault(point.name, {}).setdefault(point.value, point)
    _CLAIMED_TWICE[group] = {name: tuple(by.values()) for name, by in found.items() if len(by) > 1}
    return {name: next(iter(by.values())) for name, by in found.items()}


def entry_point_names(group: str) -> frozenset[str]:
    """The names of `group`'s entry points in the distributions on sys.path (`_t3rl_entry_names`)."""
    return _t3rl_entry_names().get(group, frozenset())


@cache
def _t3rl_entry_names() -> dict[str, frozenset[str]]:
    """The entry names of every t3rl group (`[t3rl.…]`) in the distributions on sys.path, read from
    their entry_points.txt alone, once per process: no importlib.metadata (~40 ms a cold validate of
    built-in names never paid; this reads ~2 ms of small files). Only a name found here is looked up
    through importlib.metadata."""
    names: dict[str, set[str]] = {}
    for directory in sys.path:
        try:
            found = os.scandir(directory or ".")
        except OSError:
            continue
        with found:
            for item in found:
                if not item.name.endswith((".dist-info", ".egg-info")):
                    continue
                try:
                    with open(os.path.join(item.path, "entry_points.txt"), encoding="utf-8") as file:
                        text = file.read()
                except (OSError, UnicodeDecodeError):
                    continue
                if "[t3rl" in text:
                    _read_t3rl_sections(text, names)
    return {group: frozenset(found) for group, found in names.items()}


def _read_t3rl_sections(text: str, names: dict[str, set[str]]) -> None:
    """Add the entry names of each `[t3rl…]` section of an entry_points.txt (INI: `name = mod:obj`)."""
    section: set[str] | None = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            group = line.strip("[] ")
            section = names.setdefault(group, set()) if group.startswith("t3rl") else None
        elif section is not None and "=" in line and not line.startswith(("#", ";")):
            section.add(line.partition("=")[0].strip())


def claimants(group: str, name: str) -> tuple[importlib.metadata.EntryPoint, ...]:
    """Every installed entry point of `group` called `name` when more than one distribution registers
    it for different objects (which one importlib lists first follows sys.path order), else ()."""
    entry_points(group)
    return _CLAIMED_TWICE.get(group, {}).get(name, ())


def entry_point_problem(group: str, name: str) -> tuple[str, str] | None:
    """(why, fix) when the installed entry point `name` of `group` cannot be used as it is: several
    distributions register the name, or its distribution requires another version of t3rl or of a
    distribution installed here; None when it can."""
    claims = claimants(group, name)
    if claims:
        return _claimed_twice(group, name, claims), _pick_one(claims)
    point = entry_points(group).get(name)
    return _unmet_requirement(point) if point is not None else None


def _in_other_groups(group: str, name: str) -> list[importlib.metadata.EntryPoint]:
    """Entry points called `name` in a t3rl group other than `group` (a misspelt group, `t3rl.reward`,
    or another kind's): scanned only once a name is found nowhere."""
    import importlib.metadata  # lazy: only for a name no group of this kind has

    if not group:
        return []
    found = importlib.metadata.entry_points().select(name=name)
    return [point for point in found if point.group != group and point.group.startswith("t3rl")]


def _astray(group: str, name: str, points: list[importlib.metadata.EntryPoint]) -> tuple[str, str]:
    where = ", ".join(f"{point.group}{_distribution(point)}" for point in points)
    return (
        f"no entry point of group {group} is named '{name}'; it is registered in {where}, which t3rl does "
        f"not read for this section",
        f"name it by its import path (name={points[0].value}), or register it under "
        f'[project.entry-points."{group}"] and reinstall its package',
    )


def _claimed_twice(group: str, name: str, claims: tuple[importlib.metadata.EntryPoint, ...]) -> str:
    owners = ", ".join(f"{point.value}{_distribution(point)}" for point in claims)
    return (
        f"{len(claims)} installed distributions register '{name}' in {group}: {owners}; which one runs "
        "would depend on the order of sys.path"
    )


def _pick_one(claims: tuple[importlib.metadata.EntryPoint, ...]) -> str:
    paths = " or ".join(f"name={point.value}" for point in claims)
    others = ", ".join(point.dist.name for point in claims if point.dist is not None)
    return f"name the one you mean by its import path ({paths}), or pip uninstall the others of {others}"


def _distribution(point: importlib.metadata.EntryPoint) -> str:
    dist = point.dist
    return f" ({dist.name} {dist.version})" if dist is not None else ""


def _unmet_requirement(point: importlib.metadata.EntryPoint) -> tuple[str, str] | None:
    """(why, fix) when the entry point's distribution requires another version of a distribution
    installed here: of t3rl (a plugin built for another release: its hooks may call what this one
    lacks), or of anything else it runs with (installed with --no-deps, or upgraded since: pip's own
    check, which would have refused the pair). None when every requirement is met, or names a
    distribution not installed here (its import says so, where it is needed)."""
    dist = point.dist
    if dist is None:
        return None
    for requirement, installed in _requirements(dist):
        if installed is None:  # not installed here: `missing_requirements`
            continue
        if requirement.specifier.contains(installed, prereleases=True):
            continue
        needed = "t3rl" if requirement.name.lower() == "t3rl" else requirement.name
        if needed == "t3rl":
            fix = (
                f"install a release of {dist.name} made for t3rl {installed} "
                f"(pip install '{dist.name}' with a version that allows it), or the t3rl it requires"
            )
        else:
            fix = (
                f"pip install '{requirement.name}{requirement.specifier}' (what {dist.name} allows), or a "
                f"release of {dist.name} made for {needed} {installed}"
            )
        return (
            f"{dist.name} {dist.version} requires {requirement}, and {needed} {installed} is installed",
            fix,
        )
    return None


def missing_requirements(point: importlib.metadata.EntryPoint) -> tuple[str, ...]:
    """The requirements of the entry point's distribution that name a distribution not installed here
    (t3rl aside: a checkout run without its metadata): the plugin imports, and the code that needs one
    fails with an ImportError where it first runs, an episode hours in. Pre-flight names them."""
    dist = point.dist
    if dist is None:
        return ()
    return tuple(
        str(requirement)
        for requirement, installed in _requirements(dist)
        if installed is None and requirement.name.lower() != "t3rl"
    )


def _requirements(dist: importlib.metadata.Distribution) -> Iterator[tuple[Requirement, str | None]]:
    """Each requirement of `dist` that applies here (not another platform's, nor an extra's) with the
    version of it installed (None: not installed)."""
    from importlib.metadata import PackageNotFoundError, version  # lazy: only for an entry-point plugin

    from packaging.requirements import InvalidRequirement, Requirement  # lazy: as above

    for line in dist.requires or ():
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
            continue  # another platform's, or an extra's
        try:
            yield requirement, version(requirement.name)
        except PackageNotFoundError:
            yield requirement, None


def _entry_point_source(group: str, point: importlib.metadata.EntryPoint) -> str:
    return f"entry point {group}{_distribution(point)}"


def _path(target: Any) -> str:
    return target if isinstance(target, str) else f"{target.__module__}:{target.__qualname__}"


class AsItsOwnModel(Record):
    """A field's value is serialised as the model it is (an entry's config class, a subclass of the
    field's base with fields of its own), not as the base: pydantic's `SerializeAsAny`, said through
    the documented schema hook. Naming `SerializeAsAny` imports pydantic.functional_serializers, ~9 M
    instructions of every cold plan and validate."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        schema = handler(source)
        inner = schema
        while inner["type"] == "definitions":  # the serializer belongs to the schema they define
            inner = inner["schema"]
        inner["serialization"] = core_schema.simple_ser_schema("any")
        return schema


def registered(base: type[BaseModel], registry: Registry) -> Any:
    """A field type for a config section validated by `registry` (e.g. `t3rl_core.registries.ENVS`):
    the section's `name` picks the entry's config model, serialised as that model.

    Entries name their config modules by dotted path, so a config module can hand its own registry to
    this function without an import circle.
    """
    return Annotated[base, AsItsOwnModel(), BeforeValidator(registry.validate)]


# Below the working directory, how deep a plugin's package not installed is looked for (the checkout's
# examples/plugin/t3rl_counter is two levels down), and the directories never walked.
_PACKAGE_DEPTH = 2
_NOT_WALKED = frozenset(
    {".git", ".venv", "venv", "node_modules", "site-packages", "runs", "plans", "__pycache__"}
)


def _not_importable_fix(top: str) -> str:
    """The fix of a plugin whose package `top` does not import: the directory holding it, when it sits
    below the working directory not installed (the example's `examples/plugin/t3rl_counter`: was
    `pip install -e DIR`, which DIR left to guess); else what to do, in general."""
    home = _package_home(top)
    if home is None:
        return (
            f"install the package that provides {top} (pip install -e DIR) or add its directory to PYTHONPATH"
        )
    installable = any((home / name).is_file() for name in ("pyproject.toml", "setup.py"))
    install = f" (or pip install -e {home}, its project)" if installable else ""
    return f"{home}/{top} is not importable here: put its directory on the path, PYTHONPATH={home}{install}"


def _package_home(top: str) -> Path | None:
    """The directory holding package `top` (its `__init__.py`) at most `_PACKAGE_DEPTH` levels below the
    working directory, the shallowest first; None when there is none (or the walk cannot read)."""
    level = [Path.cwd()]
    for _ in range(_PACKAGE_DEPTH + 1):
        found = next((d for d in level if (d / top / "__init__.py").is_file()), None)
        if found is not None:
            return found
        below = []
        for directory in level:
            try:
                below += [d for d in sorted(directory.iterdir()) if d.is_dir() and _walked(d.name)]
            except OSError:
                continue
        level = below
    return None


def _walked(name: str) -> bool:
    return not name.startswith(".") and name not in _NOT_WALKED


def _nearest(path: str) -> str | None:
    """The existing import path closest to a misspelt one."""
    unresolved = resolve_import_path(path)
    return unresolved.nearest if unresolved is not None else None
