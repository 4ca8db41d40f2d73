"""Interpolations resolved as OmegaConf resolves them, for the forms configs use every day.

A value `${a.b}` is the value at `a.b` (resolved in turn, a mapping or list copied); `${oc.env:NAME}`
and `${oc.env:NAME,DEFAULT}` read the environment (a default of `null`, a quoted string, or a word);
text around them makes a string of their values (strings and integers). A kept reference (`\\${oc.env:…}`
under a job's environment or a secret key: `launch.config.env_references`) stays the reference text.
Relative keys, other resolvers, nesting, escapes elsewhere, cycles and missing keys are Unsupported.
"""

from __future__ import annotations

import os
import re
from typing import Any

from launch.config.direct.unsupported import Unsupported

_KEY = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_DEFAULT = r"[Nn][Uu][Ll][Ll]|'[^'\"\\${}]*'|\"[^'\"\\${}]*\"|[A-Za-z_/][A-Za-z0-9_./-]*|\."
_PIECE = re.compile(rf"\$\{{(?:({_KEY})|oc\.env:([A-Za-z_][A-Za-z0-9_]*)(?:,({_DEFAULT}))?)\}}")
# _KEPT is a string, compiled by `re` (and cached) when first used, not on import: a cold `t3rl validate
# +experiment=stage2_bfcl` never uses it.
_KEPT = r"\\\$\{oc\.env:[A-Za-z_][A-Za-z0-9_]*(?:,[^\\${}]*)?\}"
_TEXT = re.compile(r"[^\\${}]*")
# Unquoted defaults OmegaConf's grammar reads as another type than a string.
_NOT_STRINGS = ("true", "false", "inf", "nan")


class Resolver:
    """Resolves the (plain) composed config `root`; `env` collects each variable read and its value."""

    def __init__(self, root: dict[str, Any], env: dict[str, str | None]) -> None:
        self._root = root
        self._env = env
        self._resolving: set[str] = set()

    def resolved(self, value: Any) -> Any:
        """A resolved copy of `value` (a node of the config)."""
        if isinstance(value, dict):
            return {k: self.resolved(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolved(v) for v in value]
        if isinstance(value, str) and "${" in value:
            return self._string(value)
        return value

    def _string(self, text: str) -> Any:
        if "\\" in text:
            return _kept(text)
        pieces = list(_PIECE.finditer(text))
        if len(pieces) == 1 and pieces[0].span() == (0, len(text)):
            return self._piece(pieces[0])
        parts, end = [], 0
        for piece in pieces:
            parts += [_literal(text[end : piece.start()]), _in_text(self._piece(piece))]
            end = piece.end()
        parts.append(_literal(text[end:]))
        return "".join(parts)

    def _piece(self, piece: re.Match[str]) -> Any:
        key, variable, default = piece.groups()
        if key is not None:
            return self._reference(key)
        value = os.environ.get(variable)
        self._env[variable] = value
        if value is not None:
            if "${" in value or "\\" in value:
                raise Unsupported(f"environment variable {variable} holds an interpolation or escape")
            return value
        if default is None:
            raise Unsupported(f"environment variable {variable} is not set")
        return _default(default)

    def _reference(self, key: str) -> Any:
        if key in self._resolving:
            raise Unsupported(f"an interpolation cycle through {key}")
        node: Any = self._root
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                raise Unsupported(f"an interpolation of a key the config lacks: {key}")
            node = node[part]
        self._resolving.add(key)
        try:
            return self.resolved(node)
        finally:
            self._resolving.discard(key)


def _kept(text: str) -> str:
    """A kept reference's text: `\\${oc.env:…}` reads as `${oc.env:…}`, with nothing else to resolve."""
    rest = re.sub(_KEPT, "", text)
    if "${" in rest or "\\" in rest or "{" in rest or "}" in rest:
        raise Unsupported("an escape or interpolation beside a kept reference")
    return text.replace("\\${", "${")


def _literal(text: str) -> str:
    if not _TEXT.fullmatch(text):
        raise Unsupported(f"text around an interpolation the direct composition does not read: {text}")
    return text


def _in_text(value: Any) -> str:
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return str(value)
    raise Unsupported(f"a {type(value).__name__} interpolated into text")


def _default(text: str) -> str | None:
    if text.lower() == "null":
        return None
    if text[0] in "'\"":
        return text[1:-1]
    if text.lower() in _NOT_STRINGS:
        raise Unsupported(f"an oc.env default OmegaConf reads as another type: {text}")
    return text
