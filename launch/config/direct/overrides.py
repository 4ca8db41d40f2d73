"""Command-line overrides in the forms people type every day, read and applied as Hydra does.

Read: `key=value`, `+key=value`, `++key=value` and `~key` with a key of dotted names and a value
Hydra's grammar reads as one token of a known type: an integer, a decimal or exponent float,
true/false, null, or a word of letters, digits and `_ . / : -` (not starting with a digit; dashes
first, as a flag's name; any start with a `:` or `/` in it, as a relative path or a time), `inf` and
`nan` with a sign or none, a string in single or double quotes holding no backslash, `$` or its own
quote, a list `[…]` of such values, or a mapping `{k: v, …}` of names to such values, lists or
mappings. Anything else (sweeps, lists in lists, escapes, interpolations, `~key=value`, Hydra's own
`hydra.*` but a sweeper's settings, see `SWEEPER_SETTINGS`) is Unsupported; `group@package=option`
chooses the option of a group's entry at that package. Applied: `key=value` to a key the config has
(a scalar; a list to a list, its items replaced), `+key=value` to a key it lacks (a scalar also to one
holding null), `++key=value` to either (a scalar over a scalar, a list over a list), null over a list
or a mapping (without `+`), as OmegaConf sets a value: in place, where the box or list is shared; a
mapping as `OmegaConf.update(merge=True)` sets it (see `_apply_mapping`); `~key` deletes a key holding
a value (Hydra refuses one holding null as missing).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from launch.config.direct.nodes import Box, boxed, is_interpolation, merge
from launch.config.direct.unsupported import Unsupported
from launch.config.optional_groups import optional_group_choice
from t3rl_core.records import Record

_KEY = r"[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)*"
_LINE = re.compile(rf"(\+{{0,2}})({_KEY})=(.+)", re.DOTALL)
_DELETE = re.compile(rf"~({_KEY})")
# `group@package=option`: another option for the group's entry at that package (a group mounted
# elsewhere, as `/published@eval.published: t3rl_bfcl` in an experiment's defaults list).
_MOUNTED = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*(?:/[A-Za-z_][A-Za-z0-9_-]*)*@" + _KEY + r")=(.+)", re.DOTALL)
_INT = re.compile(r"-?(0|[1-9][0-9]*)")
_FLOAT = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+([eE][-+]?[0-9]+)?|[eE][-+]?[0-9]+)")
_WORD = re.compile(r"[A-Za-z_/][A-Za-z0-9_./:-]*")
# A flag's name, as extra_args lists hold them (`[--context-length,4096]`): Hydra reads dashes before a
# word as text; `-inf` and `-nan` alone are floats.
_DASHED_WORD = re.compile(r"-+[A-Za-z_][A-Za-z0-9_./:-]*")
# Text Hydra's grammar reads from several tokens, as a relative path or a time is typed (`../runs`,
# `1-00:00:00`): a `:` or `/` is a token of its own, so no number or keyword spans the whole value.
_SEVERAL_TOKENS = re.compile(r"[A-Za-z0-9_.:/-]*[:/][A-Za-z0-9_.:/-]*")
# Floats Hydra's grammar spells in letters, in any case and with a sign.
_FLOAT_WORD = re.compile(r"[-+]?(inf|nan)", re.IGNORECASE)
# Hydra's lexer reads every character between the quotes as it stands (line breaks too) except a
# backslash (an escape), `$` (an interpolation) and the closing quote; typed values are quoted to keep
# them text (`'1.2.3.4'`, `''`, `'--x'`, `'a b'`), and they composed with Hydra.
_QUOTED = re.compile(r"'([^'\\$]*)'|\"([^\"\\$]*)\"")
# OmegaConf reads this string as a value left unset, not as text.
_MISSING = "???"
# A list's items, each a quoted string or a run without separators, quotes or brackets (read as a value
# above), spaces around it dropped as Hydra's grammar drops them.
_ITEM = re.compile(r"\s*('[^']*'|\"[^\"]*\"|[^\s,'\"\[\]{}]+)\s*(,|$)")
# A mapping's key (a name; Hydra reads others, keywords and numbers, as other types) and its colon; a
# scalar value in a mapping as a list's item above, without a colon (Hydra's grammar reads `a: b:c`
# its own way); the end of a pair; a mapping's end; spaces, which Hydra's grammar drops around tokens.
_MAPPING_KEY = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*:")
_MAPPING_SCALAR = re.compile(r"('[^']*'|\"[^\"]*\"|[^\s,'\"\[\]{}:]+)\s*")
_PAIR_END = re.compile(r"\s*([,}])")
_MAPPING_EMPTY = re.compile(r"\{\s*\}")
_SPACES = re.compile(r"\s*")
_NOT_NAMES = {"true", "false", "null", "inf", "nan"}
# Words Hydra's grammar reads as another type (case-insensitive).
_KEYWORDS = {"true": True, "false": False, "null": None}
# Keys whose overrides set Hydra's own node (a search's file shapes it too: see DeferredHydra).
_HYDRA_KEYS = ("hydra",)
# Of those, the settings of a search's sweeper (`++hydra.sweeper.n_trials=20`): read here, set in Hydra's
# node alone, which the composition defers once Hydra has accepted them on the same node
# (launch.config.direct.compose). Deleting one (`~`) is left to Hydra.
SWEEPER_SETTINGS = "hydra.sweeper."


class Override(Record):
    """One command-line override: `text` as given to the composition, its key and typed value."""

    text: str
    key: str
    value: Any
    # "" (set), "+" (add), "++" (add or set) or "~" (delete).
    prefix: str

    @property
    def add(self) -> bool:
        return self.prefix == "+"

    @property
    def delete(self) -> bool:
        return self.prefix == "~"

    def key_element(self) -> str:
        """Hydra's key element: the key with its prefix."""
        return f"{self.prefix}{self.key}"


