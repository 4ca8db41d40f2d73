"""Adversarial values for every option and argument of `t3rl`, drawn from the CLI's own declarations.

`parameters()` walks the command tree Typer builds (every command and subcommand, every option and
argument with its declared annotation, bounds and metavar), and `cases(world)` gives each parameter the
hostile values of its kind: a path parameter gets missing paths, a file where a directory is expected
(and the other way), a dangling symlink, odd names (spaces, unicode, a newline, a leading '-'), a path
inside a read-only dir and a 5,000-character path; a number gets negatives, zero, huge, nan, inf,
'1e3', '0x10' and ''; a closed set of words gets a wrong case and a near-miss; free text gets '', control
characters and 10,000 characters. Each option is also given twice, and misspelt by one letter. A
parameter added later is hunted with no edit here, unless its command needs a line to reach it (BASE).
"""

from __future__ import annotations

import json
import os
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer.main

from launch.cli.app import app
from launch.cli.help_format import PATH_METAVARS
from launch.plan.slime_args import _without_flag

# The command line each command needs around the parameter hunted, so that a value the command
# accepts is then stopped before real work (the test module stubs eval's episodes and data's
# preparation), and how that line alone ends: (code, a phrase of its output). A hunted case ending the
# same way was accepted by the command and stopped by the line around it. Placeholders: `{file}` a
# small JSONL file, `{empty}` an empty one, `{dir}` an empty dir, `{eval_data}` one BFCL row, `{new}` a
# dir not there yet.
BASE: dict[tuple[str, ...], tuple[list[str], int, str]] = {
    ("run",): (["+experiment=quickstart", "executor=dry"], 0, "run it:"),
    ("plan",): (["+experiment=quickstart"], 0, "run it:"),
    ("validate",): (["+experiment=quickstart"], 0, "valid: quickstart"),
    ("show",): (["+experiment=quickstart"], 0, "name: quickstart"),
    ("eval",): (["+experiment=quickstart", "--engine", "reference", "--data", "{eval_data}"], 0, ""),
    ("data", "bfcl"): (["--out", "{new}"], 0, ""),
    ("score",): (["bfcl", "{file}", "--data", "{empty}"], 2, "holds no row"),
    ("check-template",): (["qwen3_8b"], 0, "checks pass"),
    ("rollouts", "show"): (["{file}"], 2, "not a file torch.save wrote"),
    ("runs", "diff"): (["{dir}", "{dir}"], 1, "is not a t3rl run dir"),
    ("runs", "show"): (["{dir}"], 1, "is not a t3rl run dir"),
    ("runs",): ([], 0, "no runs yet"),
    ("ls",): (["experiment"], 0, "quickstart"),  # GROUP given: OPTION is the word after it
}
# Options of Typer's own, or that act on the user's shell (never run from a test).
SKIPPED = frozenset({"--install-completion", "--show-completion", "--help", "-h", "--version", "-V"})
# Exit codes a command refuses a bad value with (docs/reference/cli-behaviour.md's table): 2 a bad
# argument or config, nothing started; 1 also where the table gives it to an argument (a run dir that
# cannot be used).
REFUSAL_CODES = {2}
DOCUMENTED_ONE = {("run",), ("plan",), ("runs", "show"), ("runs", "diff")}


def refusal_codes(command: tuple[str, ...]) -> set[int]:
    return REFUSAL_CODES | ({1} if command in DOCUMENTED_ONE else set())


@dataclass(frozen=True)
class Parameter:
    """One option or argument as the command declares it."""

    command: tuple[str, ...]
    # `--out` for an option (its first long name), the metavar for an argument.
    name: str
    names: tuple[str, ...]
    kind: str  # path | int | float | choice | text | flag | overrides
    argument: bool
    multiple: bool
    metavar: str | None
    low: float | None
    choices: tuple[str, ...]
    # The position among the command's arguments (arguments only).
    position: int
    high: float | None = None


