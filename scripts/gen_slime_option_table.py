#!/usr/bin/env python3
"""Generate t3rl's slime/Megatron option table from a slime and a Megatron-LM checkout.

slime parses its argv with `parse_known_args`, so t3rl checks every argv it builds against the real
option set (`launch.plan.slime_options`). This script builds that set the way slime does: Megatron's
`megatron.training.arguments.add_megatron_arguments` (with slime's `docker/patch/latest/megatron.patch`
applied to a temporary copy, as slime's image does), then slime's `get_slime_extra_args_provider()`
on the same parser, plus the four mode flags slime's `_pre_parse_mode` reads first. Every action's
option strings, nargs, type and choices are written to a data-only Python module whose header names
the two commits.

Regenerate when slime (or the Megatron commit its image pins) moves:

    git clone https://github.com/THUDM/slime && git clone https://github.com/NVIDIA/Megatron-LM
    git -C Megatron-LM checkout <commit pinned by slime's docker/Dockerfile>
    .venv/bin/python scripts/gen_slime_option_table.py --slime slime --megatron Megatron-LM

It needs torch (the CPU build in `.venv` is enough) because Megatron's argument module imports it,
and the pinned ruff, which formats the table as the repository is formatted;
slime's SGLang-side modules are replaced by stand-ins, since only its option builder is needed.
Never commit the checkouts. `--check` compares instead of writing (exit 1 when the table differs).
"""

from __future__ import annotations

import argparse
import enum
import json
import shutil
import subprocess
import sys
import tempfile
import types
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "launch" / "plan" / "slime_option_table.py"
MEGATRON_PATCH = "docker/patch/latest/megatron.patch"
# slime modules its option builder never calls but its argument module imports (they need SGLang's
# serving stack); stand-ins keep the import light.
STAND_INS = ("slime.backends.sglang_utils.arguments", "slime.backends.sglang_utils.external")

Row = tuple[str, tuple[str, ...], Any, str | None, tuple[Any, ...] | None]


def commit_of(checkout: Path, given: str | None) -> str:
    """The checkout's HEAD commit (or the one named on the command line for a non-git copy)."""
    if given:
        return given
    done = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.exit(f"{checkout} is not a git checkout: pass its commit with --megatron-commit/--slime-commit")
    return done.stdout.strip()


