"""Fix text as an override the user can paste: `key=value`, or `+key=value` when the key is valid but
absent from the composed config (Hydra refuses to set a key that is not there without '+'); a value
Hydra's grammar would type (a number, a bool, null) or split (a comma, a bracket) is quoted, so an
applied fix reads back as what it says."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any


def value_at(data: Mapping[str, Any], key: str, missing: Any = None) -> Any:
    """The value at the dotted key of a nested mapping; `missing` when a part of it is not there."""
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return missing
        node = node[part]
    return node


_ABSENT = object()


def present(data: Mapping[str, Any], key: str) -> bool:
    """True when the dotted key exists in the composed config."""
    return value_at(data, key, _ABSENT) is not _ABSENT


def assign(data: Mapping[str, Any], key: str, value: object) -> str:
    """`key=value`, with '+' when the key is not in the composed config, or when a mapping's keys are
    added to a mapping a config file sets (Hydra refuses `key={a: 1}` on a file's `key: {}`)."""
    merged = isinstance(value_at(data, key), Mapping) and str(value).startswith("{")
    return f"{'' if present(data, key) and not merged else '+'}{key}={value}"


# _PLAIN and _TYPED are strings, compiled by `re` (and cached) when first used, not on import: a cold `t3rl
# validate +experiment=stage2_bfcl` never uses them.
# What Hydra reads as a plain string: no quoting needed ("~" is its delete prefix: a value with one is
# refused unquoted).
_PLAIN = r"^[A-Za-z_/.+-][\w/.:+-]*$"
_TYPED = r"(?i)^(true|false|null|none|nan|inf|[-+]?inf|[-+]?(\d[\d_]*)?\.?\d*([eE][-+]?\d+)?)$"


def quoted(token: str) -> str:
    """`token` as an element of an override, quoted when Hydra would not keep it a string."""
    if re.match(_PLAIN, token) and not re.match(_TYPED, token):
        return token
    # Inside quotes Hydra reads a backslash literally unless a quote follows it (the closing one too):
    # only the backslashes before a quote are doubled, and the quote escaped.
    escaped = re.sub(r"(\\*)'", lambda m: m.group(1) * 2 + "\\'", token)
    return "'" + re.sub(r"(\\+)$", lambda m: m.group(1) * 2, escaped) + "'"


def list_override(key: str, tokens: Sequence[str]) -> str:
    """`key=[a,b,…]` with every element a string when read back."""
    return f"{key}=[{','.join(quoted(t) for t in tokens)}]"


def typed_text(value: Any) -> str:
    """A value as a message shows it and a user types it: YAML's null and booleans, lists in brackets."""
    if isinstance(value, list):
        return "[" + ",".join(typed_text(v) for v in value) + "]"
    if value is None:
        return "null"
    return str(value).lower() if isinstance(value, bool) else str(value)