def _kind(param: Any) -> str:
    desc = param.type_descriptor
    annotation = desc.annotation
    inner = typing.get_args(annotation)[0] if typing.get_origin(annotation) is list else annotation
    if getattr(param, "is_flag", False):
        return "flag"
    if desc.choices is not None:
        return "choice"
    if param.param_type_name == "argument" and param.nargs == -1:
        return "overrides"
    if inner is int:
        return "int"
    if inner is float:
        return "float"
    if inner is Path or desc.is_path or param.metavar in PATH_METAVARS:
        return "path"
    # A closed set only its metavar spells (`metavar="eval|train"` on a str) is free text: nothing
    # refuses another word before the command runs (tests/support/cli_domain_hunt.undeclared finds it).
    return "text"


def _choices(param: Any) -> tuple[str, ...]:
    desc = param.type_descriptor
    if desc.choices is not None:
        return tuple(str(getattr(c, "value", c)) for c in desc.choices)
    return ()


def _walk(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _walk(sub, (*path, name))


def commands(root: Any = None) -> list[tuple[tuple[str, ...], Any]]:
    """Every command and group of `t3rl` (or of the Click command `root`), by its words."""
    return list(_walk(typer.main.get_command(app) if root is None else root))


def parameters(root: Any = None) -> list[Parameter]:
    """Every option and argument of every command (of `t3rl`, or of `root`), as declared."""
    found: list[Parameter] = []
    for path, command in commands(root):
        position = 0
        for param in command.params:
            if SKIPPED & set(param.opts):
                continue
            argument = param.param_type_name == "argument"
            longs = [o for o in param.opts if o.startswith("--")] or list(param.opts)
            found.append(
                Parameter(
                    command=path,
                    name=param.metavar if argument else longs[0],
                    names=tuple(param.opts),
                    kind=_kind(param),
                    argument=argument,
                    multiple=bool(getattr(param, "multiple", False)),
                    metavar=param.metavar,
                    low=param.type_descriptor.parameter_info.min,
                    choices=_choices(param),
                    position=position,
                    high=param.type_descriptor.parameter_info.max,
                )
            )
            position += argument
    return found


@dataclass(frozen=True)
class World:
    """A directory holding what path values point at."""

    root: Path

    @property
    def file(self) -> Path:
        return self.root / "a file.jsonl"

    @property
    def dir(self) -> Path:
        return self.root / "a dir"

    @property
    def readonly(self) -> Path:
        return self.root / "read-only"

    def spell(self, word: str) -> str:
        """A base line's word, its placeholder filled in."""
        names = {"{file}": self.file, "{dir}": self.dir, "{empty}": self.root / "empty.jsonl"}
        names |= {"{eval_data}": self.root / "bfcl_test.jsonl", "{new}": self.root / "new-out"}
        return str(names[word]) if word in names else word


def make_world(root: Path) -> World:
    """The files path values name: a JSONL file, an empty dir, a dangling link, a read-only dir."""
    world = World(root)
    root.mkdir(parents=True, exist_ok=True)
    world.file.write_text('{"not": "a trajectory"}\n')
    world.dir.mkdir()
    (root / "dangling").symlink_to(root / "gone")
    (root / "empty.jsonl").write_text("\n")
    row = {"prompt": [{"role": "user", "content": "x"}], "metadata": {"index": "multi_turn_base_0"}}
    row["metadata"]["data_source"] = "multi_turn_base"
    (root / "bfcl_test.jsonl").write_text(json.dumps(row) + "\n")
    world.readonly.mkdir()
    world.readonly.chmod(0o555)
    return world


@dataclass(frozen=True)
class Value:
    """An adversarial value of one kind: its id and how to spell it in a world."""

    id: str
    text: Callable[[World], str]
    # Needs the read-only dir to be read-only to mean anything (not so for root).
    needs_non_root: bool = False


def _path_values(metavar: str | None) -> list[Value]:
    wants_dir = metavar in {"DIR", "RUN_DIR", "A", "B"}
    values = [
        Value("missing", lambda w: str(w.root / "no" / "such")),
        Value("dangling-symlink", lambda w: str(w.root / "dangling")),
        Value("spaces-unicode", lambda w: str(w.root / "ñame with spaces ✓")),
        Value("newline", lambda w: str(w.root / "new\nline")),
        Value("leading-dash", lambda w: "-dash"),
        Value("read-only", lambda w: str(w.readonly / "inside"), needs_non_root=True),
        Value("5000-chars", lambda w: str(w.root) + ("/" + "d" * 199) * 25),
    ]
    if wants_dir:
        values.append(Value("file-for-dir", lambda w: str(w.file)))
    else:
        values.append(Value("dir-for-file", lambda w: str(w.dir)))
    return values


_NUMBERS = {
    "negative": "-1",
    "zero": "0",
    "huge": "1" + "0" * 40,
    "nan": "nan",
    "inf": "inf",
    "exponent": "1e3",
    "hex": "0x10",
    "empty": "",
}

_TEXTS = {
    "empty": "",
    "control-chars": "a\x01b\x1b[31mc\x7f",
    "10k-chars": "x" * 10_000,
}


def values_of(parameter: Parameter) -> list[Value]:
    """The adversarial values of the parameter's kind."""
    if parameter.kind == "path":
        return _path_values(parameter.metavar)
    if parameter.kind in ("int", "float"):
        return [Value(k, lambda w, v=v: v) for k, v in _NUMBERS.items()]
    if parameter.kind == "choice":
        first = parameter.choices[0]
        return [
            Value("wrong-case", lambda w, c=first: c.upper()),
            Value("near-miss", lambda w, c=first: c[:-1] + ("x" if c[-1] != "x" else "y")),
        ]
    if parameter.kind == "text":
        return [Value(k, lambda w, v=v: v) for k, v in _TEXTS.items()]
    return []


def with_value(parameter: Parameter, value: str, world: World) -> list[str]:
    """The command line giving `parameter` the value: an option after the base line (`--opt=value`, so
    a value with a leading '-' stays its value), an argument in its place among the base line's
    arguments, and in every other place that held the same word (`runs diff A B`: both, or A's refusal
    would hide B's)."""
    base = BASE.get(parameter.command, ([], 0, ""))[0]
    if not parameter.argument:
        return [*parameter.command, *map(world.spell, without(base, parameter)), f"{parameter.name}={value}"]
    positional = [
        i
        for i, word in enumerate(base)
        if not word.startswith("-") and (i == 0 or not base[i - 1].startswith("--"))
    ]
    words = list(base)
    if parameter.position < len(positional):
        replaced = base[positional[parameter.position]]
        words = [value if i in positional and w == replaced else w for i, w in enumerate(base)]
    else:
        words.append(value)
    words = list(map(world.spell, words))
    options = [w for i, w in enumerate(words) if i not in positional and i < len(base)]
    arguments = [w for i, w in enumerate(words) if i in positional or i >= len(base)]
    # After `--`, a value with a leading '-' is an argument, as a shell user would write it.
    return [*parameter.command, *options, "--", *arguments]


def without(line: list[str], parameter: Parameter) -> list[str]:
    """`line` without the option `parameter` and its value (a single-valued option is given once)."""
    for name in parameter.names:  # the base lines give no flag: every option there takes a value
        line = _without_flag(line, name)
    return line


def near_miss(name: str) -> str:
    """The option name with two letters swapped (`--out` → `--otu`): one keystroke from the real one."""
    dashes = name[: len(name) - len(name.lstrip("-"))]
    body = name.lstrip("-")
    for i in range(len(body) - 2, 0, -1):  # the last two different letters (`--full`: not 'll')
        if body[i] != body[i + 1] and body[i].isalpha() and body[i + 1].isalpha():
            return dashes + body[:i] + body[i + 1] + body[i] + body[i + 2 :]
    return name + name[-1]  # `--k` → `--kk`


def heavy_modules() -> set[str]:
    """The heavy frameworks a command must not import to check a config."""
    import sys

    return {name for name in ("torch", "transformers", "ray", "sglang", "wandb") if name in sys.modules}


def is_root() -> bool:
    return os.geteuid() == 0
