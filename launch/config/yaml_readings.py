"""Scalars of a config file that YAML 1.1 reads otherwise than they are written.

Hydra reads config files with PyYAML, which follows YAML 1.1: an unquoted `12:00:00` is the base-60
integer 43200, `0123` the octal 83, and `yes`/`no`/`on`/`off` are booleans. YAML 1.2 (and every reader
of the file) reads them as written: the text `12:00:00`, the number 123, the words. So a SLURM time limit
of twelve hours became 43200 minutes, and the schema's answer ("a valid string, got 43200") quoted the
number back as the fix. The declaration is the file's text: a value a file set is what its text says,
else it is refused at its key with the text as the fix: quoted where the field takes text, the decimal
number where it takes a number. A boolean word where the field takes a boolean means what it says.
An item of a list is read the same way (`extra_sbatch: [--exclusive, on]`, `pass_k: [1, 010]`), and
refused at the list's key with the whole list as the fix. (A value set by an override is Hydra's
grammar, which reads `[on, off]` and `010` as the text written.)
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from launch.config.errors import Problem
from launch.config.fixes import quoted, typed_text
from launch.config.provenance import Provenance
from t3rl_core.records import Record
from t3rl_core.yaml_text import safe_load

# Pattern strings compiled, and cached by `re`, on first use: a cold plan of the shipped configs reads
# no number that needs either.
_SEXAGESIMAL = r"[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?"
_OCTAL = r"[-+]?0[0-7_]+"
_WORDS = frozenset(w for word in ("yes", "no", "on", "off") for w in (word, word.title(), word.upper()))
# Cheap pre-filter on a file's text: a whole value that may be one of the above, after `: ` or `- `, or
# in a flow list after `[` or `,`. It starts with one class of the four characters (the look-behind then
# tells which one stood there), so that re skips to them instead of trying a match at every character:
# about half the instructions of a cold plan's scan of its files.
_MAYBE = re.compile(
    r"[-:\[,](?:(?<=[:-])[ \t]+|(?<=[\[,])[ \t]*)"
    r"[-+]?([0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?|0[0-7_]+|(?i:yes|no|on|off))[ \t]*([#,}\]]|$)",
    re.M,
)
_SCALAR_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool")


class Misread(Record):
    """A plain scalar of a file whose YAML 1.1 value is not what its text says."""

    text: str
    value: Any
    # What YAML 1.1 made of it, for the message.
    reading: str
    # For an item of a list: its index, and the whole list as read (the key is the list's, dot index).
    index: int | None = None
    whole: tuple[Any, ...] = ()


def misread(provenance: Provenance) -> dict[str, tuple[Misread, str]]:
    """Key → (its misread scalar, where it was set), for every key whose last value came from a file."""
    found: dict[str, tuple[Misread, str]] = {}
    for key, origin in provenance.items():
        if origin.deleted or origin.source.startswith("override") or isinstance(origin.raw, dict):
            continue
        raw = origin.raw
        for path, scalar in _of_file(origin.source).items():
            if scalar.index is None:
                if not isinstance(raw, list) and _ends(key, path) and scalar.value == raw:
                    found[key] = (scalar, origin.describe())
            elif (
                isinstance(raw, list)
                and _ends(key, path.rpartition(".")[0])
                and scalar.index < len(raw)
                and raw[scalar.index] == scalar.value
            ):
                item = scalar._replace(whole=tuple(raw))
                found[f"{key}.{scalar.index}"] = (item, origin.describe())
    return found


def _ends(key: str, path: str) -> bool:
    return key == path or key.endswith("." + path)


def as_problems(found: dict[str, tuple[Misread, str]], refused: set[str]) -> list[Problem]:
    """One problem per misread key. A key in `refused` (the schema did not take the value YAML read)
    takes text: its fix is the text quoted; any other takes a number: the number the text says."""
    problems = []
    items: dict[str, list[tuple[Misread, str]]] = {}
    for key, (scalar, source) in sorted(found.items()):
        if scalar.index is not None:
            items.setdefault(key.rpartition(".")[0], []).append((scalar, source))
            continue
        if scalar.reading == "a boolean" and key not in refused:
            continue  # `use_kl_loss: yes` on a boolean field means what it says
        meant = quoted(scalar.text) if key in refused else _number(scalar.text)
        if meant is None:
            continue
        where = "quote it in the file" if key in refused else "write it as a plain decimal in the file"
        meant_as = f"the text {scalar.text}" if key in refused else f"the number {meant}"
        problems.append(
            Problem(
                key,
                f"`{scalar.text}` written unquoted is {scalar.reading} {typed_text(scalar.value)} to Hydra's "
                f"YAML 1.1 loader, not {meant_as}",
                source,
                f"set {key}={meant} ({where})",
            )
        )
    return problems + [
        problem for key, misread in items.items() if (problem := _list_problem(key, misread, key in refused))
    ]


def _list_problem(key: str, items: list[tuple[Misread, str]], refused: bool) -> Problem | None:
    """A list with items YAML 1.1 misread: the whole list as meant, each such item as its text says (a
    boolean word on a list the schema took is a list of booleans, and stands)."""
    meant: dict[int, str] = {}
    said = []
    for scalar, _ in items:
        text = f"'{scalar.text}'" if refused else _number(scalar.text)
        if text is None:
            continue
        meant[scalar.index or 0] = text
        as_typed = f"the text {scalar.text}" if refused else f"the number {text}"
        value = f"{scalar.reading} {typed_text(scalar.value)}"
        said.append(f"`{scalar.text}` (item {scalar.index} of the list) written unquoted is {value}")
        said[-1] += f" to Hydra's YAML 1.1 loader, not {as_typed}"
    if not said:
        return None
    whole = items[0][0].whole
    written = ",".join(meant.get(i, _typed(value)) for i, value in enumerate(whole))
    where = "quote it in the file" if refused else "write it as a plain decimal in the file"
    return Problem(
        key,
        "; ".join(said),
        items[0][1],
        f"set {key}=[{written}] ({where})",
    )


def _typed(value: Any) -> str:
    """A list item as an override writes it."""
    if isinstance(value, str):
        return quoted(value)
    return typed_text(value)


def _number(text: str) -> str | None:
    """The decimal number a human reads in `text`; None for a base-60 or boolean text."""
    if re.fullmatch(_OCTAL, text):
        return str(int(text.replace("_", ""), 10))
    return None


@cache
def _of_file(file: str) -> dict[str, Misread]:
    """Dotted path within `file` (its package not included) → a misread scalar there."""
    try:
        text = Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    if not _MAYBE.search(text):
        return {}
    try:
        root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return {}
    found: dict[str, Misread] = {}
    _walk(root, "", found)
    return found


def _walk(node: Any, path: str, found: dict[str, Misread], index: int | None = None) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and not (not path and key.value == "defaults"):
                _walk(value, f"{path}.{key.value}" if path else str(key.value), found)
    elif isinstance(node, yaml.SequenceNode) and path:
        for i, item in enumerate(node.value):
            _walk(item, f"{path}.{i}", found, i)
    elif isinstance(node, yaml.ScalarNode) and not node.style and node.tag in _SCALAR_TAGS:
        reading = _reading(node.value)
        if reading:
            found[path] = Misread(node.value, safe_load(node.value), reading, index)


def _reading(text: str) -> str | None:
    if re.fullmatch(_SEXAGESIMAL, text):
        return "the base-60 number"
    if re.fullmatch(_OCTAL, text) and int(text.replace("_", ""), 8) != int(text.replace("_", ""), 10):
        return "the octal number"
    if text in _WORDS:
        return "a boolean"
    return None


def with_readings(problems: list[Problem], found: dict[str, tuple[Misread, str]]) -> list[Problem]:
    """The schema's problems, each at a misread key replaced by what the file's text says (and the
    misread keys the schema took, which its text says otherwise)."""
    # A key the schema does not know is refused for its name, not its value.
    unknown = {p.key for p in problems if p.message.startswith("unknown key")}
    found = {key: misread for key, misread in found.items() if key not in unknown}
    # a list with a misread item: refused at its key or at the item's
    lists = {key.rpartition(".")[0] for key, (scalar, _) in found.items() if scalar.index is not None}
    at = {p.key: p.key if p.key in found or p.key in lists else p.key.rpartition(".")[0] for p in problems}
    refused = {owner for owner in at.values() if owner in found or owner in lists}
    return [p for p in problems if at[p.key] not in refused] + as_problems(found, refused)
