"""Import SGLang's tool-call and reasoning parsers without its serving stack.

`sglang/__init__.py` imports the whole server (and triton). The parser modules need none of it, so
the top-level package is registered as a bare package object whose `__path__` is the installed
directory; its submodules then import normally. Loaded once per process, on first use.

The parser modules import from xgrammar only its structural-tag models (pure pydantic modules, the
constrained-decoding tags a server builds), but `xgrammar/__init__.py` imports torch and transformers:
seconds of start-up for `t3rl eval` and every rollout worker, for nothing t3rl calls. Unless xgrammar
is loaded already, the parsers load against the same kind of bare package, holding the real
`StructuralTag` and `get_model_structural_tag`; it is removed afterwards, so a later
`import xgrammar` runs the real package (reusing the submodules already loaded).

Three more imports of the parser modules cost a second of start-up for what they use of them, so
unless the package is loaded already, each has a stand-in while the parsers load (removed afterwards,
like xgrammar's):
- `openai`: the protocol models use a dozen of its `types`, but its package `__init__`s import the
  whole client and every type. Its packages load bare: a name a package re-exports
  (`from .response import Response as Response`) imports just that submodule, on first access;
- `transformers`: the reasoning parser names `PreTrainedTokenizerBase` in type annotations only;
- `sglang.utils` (numpy, requests, IPython): the protocol imports `convert_json_schema_to_str` from it,
  called only to build sampling parameters of a server request; the stand-in forwards the call to
  the real module.
And the pydantic models those modules define (hundreds: SGLang's protocol, openai's types, xgrammar's
tags) build their validators on first use (`defer_build`) rather than at class creation: the parsers
validate one of them, `Tool`.

t3rl's own detectors (`t3rl_core.parsers.own`) join SGLang's tool-call parser table here.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import logging
import sys
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from t3rl_core.parsers.own import OWN_TOOL_CALL_PARSERS


@dataclass(frozen=True)
class SGLangParsers:
    """The SGLang classes t3rl uses."""

    FunctionCallParser: Any
    ReasoningParser: Any
    Tool: Any


def _register_bare_package() -> None:
    if "sglang" in sys.modules:
        return
    spec = importlib.util.find_spec("sglang")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "sglang is not installed: pip install --no-deps sglang==0.5.23 (see requirements/nodeps.in)"
        )
    package = types.ModuleType("sglang")
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    sys.modules["sglang"] = package


@contextmanager
def _light_xgrammar() -> Iterator[None]:
    spec = importlib.util.find_spec("xgrammar") if "xgrammar" not in sys.modules else None
    if spec is None or not spec.submodule_search_locations:  # loaded already, or SGLang's own fallback
        yield
        return
    package = types.ModuleType("xgrammar")
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    sys.modules["xgrammar"] = package
    try:
        # lazy: xgrammar (SGLang's), only when a structural tag is built
        from xgrammar.builtin_structural_tag import get_model_structural_tag

        # lazy: xgrammar (SGLang's), only when a structural tag is built
        from xgrammar.structural_tag import StructuralTag

        package.StructuralTag = StructuralTag  # type: ignore[attr-defined]
        package.get_model_structural_tag = get_model_structural_tag  # type: ignore[attr-defined]
        yield
    finally:
        if sys.modules.get("xgrammar") is package:
            del sys.modules["xgrammar"]


class _BarePackageLoader(importlib.abc.Loader):
    """Loads a package without running its `__init__`: its re-exported names resolve on first access."""

    def __init__(self, exports: dict[str, tuple[str, str]]) -> None:
        self.exports = exports

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        package = types.ModuleType(spec.name)
        exports = self.exports

        def __getattr__(name: str) -> Any:
            if name not in exports:
                raise AttributeError(f"module {spec.name!r} has no attribute {name!r}")
            module, attr = exports[name]
            value = getattr(importlib.import_module(module, spec.name), attr)
            setattr(package, name, value)
            return value

        package.__getattr__ = __getattr__  # type: ignore[method-assign]
        return package

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing: the `__init__` is what is skipped."""


