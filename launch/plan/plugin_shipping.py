"""How a plugin's code reaches the processes that import it.

The hooks slime loads stay t3rl's (`t3rl_core.hooks.slime.*`); the runtime YAML names the plugin, and
the hooks import it inside the Ray job. So the job's environment must hold the plugin's package:
- `installed`: it comes from an installed distribution (site-packages): every node needs the same
  distribution installed (the plan names it with its version);
- `working_dir`: it lives inside `executor.working_dir`, which Ray uploads as the job's working dir;
- `py_modules`: otherwise (a source tree on PYTHONPATH, an editable checkout): the package directory
  goes into the Ray job's `runtime_env.py_modules`, which Ray uploads for the job.
Stages that run t3rl_core here (data preparation, eval) get the package's parent directory on their
PYTHONPATH, so plan.sh works from any directory. Pre-flight imports every plugin module with the
interpreter and PYTHONPATH of the stage that will import it (`ImportCheck`).
"""

from __future__ import annotations

import importlib.util
import sysconfig
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from t3rl_core.plugins import UsedPlugin, used_plugins
from t3rl_core.records import Record

How = Literal["installed", "working_dir", "py_modules"]


class Shipment(Record):
    """One top-level plugin package and how the jobs that import it get it."""

    package: str
    how: How
    # The package directory (a single-file module: the file).
    path: str
    # "name version" of the installed distribution that provides it, when there is one.
    dist: str | None
    # The plugins (kind and name) that live in it, and the config keys naming them.
    plugins: tuple[str, ...]

    @property
    def parent(self) -> str:
        return str(Path(self.path).parent)

    def describe(self) -> str:
        """One line for plans: which plugins, and how the job gets them."""
        used = ", ".join(self.plugins)
        if self.how == "installed":
            name, _, version = (self.dist or self.package).partition(" ")
            return f"{used}: installed distribution {self.dist} (pip install {name}=={version} on every node)"
        if self.how == "working_dir":
            return f"{used}: inside executor.working_dir ({self.path})"
        return f"{used}: runtime_env py_modules {self.path}"


# How the plugins a section names are found: `used_plugins`, or a plan builder's memo of it (a plan
# looks up the same env, reward and chat sections for each of its stages).
FindPlugins = Callable[[BaseModel, str], list[UsedPlugin]]


def shipments(
    configs: Mapping[str, BaseModel], working_dir: str | None = None, find: FindPlugins = used_plugins
) -> list[Shipment]:
    """How each plugin package named anywhere in `configs` (config key → section) reaches the jobs."""
    by_package: dict[str, list[UsedPlugin]] = {}
    for key, config in configs.items():
        for used in find(config, key):
            by_package.setdefault(used.module.split(".")[0], []).append(used)
    return [_shipment(package, plugins, working_dir) for package, plugins in sorted(by_package.items())]


def plugin_modules(configs: Mapping[str, BaseModel], find: FindPlugins = used_plugins) -> list[str]:
    """The modules a process must import to build the plugins of `configs` (for pre-flight)."""
    modules = set()
    for key, config in configs.items():
        for used in find(config, key):
            modules.add(used.module)
    return sorted(modules)


def pythonpath(shipped: Iterable[Shipment], base: str | None) -> str | None:
    """`base` with the parent directory of every source-tree plugin in front."""
    parents = [s.parent for s in shipped if s.how != "installed"]
    parts = dict.fromkeys([*parents, *(base.split(":") if base else [])])
    return ":".join(p for p in parts if p) or None


def py_modules(shipped: Iterable[Shipment]) -> list[str]:
    return [s.path for s in shipped if s.how == "py_modules"]


def _shipment(package: str, plugins: list[UsedPlugin], working_dir: str | None) -> Shipment:
    spec = importlib.util.find_spec(package)
    if spec is None:
        raise ValueError(f"plugin package '{package}' is not importable here")
    location = (
        spec.submodule_search_locations[0] if spec.submodule_search_locations else spec.origin or package
    )
    path = str(Path(location).resolve())
    dist = _distributions().get(package)
    named = tuple(dict.fromkeys(f"{u.kind} {u.name} ({u.key})" for u in plugins))
    how: How
    if working_dir and Path(path).is_relative_to(Path(working_dir).resolve()):
        how = "working_dir"
    elif dist is not None and _in_site_packages(path):
        how = "installed"
    else:
        how = "py_modules"
    return Shipment(package, how, path, dist, named)


@cache
def _distributions() -> Mapping[str, str]:
    """Top-level module → "distribution version" of the installed distributions."""
    # A cold plan of the shipped experiments names no plugin.
    # lazy: importlib.metadata (with the email, csv and zipfile modules it loads), only for a plugin
    import importlib.metadata

    found: dict[str, str] = {}
    for module, names in importlib.metadata.packages_distributions().items():
        dist = importlib.metadata.distribution(names[0])
        found[module] = f"{dist.metadata['Name']} {dist.version}"
    return found


def _in_site_packages(path: str) -> bool:
    roots = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    return any(Path(path).is_relative_to(Path(root).resolve()) for root in roots)
