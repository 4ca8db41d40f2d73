"""A library's pattern compiled on its first use instead of when the library is imported.

PyYAML compiles, when `yaml` is imported, the characters its pure-Python reader accepts
(`yaml.reader.Reader.NON_PRINTABLE`, a class of the whole of Unicode): ~57 M instructions, more than a
twentieth of a cold `t3rl plan` and more than all of t3rl's own patterns. t3rl reads and writes YAML
with libyaml (t3rl_core.yaml_text), which never uses it; that reader runs only for a text libyaml
rejects. `defer_yaml_reader()`, called before PyYAML is imported, puts a stand-in into `re`'s cache
under the pattern's text, so that PyYAML's `re.compile` gets the stand-in; its first use compiles the
pattern as `re` would have, so what the reader accepts and every error it raises stay the same.

`defer_library_patterns()` does the same for the patterns a few more modules compile as they are
imported (`LIBRARY_MODULES`), without spelling their texts here: while such a module's own lines run,
`re.compile` called from them answers a `DeferredPattern` of the same text and flags (other callers,
another thread's included, get `re`'s). A cold plan of stage2_bfcl imports them all and uses few of them.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

# What YAML 1.1 calls non-printable (the complement of its c-printable production), spelt as PyYAML 6's
# reader spells its Reader.NON_PRINTABLE: `re`'s cache is keyed by the pattern's text (each escape is
# the character itself). A PyYAML whose text differs compiles its own on import, as before
# (tests/cli/test_deferred_patterns.py compares the two).
YAML_NON_PRINTABLE = "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"


class DeferredPattern:
    """Stands in for `re.compile(text, flags)`: any attribute (search, match, pattern, …) is the
    compiled pattern's, compiled on the first one asked for."""

    __slots__ = ("_compiled", "_flags", "_text")

    def __init__(self, text: str | bytes, flags: int = 0) -> None:
        self._text = text
        self._flags = flags
        self._compiled: re.Pattern[Any] | None = None

    def compiled(self) -> re.Pattern[Any]:
        """The pattern, compiled (once; then also in `re`'s cache, in place of this stand-in)."""
        if self._compiled is None:
            cache = _re_cache()
            key = (type(self._text), self._text, self._flags)
            if cache is not None and cache.get(key) is self:
                del cache[key]
            self._compiled = re.compile(self._text, self._flags)
        return self._compiled

    def __getattr__(self, name: str) -> Any:
        return getattr(self.compiled(), name)

    def __repr__(self) -> str:
        return repr(self.compiled())


def defer_yaml_reader() -> None:
    """Before `yaml` is first imported: its reader's pattern compiled on first use (nothing otherwise)."""
    if "yaml" not in sys.modules:
        defer(YAML_NON_PRINTABLE)


# Modules whose import-time patterns a cold plan or validate never matches with, and what compiling them
# costs it (callgrind, instructions): fractions' number syntax (3.1 M), platform's version and libc
# parsers (5.6 M), textwrap's word splitter (2.3 M), PyYAML's timestamp (2.7 M; libyaml reads every
# file, and its resolver's patterns, which are used, are compiled as before), tokenize's coding line,
# locale's format and json's pure-Python number (its C scanner reads JSON): ~16 M of a cold plan.
LIBRARY_MODULES = frozenset(
    {"fractions", "platform", "textwrap", "yaml.constructor", "tokenize", "locale", "json.scanner"}
)


def defer_library_patterns() -> None:
    """Before the modules of `LIBRARY_MODULES` are imported: the patterns they compile as they are
    imported are compiled on first use (a module already imported keeps its own)."""
    waiting = {name for name in LIBRARY_MODULES if name not in sys.modules}
    if waiting and not any(isinstance(finder, _DeferringFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _DeferringFinder(waiting))


class _DeferringFinder:
    """On sys.meta_path while a module of its names is still to be imported: such a module gets the
    spec the other finders give, with a loader that runs it under `_deferring`."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name not in self.names:
            return None
        self.names.discard(name)
        if not self.names:
            sys.meta_path.remove(self)
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _DeferringLoader(spec.loader)
                return spec
        return None


class _DeferringLoader:
    """`loader`, executing its module with `re.compile` called from the module's own code deferred."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        real = re.compile
        re.compile = _deferring(real, vars(module))  # type: ignore[assignment]
        try:
            self.loader.exec_module(module)
        finally:
            re.compile = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)


def _deferring(real: Callable[..., Any], own: dict[str, Any]) -> Callable[..., Any]:
    """`re.compile` that answers a DeferredPattern to a caller whose globals are `own` (the module
    being executed: its top level and class bodies) for a text pattern, and `real`'s answer otherwise."""

    def compile_(pattern: Any, flags: Any = 0) -> Any:
        if isinstance(pattern, str | bytes) and sys._getframe(1).f_globals is own:
            return DeferredPattern(pattern, int(flags))
        return real(pattern, flags)

    return compile_


def defer(text: str, flags: int = 0) -> None:
    """`re.compile(text, flags)` answers a DeferredPattern until it is used; nothing where `re` keeps no
    cache of that form (another Python: the library then compiles it on import, as before)."""
    cache = _re_cache()
    if cache is None:
        return
    key = (str, text, flags)
    if key in cache:
        return
    stand_in = DeferredPattern(text, flags)
    cache[key] = stand_in
    # `re` looks elsewhere first: leave its cache as it was.
    if re.compile(text, flags) is not stand_in and cache.get(key) is stand_in:
        del cache[key]


def _re_cache() -> dict[Any, Any] | None:
    # `re._cache`, keyed by (type(text), text, flags) in CPython 3.11, where `re.compile` looks first.
    cache = getattr(re, "_cache", None)
    return cache if isinstance(cache, dict) else None