def parse(text: str) -> Override:
    mounted = _MOUNTED.fullmatch(text)
    if mounted is not None:
        return Override(text, mounted.group(1), _value(mounted.group(2)), "")
    found = _LINE.fullmatch(text)
    if found is not None:
        prefix, key, raw = found.groups()
    elif (deleted := _DELETE.fullmatch(text)) is not None:
        prefix, key, raw = "~", deleted.group(1), None
    else:
        raise Unsupported(f"an override the direct composition does not read: {text}")
    if key.split(".")[0].startswith(_HYDRA_KEYS) and (prefix == "~" or not key.startswith(SWEEPER_SETTINGS)):
        raise Unsupported(f"{key}: Hydra's own settings")
    return Override(text, key, None if raw is None else _value(raw), prefix)


def sets_hydras_node(override: Override) -> bool:
    """Whether the override sets a setting of Hydra's own node, not of the config."""
    return override.key.startswith(SWEEPER_SETTINGS)


def reads_directly(overrides: Sequence[str]) -> bool:
    """Whether the direct composition reads every override of this command line (its config files may
    still leave the line to Hydra)."""
    try:
        # A sweeper's setting is composed directly only after Hydra accepted it (one composition with
        # Hydra first, which a child composing ahead speeds up).
        return not any(sets_hydras_node(parse(optional_group_choice(text))) for text in overrides)
    except Unsupported:
        return False


