"""Config problems as data: every problem names the key, where it was set and the smallest fix.

Validation collects all problems of a config before failing, so one `t3rl validate` shows everything
that is wrong. The CLI turns a `ConfigError` into exit code 2 (`launch.run.exit_codes.EXIT_CONFIG`).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import FrozenInstanceError
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from rich.console import Console

    from launch.output.plain import PlainConsole

Severity = Literal["error", "warning"]
# How a fix that is the value typed, in the form the field takes (`2h` as 02:00:00, `Ｈ100` as H100), says
# so: launch.checks.undo puts it first, launch.checks.fix_closure tries it (launch.config.schema_errors and
# launch.config.override_syntax write it).
AS_TYPED = "the value typed, in the form the field takes"
# How a value Hydra's grammar refuses unquoted (`name=café`) is answered (launch.config.override_syntax):
# the quoted form, which launch.checks.fix_closure.quoted_tried tries as applied.
QUOTED_ONLY = "which Hydra's override grammar reads only quoted"
# How a value Hydra's grammar refuses and takes quoted (`seed=(3)`, `~/x`) is answered: the quoted form,
# which launch.checks.fix_closure.quoted_tried tries as applied.
VALUES_QUOTED = "values quoted: Hydra reads = : ~ and the like in them as syntax"
# The brackets Hydra's grammar reads (a list's, a mapping's, a function call's), opener to closer.
BRACKETS = {"[": "]", "{": "}", "(": ")"}
# How a mapping typed without '+' onto a mapping a file sets is answered (launch.config.compose): the line
# with '+', which launch.checks.fix_closure.plus_tried tries as applied.
WITH_PLUS = "add its keys with '+': "


_FIELDS = ("key", "message", "source", "fix", "severity")


class Problem:
    """One thing wrong with a config, immutable."""

    # A plain class, not a frozen dataclass: every cold command imports this module, and a dataclass
    # compiles its methods from text as its class is created (~4.1 M instructions).
    __match_args__ = _FIELDS
    key: str
    message: str
    source: str
    fix: str
    severity: Severity

    def __init__(
        self,
        # Dotted config key ("hardware.tensor_parallel"); "" = the config as a whole.
        key: str,
        # What is wrong, with the numbers involved.
        message: str,
        # The config file or command-line override that set the key ("" = schema default or unknown).
        source: str = "",
        # The smallest change that makes the config valid.
        fix: str = "",
        # Warnings are reported but do not fail validation.
        severity: Severity = "error",
    ) -> None:
        # A message may quote a value and a source an override: credentials are masked in all three.
        # lazy: secrets imports the Secret type; problems are data first
        from launch.config.secrets import scrub_text

        put = object.__setattr__
        put(self, "key", key)
        put(self, "message", scrub_text(message))
        put(self, "source", scrub_text(source))
        put(self, "fix", scrub_text(fix))
        put(self, "severity", severity)

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def _fields(self) -> tuple[str, str, str, str, str]:
        return (self.key, self.message, self.source, self.fix, self.severity)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in zip(_FIELDS, self._fields(), strict=True))
        return f"{type(self).__qualname__}({fields})"

    def replace(self, **changes: str) -> Problem:
        """A copy with `changes` (what `dataclasses.replace` gave: the new texts masked too)."""
        return type(self)(**{**dict(zip(_FIELDS, self._fields(), strict=True)), **changes})  # type: ignore[arg-type]

    def with_source(self, source: str) -> Problem:
        return self if self.source else self.replace(source=source)

    def as_text(self) -> str:
        lines = [f"{self.severity}: {self.key or '<config>'}: {self.message}"]
        if self.source:
            lines.append(f"  set in: {self.source}")
        if self.fix:
            lines.append(f"  fix: {self.fix}")
        return "\n".join(lines)


class ConfigError(Exception):
    """A config that cannot run, with every problem found."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = [p for p in problems if p.severity == "error"]
        self.warnings = [p for p in problems if p.severity == "warning"]
        if not self.problems:
            raise ValueError("ConfigError needs at least one error-severity problem")
        super().__init__("\n".join(p.as_text() for p in self.problems))


