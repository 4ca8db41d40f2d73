"""Fixes written as overrides that read back as what they say: a value Hydra's grammar would type
(a number, a bool, null) or split (a comma, a bracket) is quoted."""

from __future__ import annotations

import re
from collections.abc import Sequence

# What Hydra reads as a plain string: no quoting needed.
_PLAIN = re.compile(r"^[A-Za-z_/.~+-][\w/.:~+-]*$")
_TYPED = re.compile(r"^(true|false|null|none|nan|inf|[-+]?inf|[-+]?(\d[\d_]*)?\.?\d*([eE][-+]?\d+)?)$", re.I)


def quoted(token: str) -> str:
    """`token` as an element of an override, quoted when Hydra would not keep it a string."""
    if _PLAIN.match(token) and not _TYPED.match(token):
        return token
    return "'" + token.replace("\\", "\\\\").replace("'", "\\'") + "'"


def list_override(key: str, tokens: Sequence[str]) -> str:
    """`key=[a,b,…]` with every element a string when read back."""
    return f"{key}=[{','.join(quoted(t) for t in tokens)}]"