def _value(raw: str) -> Any:
    if raw.startswith("{"):
        mapping, end = _mapping(raw, 0)
        if end != len(raw):
            raise Unsupported(f"a value the direct composition does not read: {raw}")
        return mapping
    if raw.startswith("[") and raw.endswith("]"):
        return _items(raw[1:-1])
    if _INT.fullmatch(raw):
        return int(raw)
    if _FLOAT.fullmatch(raw) or _FLOAT_WORD.fullmatch(raw):
        return float(raw)
    word = raw.lower()
    if word in _KEYWORDS:
        return _KEYWORDS[word]
    if _WORD.fullmatch(raw) or _DASHED_WORD.fullmatch(raw) or _SEVERAL_TOKENS.fullmatch(raw):
        return raw
    quoted = _QUOTED.fullmatch(raw)
    if quoted is not None:
        text = quoted.group(1) if quoted.group(1) is not None else quoted.group(2)
        if text != _MISSING:
            return text
    raise Unsupported(f"a value the direct composition does not read: {raw}")


def _items(inner: str) -> list[Any]:
    if not inner.strip():
        return []
    items, at = [], 0
    while at < len(inner):
        found = _ITEM.match(inner, at)
        if found is None or (found.group(2) == "," and found.end() == len(inner)):  # `[a,]`: Hydra refuses
            raise Unsupported(f"a list the direct composition does not read: [{inner}]")
        items.append(_value(found.group(1)))  # never a list: an item holds no bracket (`_ITEM`)
        at = found.end()
    return items


def _mapping(text: str, at: int) -> tuple[dict[str, Any], int]:
    """The mapping opening at `text[at]` (a `{`) and the index after its `}`."""
    empty = _MAPPING_EMPTY.match(text, at)
    if empty is not None:
        return {}, empty.end()
    mapping: dict[str, Any] = {}
    at += 1
    while True:
        key = _MAPPING_KEY.match(text, at)
        if key is None or key.group(1).lower() in _NOT_NAMES or key.group(1) in mapping:
            raise Unsupported(f"a mapping the direct composition does not read: {text}")
        mapping[key.group(1)], at = _element(text, key.end())
        end = _PAIR_END.match(text, at)
        if end is None:
            raise Unsupported(f"a mapping the direct composition does not read: {text}")
        at = end.end()
        if end.group(1) == "}":
            return mapping, at


def _element(text: str, at: int) -> tuple[Any, int]:
    """A mapping's value starting at `text[at]`, and the index after it."""
    at = _SPACES.match(text, at).end()  # type: ignore[union-attr]  # matches every text
    if text.startswith("{", at):
        return _mapping(text, at)
    if text.startswith("[", at):
        end = text.find("]", at)  # a list here holds no bracket, quoted or not (`_items` declines one)
        if end < 0:
            raise Unsupported(f"a mapping the direct composition does not read: {text}")
        return _items(text[at + 1 : end]), end + 1
    scalar = _MAPPING_SCALAR.match(text, at)
    if scalar is None:
        raise Unsupported(f"a mapping the direct composition does not read: {text}")
    return _value(scalar.group(1)), scalar.end()


class Refused(Unsupported):
    """An override Hydra refuses for its key alone, before changing the config: a key the config lacks
    (at any level, without '+'; `~` of one), or `+` of a key holding a value it reads as is. Hydra's
    words for it are `launch.config.key_refusals`' (`launch.config.direct.refusals`)."""


def apply(config: dict[str, Any], override: Override) -> None:
    """Set the override's value in the (boxed) composed config, or raise Unsupported where Hydra would
    refuse it (Refused: see there) or do something else (a mapping or list replaced, an interpolated
    parent)."""
    *parents, last = override.key.split(".")
    node = config
    for part in parents:
        child = node.get(part)
        if part not in node and override.prefix not in ("+", "++"):
            raise Refused(f"{override.text}: no key {part}")
        if child is None and override.prefix in ("+", "++"):
            node[part] = child = {}
        if not isinstance(child, dict):
            raise Unsupported(f"{override.text}: {part} is not a mapping of the config")
        node = child
    current = node.get(last)
    if last not in node and override.prefix in ("", "~"):
        raise Refused(f"{override.text}: no key {last}")
    if override.delete:
        _delete(node, last, current, override)
        return
    if isinstance(override.value, dict):
        _apply_mapping(node, last, current, override)
        return
    if isinstance(override.value, list):
        _apply_list(node, last, current, override)
        return
    if override.add:
        if isinstance(current, dict | list) or (isinstance(current, Box) and _read_as_is(current.value)):
            raise Refused(f"{override.text}: the key exists")
        if current is not None and not (isinstance(current, Box) and current.value is None):
            raise Unsupported(f"{override.text}: the key exists")
    elif isinstance(current, dict | list) and override.value is None:
        pass  # a mapping or a list set to null: OmegaConf sets its node null where it stands
    elif override.prefix == "++":
        if last in node and not isinstance(current, Box):
            raise Unsupported(f"{override.text}: not a scalar of the config")
    elif not isinstance(current, Box):
        raise Unsupported(f"{override.text}: not a scalar of the config")
    if isinstance(current, Box):
        current.value = override.value
    else:
        node[last] = Box(override.value)