def not_text_problem(file: str, error: UnicodeDecodeError) -> Problem:
    """A config file that is not UTF-8 text (binary, another encoding): its path and how to mend it."""
    if _utf16_text(file):  # Windows editors' "Unicode": the iconv line that converts it, as pasted
        quoted = shlex.quote(file)
        return Problem(
            key=file,
            message="saved as UTF-16 text (it starts with a UTF-16 byte-order mark): a config file is UTF-8",
            source=file,
            fix=f"iconv -f UTF-16 -t UTF-8 {quoted} > {quoted}.utf8 && mv {quoted}.utf8 {quoted}",
        )
    return Problem(
        key=file,
        message=f"not UTF-8 text (an undecodable byte at offset {error.start}): a config file is YAML text",
        source=file,
        fix="save it as UTF-8 text, or move it out of the config dir",
    )


def _utf16_text(file: str) -> bool:
    """True for a file that is text in UTF-16 with its byte-order mark (not bytes that start like one)."""
    try:
        with open(file, "rb") as f:
            data = f.read(1 << 20)
        text = data.decode("utf-16") if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
    except (OSError, UnicodeDecodeError):
        return False
    return bool(text) and sum(c.isascii() for c in text) >= 0.9 * len(text)


def undecodable_file(dirs: Iterable[str]) -> str | None:
    """The first `.yaml` under `dirs` that is not UTF-8 text (Hydra's loader does not name it)."""
    for root in dirs:
        for folder, _, names in sorted(os.walk(root)):
            for name in sorted(n for n in names if n.endswith(".yaml")):
                try:
                    with open(os.path.join(folder, name), encoding="utf-8") as f:
                        f.read()
                except UnicodeDecodeError:
                    return os.path.join(folder, name)
                except OSError:
                    continue
    return None


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate to a misspelled name, if any is close enough; letter case aside
    (`QUICKSTART`, `QWEN3_8B`: upper-case letters made every letter a mismatch)."""
    import difflib  # lazy: asked only once something is misspelt, not by every cold validate

    listed = list(candidates)
    by_lower = {candidate.lower(): candidate for candidate in listed}
    if name.lower() in by_lower:  # `h100` is H100, not the as-near V100 difflib may rank first
        return by_lower[name.lower()]
    if not name.isascii():  # `sееd` with Cyrillic е: the letters drawn as ASCII ones are those ones
        from t3rl_core.fields import ascii_lookalike  # lazy: only a name in other letters

        drawn = ascii_lookalike(name)
        if drawn is not None and drawn.lower() in by_lower:
            return by_lower[drawn.lower()]
    matches = difflib.get_close_matches(name, listed, n=1, cutoff=0.6)
    if matches:
        return matches[0]
    matches = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[matches[0]] if matches else None


def render_problems(problems: Sequence[Problem], console: Console | PlainConsole | None = None) -> None:
    """Print problems, errors first: key and message, then where the key was set and the fix.

    Lines are never wrapped, so a key, a path or a fix can be copied (and grepped) whole.
    """
    # The consoles import the secrets module, which Problem imports only once one is made.
    from launch.output import console as command_console  # lazy: only when problems are printed
    from launch.output.markup import escape  # lazy: only when problems are printed

    console = console or command_console(stderr=True)
    # Scrubbed again: values remembered since the problem was made (a config composed later) count too.
    problems = [Problem(p.key, p.message, p.source, p.fix, p.severity) for p in problems]
    for p in sorted(problems, key=lambda p: p.severity != "error"):
        colour = "red" if p.severity == "error" else "yellow"
        console.print(
            f"[bold {colour}]{p.severity}[/] [cyan]{escape(p.key or '<config>')}[/]: {escape(p.message)}",
            soft_wrap=True,
        )
        console.print(f"    set in: [magenta]{escape(p.source or '(schema default)')}[/]", soft_wrap=True)
        if p.fix:
            console.print(f"    fix: [green]{escape(p.fix)}[/]", soft_wrap=True)
    errors = sum(p.severity == "error" for p in problems)
    if errors:
        console.print(
            f"[red]{errors} config error(s)[/red]; nothing was launched or written.", soft_wrap=True
        )
