"""Import paths a config names resolve to an object that exists, or to the nearest one that does.

A plugin, hook or filter is named by import path (`package.module:attr` or slime's
`package.module.attr`) and imported later, often hours later on a GPU node. Resolving it at pre-flight
imports its module here; a package that is installed only where the job runs (slime) is resolved
against a table of its importable names instead (`tables`). A wrong spelling gets the nearest import
path that exists, not a list of built-in names.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Iterable, Mapping

from t3rl_core.records import Record

# Top-level package → {module → its public object names}: packages resolved without importing them.
Tables = Mapping[str, Mapping[str, tuple[str, ...]]]


class Unresolved(Record):
    """Why an import path does not resolve, and the nearest one that does (None when none is close)."""

    reason: str
    nearest: str | None
    # The path's top-level package is not installed here (it may be where the path is imported).
    package_missing: bool = False


def split_path(path: str) -> tuple[str, str]:
    """(module, attribute) of `pkg.mod:attr` or `pkg.mod.attr`."""
    module, sep, attr = path.partition(":")
    if sep:
        return module, attr
    module, _, attr = path.rpartition(".")
    return module, attr


def resolve(path: str, tables: Tables | None = None) -> Unresolved | None:
    """None when `path` names an object that exists; else why not, with the nearest existing path."""
    module, attr = split_path(path)
    if not module or not attr:
        return Unresolved("an import path is `package.module:function` (or package.module.function)", None)
    table = (tables or {}).get(module.split(".")[0])
    if table is not None:
        return _in_table(path, module, attr, table)
    return _by_import(path, module, attr)


def _in_table(path: str, module: str, attr: str, table: Mapping[str, tuple[str, ...]]) -> Unresolved | None:
    if attr.split(".")[0] in table.get(module, ()):
        return None
    known = [f"{m}.{name}" for m, names in table.items() for name in names]
    what = f"{module} has no '{attr}'" if module in table else f"no module {module}"
    return Unresolved(what, _nearest(f"{module}.{attr}", known, path))


def _by_import(path: str, module: str, attr: str) -> Unresolved | None:
    missing = _missing_module(module)
    if missing is not None:
        parent = missing.rpartition(".")[0]
        siblings = _submodules(parent)
        # Among every installed top-level module a loose match is noise (a plugin package not on the
        # path is not `rlcompleter`): only a near-spelling counts there.
        guess = _nearest(missing, siblings, missing, cutoff=0.6 if parent else 0.85)
        nearest = None
        if guess is not None:
            rest = module[len(missing) :]
            nearest = _join(f"{guess}{rest}", attr, path)
        return Unresolved(f"no module named {missing}", nearest, package_missing="." not in missing)
    try:
        target = importlib.import_module(module)
    except Exception as error:  # a module that fails to import fails the same way where it runs
        return Unresolved(f"importing {module} fails: {type(error).__name__}: {error}", None)
    for part in attr.split("."):
        if not hasattr(target, part):
            names = [n for n in dir(target) if not n.startswith("_")]
            guess = _nearest(part, names, part)
            return Unresolved(
                f"{module} has no '{attr}'", _join(module, guess, path) if guess is not None else None
            )
        target = getattr(target, part)
    return None


def spelling(name: str) -> str:
    """`name` as package names are compared: case and runs of the separators `-`, `_` and `.` aside
    (`Quokka-Env`, `quokka.env` and `QUOKKA_ENV` are `quokka_env`)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def spelt_otherwise(name: str, candidates: Iterable[str]) -> str | None:
    """The one candidate (not `name` itself) whose spelling is `name`'s; None when none is, or several."""
    found = {c for c in candidates if spelling(c) == spelling(name)} - {name}
    return next(iter(found)) if len(found) == 1 else None


def same_module(module: str) -> str | None:
    """The one installed top-level module whose name is `module`'s but for its spelling (case and
    separators); None when none is, or several are."""
    import pkgutil  # lazy: only once a module is not found

    return spelt_otherwise(module, (m.name for m in pkgutil.iter_modules()))


def nearest_module(module: str) -> str | None:
    """The installed module closest to `module` among its would-be siblings (found, not imported:
    a parent package's __init__ may be heavy); None when none is close."""
    import pkgutil  # lazy: only once an import path fails, not on every cold validate

    parent, _, _ = module.rpartition(".")
    if parent:
        try:
            spec = importlib.util.find_spec(parent)
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.submodule_search_locations:
            return None
        siblings = [f"{parent}.{m.name}" for m in pkgutil.iter_modules(spec.submodule_search_locations)]
    else:
        siblings = [m.name for m in pkgutil.iter_modules()]
    return _nearest(module, siblings, module)


def _missing_module(module: str) -> str | None:
    """The shortest prefix of `module` that cannot be found, or None when all of it can."""
    parts = module.split(".")
    for end in range(1, len(parts) + 1):
        prefix = ".".join(parts[:end])
        try:
            if importlib.util.find_spec(prefix) is None:
                return prefix
        except (ImportError, ValueError):
            return prefix
    return None


def _submodules(parent: str) -> list[str]:
    """Importable modules directly under `parent` ("" = top level), as full dotted names."""
    import pkgutil  # lazy: only once an import path fails, not on every cold validate

    if not parent:
        return [m.name for m in pkgutil.iter_modules()]
    try:
        package = importlib.import_module(parent)
    except Exception:
        return []
    where = getattr(package, "__path__", None)
    return [f"{parent}.{m.name}" for m in pkgutil.iter_modules(where)] if where else []


def _nearest(name: str, candidates: list[str], typed: str, cutoff: float = 0.6) -> str | None:
    """The closest candidate, never the typed value itself."""
    import difflib  # lazy: only once an import path fails, not on every cold validate

    matches = difflib.get_close_matches(name, [c for c in candidates if c != typed], n=1, cutoff=cutoff)
    return matches[0] if matches else None


def _join(module: str, attr: str, like: str) -> str:
    """`module` and `attr` joined the way the user wrote the path (`:` or `.`)."""
    return f"{module}:{attr}" if ":" in like else f"{module}.{attr}"
