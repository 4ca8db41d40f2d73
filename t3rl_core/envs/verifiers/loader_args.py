"""`env.args` against an installed environment module's `load_environment` signature, read from its
source (`ast`): validation imports neither the module nor verifiers, whose import tree is heavy."""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from t3rl_core.envs.verifiers.arg_types import type_problem

LOADER = "load_environment"


def module_name(env_id: str) -> str:
    """The module verifiers imports for an environment id (`owner/my-env` → `my_env`; the version of
    `owner/my-env@0.1.2`, as prime installs it, is no part of the module's name)."""
    return env_id.partition("@")[0].replace("-", "_").split("/")[-1]


def loader_problem(env_id: str, args: Mapping[str, Any]) -> str | None:
    """Why `load_environment(**args)` of `env_id`'s module cannot be called (None = it can)."""
    name = module_name(env_id)
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as exc:
        return f"cannot look up module '{name}': {exc}"
    if spec is None or spec.origin is None:
        return (
            f"no installed module '{name}' (environment '{env_id}'): install the environment first "
            f"(`prime env install {env_id}` or `pip install` its package)"
        )
    if not spec.origin.endswith(".py"):
        return None  # a compiled module: nothing to read, verifiers' loader checks at load time
    with open(spec.origin, encoding="utf-8") as source:
        tree = ast.parse(source.read(), spec.origin)
    loader = next(
        (
            node
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == LOADER
        ),
        None,
    )
    if loader is None:
        return None if _reexports_loader(tree) else f"module '{name}' ({spec.origin}) defines no {LOADER}()"
    if isinstance(loader, ast.AsyncFunctionDef):
        return (
            f"module '{name}' ({spec.origin}) defines `async def {LOADER}`: verifiers calls the loader "
            "without awaiting it (it would get a coroutine, not an environment); the environment's "
            "loader must be a plain function"
        )
    return _call_problem(loader.args, args)


def is_environment(module: str) -> bool:
    """Whether installed module `module` defines (or re-exports) `load_environment`, read from its
    source: a module that does not is no environment, and no fix for a misspelt `env.id`."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return False
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return False  # nothing to read: not offered as a fix, whatever it is
    try:
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"), spec.origin)
    except (OSError, SyntaxError, UnicodeDecodeError):
        return False
    defined = any(isinstance(node, ast.FunctionDef) and node.name == LOADER for node in tree.body)
    return defined or _reexports_loader(tree)


def dependency_problem(env_id: str) -> str | None:
    """Why importing `env_id`'s installed module fails whatever env.args are: a module it imports at its
    top is not installed (None = every one is, or its source cannot be read)."""
    name = module_name(env_id)
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None  # the module's own lookup is `VerifiersEnvConfig._installed`'s
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    for path in _own_modules(Path(spec.origin)):
        missing = missing_imports(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        if missing:
            return (
                f"environment '{env_id}' is installed, but its module '{name}' ({path}) imports "
                f"{', '.join(map(repr, missing))}, which is not: install the environment's dependencies "
                f"(`pip install` the package providing it, or `prime env install {env_id}` again)"
            )
    return None


def _own_modules(origin: Path) -> list[Path]:
    """The module's file and, for a package, the files of its own modules that its files import at their
    top relatively (`from .env import load_environment`, `from . import rubric`): importing the package
    imports them."""
    found: list[Path] = []
    pending = [origin]
    while pending:
        path = pending.pop()
        if path in found or not path.is_file():
            continue
        found.append(path)
        if origin.name != "__init__.py":
            break  # a single-file module: its relative imports have no package here
        for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body:
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                names = [node.module] if node.module else [alias.name for alias in node.names]
                for module in names:
                    first = path.parent / module.split(".")[0]
                    pending += [first.with_suffix(".py"), first / "__init__.py"]
    return found


def missing_imports(tree: ast.Module) -> list[str]:
    """The top-level modules a module imports unconditionally (its own top-level `import` statements,
    not those under try, if or a function) that are not installed: importing it would raise
    ModuleNotFoundError, whatever env.args are. Relative imports are the module's own package's."""
    wanted: dict[str, None] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            wanted.update(dict.fromkeys(alias.name.split(".")[0] for alias in node.names))
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            wanted[node.module.split(".")[0]] = None
    missing = []
    for top in wanted:
        try:
            found = importlib.util.find_spec(top) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(top)
    return missing


def _reexports_loader(tree: ast.Module) -> bool:
    """`from .x import load_environment` in a package's __init__: the signature lives elsewhere."""
    return any(
        isinstance(node, ast.ImportFrom) and any(alias.asname or alias.name == LOADER for alias in node.names)
        for node in tree.body
    )


def _call_problem(signature: ast.arguments, args: Mapping[str, Any]) -> str | None:
    positional = [*signature.posonlyargs, *signature.args]
    by_keyword = [a.arg for a in signature.args] + [a.arg for a in signature.kwonlyargs]
    if signature.vararg is None and signature.posonlyargs:
        required_positional = signature.posonlyargs[: len(positional) - len(signature.defaults)]
        if required_positional:
            return f"{LOADER}() needs positional arguments {[a.arg for a in required_positional]}"
    unknown = [key for key in args if key not in by_keyword]
    if unknown and signature.kwarg is None:
        return f"{LOADER}() takes no argument {unknown}; it accepts {by_keyword or 'none'}"
    with_default = {a.arg for a in positional[len(positional) - len(signature.defaults) :]}
    with_default |= {a.arg for a, d in zip(signature.kwonlyargs, signature.kw_defaults, strict=True) if d}
    missing = [name for name in by_keyword if name not in with_default and name not in args]
    if missing:
        return f"{LOADER}() needs {missing}: set them in env.args"
    annotations = {a.arg: a.annotation for a in [*positional, *signature.kwonlyargs]}
    for name, value in args.items():
        problem = type_problem(name, annotations.get(name), value)
        if problem is not None:
            return problem
    return None
