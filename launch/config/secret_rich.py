"""Rich's text masked before rich lays it out.

The stream under every CLI output (`launch.config.secrets.ScrubbingStream`) sees what rich rendered:
a value rich folded inside a table cell is interleaved with the other cells of its lines, and no
scrub of the rendered lines reads it back. Every string rich renders (printed, a table cell, a panel's
body, markup included) passes `Console.render_str`; `scrub_rich(scrub)` makes that scrub it first
(`launch.config.secrets.scrub_standard_streams` passes its `scrub_text`). A command whose output rich
does not style prints without importing rich (launch.output.plain), so the hook is put in place when
rich's console module is first imported, by whichever module imports it, and at once if it already is.

The same hook prints control characters as their pictures (`launch.output.markup.pictured`: ESC as
␛): rich passes ESC through, and text a model or a sandbox cell wrote would drive the terminal showing
it (clear it, overwrite earlier lines, set the clipboard).

The same hook turns rich's emoji codes off unless a print asks for them: t3rl prints values, paths and
commands, in which `:fire:` is text (rich would print 🔥), and the table of every code rich loads for
the replacement costs a cold `t3rl validate` ~11 M instructions.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from launch.output.markup import pictured

CONSOLE = "rich.console"


def scrub_rich(scrub: Callable[[str], str]) -> None:
    """From now on, every string a rich Console of this process renders goes through `scrub` first
    (once): now if rich's console module is imported, else as soon as it is."""
    module = sys.modules.get(CONSOLE)
    if module is not None:
        _hook(module, scrub)
    elif not any(isinstance(finder, _AfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(CONSOLE, lambda loaded: _hook(loaded, scrub)))


def _hook(module: ModuleType, scrub: Callable[[str], str]) -> None:
    console = module.Console
    original = console.render_str
    if getattr(original, "scrubs", False):
        return

    def render_str(self: Any, text: str, **options: Any) -> Any:
        if options.get("emoji") is None:
            options["emoji"] = False
        return original(self, pictured(scrub(text)), **options)

    render_str.scrubs = True  # type: ignore[attr-defined]
    console.render_str = render_str


class _AfterImport:
    """A finder on sys.meta_path for one module: the spec the other finders give, with a loader that
    runs `then(module)` once the module is executed, before any `import` of it returns; then it leaves."""

    def __init__(self, name: str, then: Callable[[ModuleType], None]) -> None:
        self.name = name
        self.then = then

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            spec = finder.find_spec(name, path, target) if hasattr(finder, "find_spec") else None
            if spec is not None and spec.loader is not None:
                spec.loader = _Then(spec.loader, self.then)
                return spec
        return None


class _Then:
    """A loader that runs `then(module)` after `loader` executed it; everything else is `loader`'s."""

    def __init__(self, loader: Any, then: Callable[[ModuleType], None]) -> None:
        self.loader = loader
        self.then = then

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        self.then(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)
