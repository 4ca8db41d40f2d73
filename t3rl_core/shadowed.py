"""A module loaded from a file the user's path put ahead of the one Python or an installed library
provides under that name: a plugin's `json.py`, `secrets.py` or `yaml.py` in a directory on PYTHONPATH
(where wave four's fix puts a plugin's directory) is what every `import json` of t3rl and its libraries
then loads, and the command failed far from it, in a library's circular import, told as a bug in t3rl.

Declared by where each name belongs: a name of Python's standard library (`sys.stdlib_module_names`) or
a top-level module of the environment's site-packages is that place's; a module of such a name whose
file lies outside every place Python installs modules (`sysconfig`'s stdlib, platstdlib, purelib,
platlib) shadows it. Read only once a command has failed (the success path pays nothing)."""

from __future__ import annotations

import os
import sys
import sysconfig
import traceback
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

# Where Python installs modules: a module whose file lies below one of these is where its name belongs.
INSTALL_PATHS = ("stdlib", "platstdlib", "purelib", "platlib")


@dataclass(frozen=True)
class Shadow:
    """Module `name`, loaded from `file`, though `owner` (Python's standard library or an installed
    library) provides that name."""

    name: str
    file: Path
    owner: str

    def sentence(self) -> str:
        return (
            f"{self.file} is loaded as the module '{self.name}', the name of {self.owner}: its directory "
            f"{self.file.parent if self.file.name != '__init__.py' else self.file.parent.parent} comes "
            f"ahead of it on the import path (PYTHONPATH, or the working directory), so every `import "
            f"{self.name}` of t3rl and its libraries loads this file instead"
        )

    def fix(self) -> str:
        return (
            f"rename {self.file.name if self.file.name != '__init__.py' else self.file.parent.name} "
            f"(e.g. my_{self.name}) and the config's references to it (a plugin's `{self.name}:Name` "
            f"becomes `my_{self.name}:Name`)"
        )


def _installed_names(purelibs: tuple[str, ...]) -> set[str]:
    """The top-level module names of the site-packages directories."""
    names: set[str] = set()
    for directory in purelibs:
        try:
            entries = os.listdir(directory)
        except OSError:
            continue
        names |= {e.removesuffix(".py") for e in entries if e.removesuffix(".py").isidentifier()}
    return names


def _loaded(modules: Mapping[str, ModuleType]) -> Iterator[tuple[str, str]]:
    """(top-level name, file) of each loaded top-level module."""
    for name, module in list(modules.items()):
        file = getattr(module, "__file__", None)
        if "." not in name and isinstance(file, str):
            yield name, file


def _on_the_path(error: BaseException | None, path: list[str]) -> Iterator[tuple[str, str]]:
    """(top-level name, file) of each file the traceback of `error` (and the errors it arose from) ran
    code of, by the import path entry it lies below: a module whose import failed is gone from
    sys.modules, its frame is what is left of it."""
    entries = [os.path.realpath(entry or os.curdir) for entry in path]
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        for frame, _ in traceback.walk_tb(error.__traceback__):
            file = os.path.realpath(frame.f_code.co_filename)
            for entry in entries:
                if file.startswith(entry + os.sep):
                    top = Path(file[len(entry) + 1 :]).parts[0]
                    yield (top[:-3] if top.endswith(".py") else top), frame.f_code.co_filename
                    break
        error = error.__cause__ or error.__context__


def shadows(
    modules: Mapping[str, ModuleType] | None = None,
    own: tuple[str, ...] = (),
    error: BaseException | None = None,
    path: list[str] | None = None,
) -> list[Shadow]:
    """Every top-level module loaded (of `modules`, sys.modules by default) or run in the traceback of
    `error` whose name belongs to the standard library or site-packages but whose file lies elsewhere;
    `own` are this project's packages, which may run from a checkout."""
    paths = sysconfig.get_paths()
    roots = tuple(os.path.realpath(paths[key]) for key in INSTALL_PATHS if paths.get(key))
    purelibs = tuple(dict.fromkeys(paths[key] for key in ("purelib", "platlib") if paths.get(key)))
    installed = _installed_names(purelibs)
    found: list[Shadow] = []
    candidates = [
        *_on_the_path(error, sys.path if path is None else path),
        *_loaded(sys.modules if modules is None else modules),
    ]
    for name, file in dict.fromkeys(candidates):
        if name in own or name == "__main__" or any(s.name == name for s in found):
            continue
        where = os.path.realpath(file)
        if not os.path.isfile(where):  # a zip's or a frozen module's: no file of the user's
            continue
        if any(where == root or where.startswith(root + os.sep) for root in roots):
            continue
        if name in sys.stdlib_module_names:
            found.append(Shadow(name, Path(file), f"Python's standard module {name}"))
        elif name in installed:
            found.append(Shadow(name, Path(file), f"the installed library {name} (site-packages)"))
    return found


def namesake(module: str, path: list[str] | None = None) -> Path | None:
    """A file of the user's on the import path named like `module`'s top-level package, other than the
    one Python loaded for that name (a plugin's `os.py` beside the standard `os`, which was imported
    first): an import path `os:Name` reads the standard module, never that file. None when there is
    none, when the loaded one is it, or when none is loaded (an import would read the file)."""
    top = module.partition(".")[0]
    loaded = getattr(sys.modules.get(top), "__file__", None)
    if loaded is None:  # not loaded (an import would read the file), or built into Python
        return None
    paths = sysconfig.get_paths()
    roots = tuple(os.path.realpath(paths[key]) for key in INSTALL_PATHS if paths.get(key))
    for entry in sys.path if path is None else path:
        directory = os.path.realpath(entry or os.curdir)
        if any(directory == root or directory.startswith(root + os.sep) for root in roots):
            continue
        for candidate in (Path(directory) / f"{top}.py", Path(directory) / top / "__init__.py"):
            if candidate.is_file() and os.path.realpath(loaded) != os.path.realpath(candidate):
                return candidate
    return None