def patched_megatron(megatron: Path, slime: Path, work: Path) -> Path:
    """A copy of the `megatron` package with slime's Megatron patch applied (when slime ships one)."""
    copy = work / "megatron-patched"
    shutil.copytree(megatron / "megatron", copy / "megatron", ignore=shutil.ignore_patterns("*.pyc"))
    patch = slime / MEGATRON_PATCH
    if patch.is_file():
        done = subprocess.run(
            ["patch", "-p1", "-s", "-d", str(copy), "-i", str(patch.resolve())],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            sys.exit(f"slime's {MEGATRON_PATCH} does not apply to this Megatron:\n{done.stdout}{done.stderr}")
    return copy


@contextmanager
def captured_parsers() -> Iterator[list[argparse.ArgumentParser]]:
    """Record every parser that calls parse_known_args (slime's pre-parser) without parsing anything."""
    seen: list[argparse.ArgumentParser] = []
    original = argparse.ArgumentParser.parse_known_args

    def capture(self: argparse.ArgumentParser, *_: Any, **__: Any) -> tuple[argparse.Namespace, list[str]]:
        seen.append(self)
        return argparse.Namespace(), []

    argparse.ArgumentParser.parse_known_args = capture  # type: ignore[method-assign,assignment]
    try:
        yield seen
    finally:
        argparse.ArgumentParser.parse_known_args = original  # type: ignore[method-assign]


def collect(megatron_root: Path, slime_root: Path) -> list[Row]:
    """(source, option strings, nargs, type name, choices) of every option slime's parsers define."""
    sys.path[:0] = [str(megatron_root), str(slime_root)]
    for name in STAND_INS:
        stand_in = types.ModuleType(name)
        stand_in.__getattr__ = lambda attr: None  # type: ignore[method-assign]
        sys.modules[name] = stand_in
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.training.arguments import add_megatron_arguments
        from slime.utils import arguments as slime_arguments

    # Megatron's parse_args builds its parser exactly so (no abbreviations) before slime extends it.
    parser = argparse.ArgumentParser(description="Megatron-LM Arguments", allow_abbrev=False)
    add_megatron_arguments(parser)
    megatron_actions = {id(action) for action in parser._actions}
    slime_arguments.get_slime_extra_args_provider()(parser)
    rows = [
        describe("megatron" if id(a) in megatron_actions else "slime", a)
        for a in parser._actions
        if a.option_strings and not isinstance(a, argparse._HelpAction)
    ]
    with captured_parsers() as seen:
        slime_arguments._pre_parse_mode()
    for pre in seen:
        rows += [describe("slime-mode", a) for a in pre._actions if a.option_strings]
    return rows


def describe(source: str, action: argparse.Action) -> Row:
    if action.nargs == 0 or isinstance(action, argparse.BooleanOptionalAction):
        return (source, tuple(action.option_strings), 0, None, None)
    nargs = 1 if action.nargs is None else action.nargs
    return (source, tuple(action.option_strings), nargs, type_name(action.type), choices_of(action))


def type_name(kind: Any) -> str:
    """A stable name for an option's type function (argparse passes plain strings when there is none)."""
    if kind is None:
        return "str"
    module, qualname = getattr(kind, "__module__", ""), getattr(kind, "__qualname__", repr(kind))
    if module == "builtins":
        return qualname
    if "enum_type_handler" in qualname:
        return "enum"  # Megatron's dataclass arguments: an Enum member by name
    if module == "json":
        return f"json.{qualname}"
    if "<" in qualname:
        return f"{module}:{qualname}"  # an inline lambda: no stable name, checked only by its choices
    return qualname


def choices_of(action: argparse.Action) -> tuple[Any, ...] | None:
    if action.choices is None:
        return None
    return tuple(c.name if isinstance(c, enum.Enum) else c for c in action.choices)


def render(rows: Sequence[Row], megatron_commit: str, slime_commit: str) -> str:
    """The table module's text (deterministic: one line per option string, sorted)."""
    lines = [
        '"""The options slime and Megatron-LM accept, with nargs, type and choices (generated, data only).',
        "",
        "Generated by scripts/gen_slime_option_table.py from the two checkouts named below (slime's",
        f"{MEGATRON_PATCH} applied to Megatron); do not edit by hand, regenerate (see that script).",
        '"""',
        "",
        "from typing import Any, Literal",
        "",
        "from t3rl_core.records import Record",
        "",
        f'MEGATRON_LM_COMMIT = "{megatron_commit}"',
        f'SLIME_COMMIT = "{slime_commit}"',
        "",
        "",
        "class Option(Record):",
        '    """One option: who defines it, its number of value tokens, its type function, its choices."""',
        "",
        '    source: Literal["megatron", "slime", "slime-mode"]',
        '    nargs: int | Literal["?", "+", "*"]  # 0 = a switch, 1 = one value, N = exactly N values',
        "    type: str | None  # a builtin, json.loads, a Megatron type function, `enum`, or module:qualname",
        "    choices: tuple[Any, ...] | None",
        "",
        "",
        "OPTIONS: dict[str, Option] = {",
    ]
    flat = sorted((name, (source, nargs, kind, choices)) for source, names, nargs, kind, choices in rows
                  for name in names)  # fmt: skip
    for name, fields in flat:
        lines.append(f"    {literal(name)}: Option({', '.join(map(literal, fields))}),")
    lines.append("}")
    return formatted("\n".join(lines) + "\n")


def formatted(text: str) -> str:
    """The text as `ruff format` (the repository's formatter, pinned in the lock) leaves it."""
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(DEFAULT_OUT), "-"],
        input=text,
        capture_output=True,
        text=True,
        check=False,
        cwd=DEFAULT_OUT.parents[2],
    )
    if done.returncode != 0:
        sys.exit(f"ruff format failed: {done.stderr}")
    return done.stdout


def literal(value: Any) -> str:
    """A Python literal in double quotes (json's string escaping is valid Python)."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, tuple):
        return "(" + ", ".join(map(literal, value)) + ("," if len(value) == 1 else "") + ")"
    return repr(value)


def main(argv: Sequence[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--megatron", type=Path, required=True, help="a Megatron-LM checkout (its root)")
    cli.add_argument("--slime", type=Path, required=True, help="a slime checkout (its root)")
    cli.add_argument("--megatron-commit", help="commit of --megatron when it is not a git checkout")
    cli.add_argument("--slime-commit", help="commit of --slime when it is not a git checkout")
    cli.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"table to write (default {DEFAULT_OUT})")
    cli.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    args = cli.parse_args(argv)
    megatron_commit = commit_of(args.megatron, args.megatron_commit)
    slime_commit = commit_of(args.slime, args.slime_commit)
    with tempfile.TemporaryDirectory(prefix="t3rl-options-") as work:
        rows = collect(patched_megatron(args.megatron, args.slime, Path(work)), args.slime)
    text = render(rows, megatron_commit, slime_commit)
    if args.check:
        same = args.out.is_file() and args.out.read_text() == text
        print(f"{args.out}: {'up to date' if same else 'differs from the checkouts'}")
        return 0 if same else 1
    args.out.write_text(text)
    print(f"wrote {args.out}: {sum(len(row[1]) for row in rows)} option strings")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