class _BarePackages(importlib.abc.MetaPathFinder):
    """Finds the packages under `roots` as bare packages (their modules import normally)."""

    def __init__(self, roots: Sequence[str]) -> None:
        self.roots = tuple(roots)
        self.loaded: list[str] = []

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.partition(".")[0] not in self.roots:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.submodule_search_locations is None or spec.origin is None:
            return spec  # a module (or nothing): imported as usual
        spec.loader = _BarePackageLoader(_reexports(Path(spec.origin)))
        self.loaded.append(fullname)
        return spec


def _reexports(init: Path) -> dict[str, tuple[str, str]]:
    """`name -> (relative module, attribute)` for every `from .module import attribute [as name]`."""
    exports: dict[str, tuple[str, str]] = {}
    for node in ast.parse(init.read_bytes()).body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for alias in node.names:
                exports[alias.asname or alias.name] = (f".{node.module}", alias.name)
    return exports


@contextmanager
def _bare_packages(roots: Sequence[str]) -> Iterator[None]:
    """While the block runs, packages under `roots` not imported yet load bare; they are dropped after
    it (the modules they loaded stay), so a later import runs the real `__init__`."""
    roots = [root for root in roots if root not in sys.modules and importlib.util.find_spec(root)]
    finder = _BarePackages(roots)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name in finder.loaded:
            loader = getattr(getattr(sys.modules.get(name), "__spec__", None), "loader", None)
            if isinstance(loader, _BarePackageLoader):
                del sys.modules[name]


class PreTrainedTokenizerBase:
    """Stands in for transformers' class in the annotations of SGLang's reasoning parser (see above)."""


def _forward_json_schema_to_str(*args: Any, **kwargs: Any) -> Any:
    return importlib.import_module("sglang.utils").convert_json_schema_to_str(*args, **kwargs)


@contextmanager
def _stand_ins() -> Iterator[None]:
    """`transformers` and `sglang.utils` stand-ins while the block runs, unless they are imported."""
    placed: dict[str, types.ModuleType] = {}
    if "transformers" not in sys.modules:
        placed["transformers"] = types.ModuleType("transformers")
        placed["transformers"].PreTrainedTokenizerBase = PreTrainedTokenizerBase  # type: ignore[attr-defined]
    if "sglang.utils" not in sys.modules:
        placed["sglang.utils"] = types.ModuleType("sglang.utils")
        placed["sglang.utils"].convert_json_schema_to_str = _forward_json_schema_to_str  # type: ignore[attr-defined]
    sys.modules.update(placed)
    try:
        yield
    finally:
        for name, module in placed.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]


@contextmanager
def _deferred_model_builds() -> Iterator[None]:
    """Pydantic models defined while the block runs build their validators on first use."""
    from pydantic import BaseModel  # lazy: pydantic, only for SGLang's tool schema

    config = BaseModel.model_config
    BaseModel.model_config = {**config, "defer_build": True}
    try:
        yield
    finally:
        BaseModel.model_config = config


@cache
def load() -> SGLangParsers:
    """SGLang's FunctionCallParser, ReasoningParser and Tool (imported on first use)."""
    _register_bare_package()
    with _light_xgrammar(), _bare_packages(["openai"]), _stand_ins(), _deferred_model_builds():
        # lazy: sglang, only when its parsers are loaded
        from sglang.srt.entrypoints.openai.protocol import Tool

        # lazy: sglang, only when its parsers are loaded
        from sglang.srt.function_call.function_call_parser import FunctionCallParser

        # lazy: sglang, only when its parsers are loaded
        from sglang.srt.parser.reasoning_parser import ReasoningParser

        # t3rl's detectors subclass SGLang's base detector: built while the stand-ins are in place.
        for name, target in OWN_TOOL_CALL_PARSERS.items():
            module, _, factory = target.partition(":")
            detector = getattr(importlib.import_module(module), factory)()
            FunctionCallParser.ToolCallParserEnum.setdefault(name, detector)

    # The detectors log and drop calls they cannot parse; t3rl reports those to the model itself.
    logging.getLogger("sglang.srt.function_call").setLevel(logging.CRITICAL)
    return SGLangParsers(FunctionCallParser=FunctionCallParser, ReasoningParser=ReasoningParser, Tool=Tool)


def tool_call_parser_names() -> list[str]:
    return sorted(load().FunctionCallParser.ToolCallParserEnum)


def reasoning_parser_names() -> list[str]:
    return sorted(load().ReasoningParser.DetectorMap)