def _read_as_is(value: Any) -> bool:
    """A value OmegaConf selects as it stands: not null, not an interpolation, not left unset."""
    return value is not None and not is_interpolation(value) and value != _MISSING


def _delete(node: dict[str, Any], last: str, current: Any, override: Override) -> None:
    """`~key`: Hydra deletes a key whose value (interpolations resolved) is not null, and refuses the
    rest as missing; an interpolation is left to it."""
    value = current.value if isinstance(current, Box) else current
    if value is None or (isinstance(value, str) and "${" in value):
        raise Unsupported(f"{override.text}: a key missing, null or interpolated")
    del node[last]


def _apply_list(node: dict[str, Any], last: str, current: Any, override: Override) -> None:
    """A list set: over a list its items are replaced in place (OmegaConf merges a list into a list
    node, with `+` too: Hydra adds a list by merging it), a key the config lacks takes it with `+`, and
    over a scalar or a null (not an interpolation) OmegaConf sets a new node where the scalar's stood
    (`categories=[a]` where a file has `null`); `+` over one, and a list over a mapping, are left to
    Hydra."""
    if isinstance(current, list):
        current[:] = override.value
    elif _takes_new_list(node, last, current, override):
        node[last] = list(override.value)
    else:
        raise Unsupported(f"{override.text}: a list over a {type(current).__name__}")


def _takes_new_list(node: dict[str, Any], last: str, current: Any, override: Override) -> bool:
    if isinstance(current, Box):
        return not is_interpolation(current.value) and not override.add
    return current is None and last not in node and override.prefix in ("+", "++")


def _apply_mapping(node: dict[str, Any], last: str, current: Any, override: Override) -> None:
    """A mapping set as Hydra sets it (`OmegaConf.update(merge=True)`, `+`/`++` lifting the struct flag):
    merged into a mapping as a later file merges (a key the mapping lacks, at any depth, only with
    `+`/`++`: Hydra refuses it otherwise), in place of a scalar (null too), or at a key the config lacks
    with `+`/`++`. Over a list or an interpolation it is left to Hydra."""
    if isinstance(current, dict):
        if not override.prefix and _adds_keys(current, override.value):
            raise Unsupported(f"{override.text}: a key the mapping lacks")
        merge(current, boxed(override.value))
    elif _replaceable(node, last, current, override.prefix):
        node[last] = boxed(override.value)
    else:
        raise Unsupported(f"{override.text}: a mapping over a {type(current).__name__}")


def _replaceable(node: dict[str, Any], last: str, current: Any, prefix: str) -> bool:
    """A scalar (not an interpolation), or a key the config lacks with `+`/`++`."""
    if isinstance(current, Box):
        return not is_interpolation(current.value)
    return current is None and last not in node and prefix in ("+", "++")


def _adds_keys(current: dict[str, Any], value: dict[str, Any]) -> bool:
    return any(
        key not in current
        or (isinstance(current[key], dict) and isinstance(item, dict) and _adds_keys(current[key], item))
        for key, item in value.items()
    )
