"""YAML text of plain data, as the plan files and runtime configs hold it, and read back.

libyaml's emitter when PyYAML was built with it (4–5 × faster than the pure-Python one on a run
config; `t3rl plan` writes several), else PyYAML's own. Both emit the same text for t3rl's configs
(tests/launch/test_yaml_text.py compares them on every shipped experiment).

The plain data t3rl dumps most (a run config, a runtime config: a mapping of mappings, lists and
scalars, `sort_keys=False`) is written line by line in the block text libyaml writes (`block_text`),
instead of through PyYAML's representer, node objects and emitter callbacks (~37 K instructions a node:
13 M for a plan's config.yaml). Only what is certain to read the same is written so; `block_text`
answers None for anything else, which PyYAML dumps: a key that is not a short word-like string, a scalar
of another type than str, int, float, bool or None (a subclass included), a container met twice
(PyYAML writes an anchor), a string with a line break. Scalars are PyYAML's own: the text of a number,
bool or null is its representer's, a word-like string is plain when PyYAML's resolver reads it back as
a string, and any other string is dumped alone by libyaml (its style does not depend on where a value
stands in a block mapping or sequence). tests/launch/test_yaml_block.py compares the text with
libyaml's on every shipped experiment's config and plan files and on generated data.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import yaml
from yaml.representer import SafeRepresenter
from yaml.resolver import Resolver

# A key or value written plain without asking libyaml: words of letters, digits, `_`, `.`, `/`, `-`, single
# spaces between them; not starting with `.` or `-` (`...`, `- x` and `-x` read otherwise). Keys longer
# than 128 characters are not simple keys to libyaml.
_WORDS = re.compile(r"[A-Za-z0-9_/][A-Za-z0-9_./-]*(?: [A-Za-z0-9_./-]+)*")
_MAX_KEY = 128
# No line folding: libyaml and PyYAML fold a long quoted string with escaped characters at different
# places, and one line per value is what a reader greps for anyway (t3rl_core.yaml_text dumps with it).
WIDTH = 1 << 30
_STR_TAG = "tag:yaml.org,2002:str"
# What may not stand in a value libyaml is asked to write alone: a line break of YAML's (a quoted value
# goes on over lines indented as deep as it stands).
_LINE_BREAK = re.compile("[\n\r\x85\u2028\u2029]")
_REPRESENTER = SafeRepresenter()
_RESOLVER = Resolver()
_SCALARS = (bool, int, float, type(None))


class _NotBlock(Exception):
    """Data this module does not write: PyYAML dumps it."""


def block_text(data: Any) -> str | None:
    """`yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=False, width=WIDTH)` for a non-empty dict of
    plain data; None when it is not certain to be the same."""
    if type(data) is not dict or not data:
        return None
    lines: list[str] = []
    try:
        _mapping(data, 0, "", lines, set())
    except _NotBlock:
        return None
    return "\n".join(lines) + "\n"


def _mapping(data: dict[Any, Any], column: int, first: str, lines: list[str], seen: set[int]) -> None:
    _once(data, seen)
    indent = " " * column
    for i, (key, value) in enumerate(data.items()):
        if type(key) is not str or len(key) > _MAX_KEY or not _plain(key):
            raise _NotBlock
        head = f"{first if i == 0 else indent}{key}:"
        kind = type(value)
        if kind is dict and value:
            lines.append(head)
            _mapping(value, column + 2, " " * (column + 2), lines, seen)
        elif kind is list and value:
            lines.append(head)
            _sequence(value, column, " " * column, lines, seen)  # not indented under its key
        else:
            lines.append(f"{head} {_leaf(value, seen)}")


def _sequence(data: list[Any], column: int, first: str, lines: list[str], seen: set[int]) -> None:
    _once(data, seen)
    indent = " " * column
    for i, item in enumerate(data):
        dash = f"{first if i == 0 else indent}- "
        kind = type(item)
        if kind is dict and item:
            _mapping(item, column + 2, dash, lines, seen)
        elif kind is list and item:
            _sequence(item, column + 2, dash, lines, seen)
        else:
            lines.append(dash + _leaf(item, seen))


def _leaf(value: Any, seen: set[int]) -> str:
    """An empty container or a scalar, as it follows `key: ` or `- `."""
    kind = type(value)
    if kind is dict or kind is list:
        _once(value, seen)
        return "{}" if kind is dict else "[]"
    if kind is str:
        if _plain(value):
            return value
        if _LINE_BREAK.search(value):
            raise _NotBlock
        return _alone(value)
    if kind in _SCALARS:
        node = _REPRESENTER.yaml_representers[kind](_REPRESENTER, value)
        if _RESOLVER.resolve(yaml.ScalarNode, node.value, (True, False)) != node.tag:
            raise _NotBlock
        return node.value
    raise _NotBlock


def _once(container: Any, seen: set[int]) -> None:
    """A container met a second time is written by PyYAML as an alias of the first (`&id001`)."""
    if id(container) in seen:
        raise _NotBlock
    seen.add(id(container))


@lru_cache(maxsize=4096)
def _plain(text: str) -> bool:
    """Written plain by libyaml: word-like, and read back as a string, not a bool or null (`on`, `null`)."""
    return (
        _WORDS.fullmatch(text) is not None
        and _RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) == _STR_TAG
    )


@lru_cache(maxsize=1024)
def _alone(text: str) -> str:
    """`text` as libyaml writes it as a value: dumped alone, its document end marker taken off."""
    dumped = yaml.dump(text, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), width=WIDTH)
    return dumped.removesuffix("\n...\n").removesuffix("\n")


def safe_dump(data: Any, **options: Any) -> str:
    """`yaml.safe_dump(data, width=WIDTH, **options)`, through libyaml when available; the plain data of
    a plan's files (`sort_keys=False`) written directly in libyaml's text (`block_text`)."""
    options.setdefault("width", WIDTH)
    if options == {"sort_keys": False, "width": WIDTH}:
        text = block_text(data)
        if text is not None:
            return text
    return yaml.dump(data, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), **options)


def safe_load(text: str) -> Any:
    """`yaml.safe_load(text)`, parsed by libyaml when available (~7 × faster: pre-flight reads every
    `model/` option of a cold validate). Text libyaml rejects is read again by PyYAML's own parser, so
    what loads and every error stay PyYAML's."""
    loader = getattr(yaml, "CSafeLoader", None)
    if loader is not None:
        try:
            return yaml.load(text, Loader=loader)
        except yaml.YAMLError:
            pass
    return yaml.safe_load(text)
