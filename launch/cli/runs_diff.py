"""`t3rl runs diff A B`: how two runs' configs differ, key by key, with the file or override that set
each side (from each run dir's provenance.json), and the overrides each was given.

Reads config.yaml, overrides.yaml and provenance.json only; nothing heavier than PyYAML and rich.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from launch.cli.results_compare import is_eval_record
from launch.output import console as command_console
from launch.output.plain import PlainConsole
from launch.output.table import TextTable
from launch.run import secret_fingerprints
from launch.run.config_diff import flatten
from launch.run.record_files import RunDirError, not_a_run_dir, read_json, read_yaml
from launch.run.rundir import RunDir
from launch.run.steps import PROVENANCE_FILE

_ABSENT = object()


@dataclass(frozen=True)
class KeyDifference:
    key: str
    a: Any
    b: Any


def config_differences(a: dict[str, Any], b: dict[str, Any]) -> list[KeyDifference]:
    """Every leaf key whose value differs (or exists on one side only), sorted by key."""
    flat_a, flat_b = flatten(a), flatten(b)
    return [
        KeyDifference(key, flat_a.get(key, _ABSENT), flat_b.get(key, _ABSENT))
        for key in sorted(flat_a.keys() | flat_b.keys())
        if flat_a.get(key, _ABSENT) != flat_b.get(key, _ABSENT)
    ]


def source_of(provenance: dict[str, str], key: str) -> str:
    """The recorded source of `key`, or of its nearest ancestor that has one."""
    parts = key.split(".")
    while parts:
        found = provenance.get(".".join(parts))
        if found:
            return found
        parts.pop()
    return ""


def diff_runs(a: Path, b: Path, console: Console | PlainConsole | None = None) -> int:
    console = console or command_console(highlight=False)
    for path in (a, b):
        why = not_a_run_dir(path)
        if why is not None:
            Console(stderr=True).print(f"[red]error:[/] {escape(why)}", soft_wrap=True)
            return 1
    configs = [read_yaml(p / "config.yaml", dict) for p in (a, b)]
    provenances = [_provenance(p) for p in (a, b)]
    overrides = [_overrides(p) for p in (a, b)]
    console.print(f"[bold]A[/] {escape(str(a))}\n[bold]B[/] {escape(str(b))}", soft_wrap=True)
    only_a = [o for o in overrides[0] if o not in overrides[1]]
    only_b = [o for o in overrides[1] if o not in overrides[0]]
    if only_a or only_b:
        console.print(
            f"overrides only in A: {escape(' '.join(only_a)) or '-'}\n"
            f"overrides only in B: {escape(' '.join(only_b)) or '-'}",
            soft_wrap=True,
        )
    differences = config_differences(*configs)
    secret, unknown = masked_differences(a, b, {d.key for d in differences})
    differences = sorted([*differences, *secret], key=lambda d: d.key)
    if not differences:
        console.print("the resolved configs are identical" + (f" ({unknown})" if unknown else ""))
        return 0
    if not [d for d in differences if d not in secret]:
        console.print(
            f"the resolved configs differ (secret): {len(secret)} masked value(s) differ", soft_wrap=True
        )
    # Aligned rows in a pipe or a log (launch.output.table): rich's table folded a key over two or three
    # lines there (`eval.engine.api_` / `key`), so `t3rl runs diff A B | grep lr` found no key.
    table = TextTable(f"{len(differences)} key(s) differ", ("key", "A", "B", "set in A", "set in B"))
    for difference in differences:
        table.add_row(
            escape(difference.key),
            escape(_show(difference.a)),
            escape(_show(difference.b)),
            escape(source_of(provenances[0], difference.key) if difference.a is not _ABSENT else ""),
            escape(source_of(provenances[1], difference.key) if difference.b is not _ABSENT else ""),
        )
    console.print(table)
    if unknown:  # the masked values the table could not compare, and why
        console.print(f"({escape(unknown)})", soft_wrap=True)
    missing = [path for path, provenance in zip((a, b), provenances, strict=True) if not provenance]
    if missing:
        why = escape(_no_provenance(missing))
        console.print(f"[dim]({why}: its sources are not shown)[/]", soft_wrap=True)
    return 0


def _no_provenance(paths: list[Path]) -> str:
    """Why these run dirs name no source per key: a `t3rl eval` record keeps none (its overrides are all
    its config has), a pipeline run written before t3rl kept provenance.json predates it."""
    evals = [p for p in paths if is_eval_record(p)]
    if len(evals) == len(paths):
        return "a `t3rl eval` record keeps no provenance.json (overrides.yaml holds what it was given)"
    return "a run without provenance.json predates it"


def masked_differences(a: Path, b: Path, seen: set[str]) -> tuple[list[KeyDifference], str]:
    """Keys both config.yaml files mask alike (`***`) whose values differ by their fingerprints
    (launch.run.secret_fingerprints), shown as "*** (secret, differs)"; and why masked values could not
    be compared, if they could not ("" when they were)."""
    try:
        prints = [secret_fingerprints.read(path) for path in (a, b)]
    except RunDirError as damaged:  # a detail of the diff: the configs are compared all the same
        return [], f"masked values not compared: {damaged}"
    if prints[0] is None or prints[1] is None:
        masked = any(p and p["values"] for p in prints)
        return [], "masked values not compared: a run predates secret fingerprints" if masked else ""
    values = [p["values"] for p in prints]
    keys = sorted((values[0].keys() | values[1].keys()) - seen)
    if prints[0]["key"] != prints[1]["key"] and prints[0]["key"] and prints[1]["key"]:
        return [], "masked values not compared: fingerprinted with different keys (another user or machine)"
    shown = "*** (secret, differs)"
    return [KeyDifference(k, shown, shown) for k in keys if values[0].get(k) != values[1].get(k)], ""


def _show(value: Any) -> str:
    if value is _ABSENT:
        return "(absent)"
    return json.dumps(value) if not isinstance(value, str) else value


def _provenance(path: Path) -> dict[str, str]:
    file = path / PROVENANCE_FILE
    return read_json(file, dict) if file.exists() else {}


def _overrides(path: Path) -> list[str]:
    """The run's overrides as a resume reads them (RunDir.read_overrides, the one reader of the file: a
    damaged one is named alike); none for a record without the file."""
    return RunDir(path).read_overrides() if (path / "overrides.yaml").exists() else []
