"""A library's pattern compiled on its first use instead of when the library is imported.

PyYAML compiles, when `yaml` is imported, the characters its pure-Python reader accepts
(`yaml.reader.Reader.NON_PRINTABLE`, a class of the whole of Unicode): ~57 M instructions, more than a
twentieth of a cold `t3rl plan` and more than all of t3rl's own patterns. t3rl reads and writes YAML
with libyaml (t3rl_core.yaml_text), which never uses it; that reader runs only for a text libyaml
rejects. `defer_yaml_reader()`, called before PyYAML is imported, puts a stand-in into `re`'s cache
under the pattern's text, so that PyYAML's `re.compile` gets the stand-in; its first use compiles the
pattern as `re` would have, so what the reader accepts and every error it raises stay the same.
"""

from __future__ import annotations

import re
import sys
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

    def __init__(self, text: str, flags: int = 0) -> None:
        self._text = text
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        """The pattern, compiled (once; then also in `re`'s cache, in place of this stand-in)."""
        if self._compiled is None:
            cache = _re_cache()
            key = (str, self._text, self._flags)
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
