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
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any


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
        from xgrammar.builtin_structural_tag import get_model_structural_tag
        from xgrammar.structural_tag import StructuralTag

        package.StructuralTag = StructuralTag  # type: ignore[attr-defined]
        package.get_model_structural_tag = get_model_structural_tag  # type: ignore[attr-defined]
        yield
    finally:
        if sys.modules.get("xgrammar") is package:
            del sys.modules["xgrammar"]


@cache
def load() -> SGLangParsers:
    """SGLang's FunctionCallParser, ReasoningParser and Tool (imported on first use)."""
    _register_bare_package()
    with _light_xgrammar():
        from sglang.srt.entrypoints.openai.protocol import Tool
        from sglang.srt.function_call.function_call_parser import FunctionCallParser
        from sglang.srt.parser.reasoning_parser import ReasoningParser

    # The detectors log and drop calls they cannot parse; t3rl reports those to the model itself.
    logging.getLogger("sglang.srt.function_call").setLevel(logging.CRITICAL)
    return SGLangParsers(FunctionCallParser=FunctionCallParser, ReasoningParser=ReasoningParser, Tool=Tool)


def tool_call_parser_names() -> list[str]:
    return sorted(load().FunctionCallParser.ToolCallParserEnum)


def reasoning_parser_names() -> list[str]:
    return sorted(load().ReasoningParser.DetectorMap)
