"""`${oc.select:KEY}` is a reference too: it must name a key of the config.

OmegaConf's `oc.select` answers a key that is not there with its default, and with null when none is given,
without a word: `eval.top_p=${oc.select:eval.topp}` set the sampling's top-p to null (the field's "unset")
and validated, and `tracking.group=${oc.select:trackin.project}` named no group. Every other reference of a
config resolves or is refused (a plain `${eval.topp}` says "Interpolation key not found"); a selection of a
key no file or override sets is the same mistake. Refused when it gives no default; with a default given on
purpose it is a warning only when a key spelt alike exists (the default may be meant for a key some configs
lack). A key only the schema's default holds is no key to an interpolation: OmegaConf reads the files and
overrides, not t3rl's defaults, so it selects nothing there either.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from launch.checks.context import Context
from launch.config.errors import Problem, did_you_mean
from launch.config.fixes import present, value_at

# `${oc.select:KEY}` or `${oc.select:KEY,DEFAULT}` with no interpolation nested inside.
_SELECT = r"(?<!\\)\$\{oc\.select:\s*([^,{}\s]+)\s*(,[^{}]*)?\}"


def _dotted(data: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    for name, value in data.items():
        key = f"{prefix}{name}"
        yield key
        if isinstance(value, Mapping):
            yield from _dotted(value, f"{key}.")


def _absolute(selected: str, key: str) -> str:
    """The key `selected` names from `key`: OmegaConf's relative form counts its leading dots upward from
    the node holding `key` (`.x` a sibling, `..x` one level up)."""
    dots = len(selected) - len(selected.lstrip("."))
    if not dots:
        return selected
    parts = key.split(".")[: -dots or None]
    return ".".join([*parts, selected[dots:]]) if parts else selected[dots:]


def _guess(target: str, key: str, keys: list[str], data: Mapping[str, Any]) -> str | None:
    """The key meant by `target`: its section (or the section spelt nearest), then the leaf of it spelt
    nearest whose value the field at `key` takes (a guess is a fix when it validates: `eval.topp` is
    nearest `eval.top_k`, whose -1 no top-p takes), never `key` itself (it would read its own value)."""
    from launch.config.guess_values import takes  # lazy: only for a selection that names nothing

    parent, _, leaf = target.rpartition(".")
    sections = [k for k in keys if isinstance(value_at(data, k), Mapping)]
    if parent and parent not in sections:
        parent = did_you_mean(parent, sections) or ""
        if not parent:
            return None
    leaves = [
        k.rpartition(".")[2]
        for k in keys
        if k.rpartition(".")[0] == parent and k != key and not isinstance(value_at(data, k), Mapping)
    ]
    while (near := did_you_mean(leaf, leaves)) is not None:
        guess = f"{parent}.{near}" if parent else near
        if takes(key, value_at(data, guess), data):
            return guess
        leaves.remove(near)
    return None


def selections_name_keys(ctx: Context) -> Iterator[Problem]:
    keys: list[str] | None = None
    for key, origin in ctx.provenance.items():
        if not isinstance(origin.raw, str) or "oc.select" not in origin.raw:
            continue
        for match in re.finditer(_SELECT, origin.raw):
            selected, default = match[1], match[2]
            target = _absolute(selected, key)
            if present(ctx.data, target):
                continue
            keys = list(_dotted(ctx.data)) if keys is None else keys
            near = _guess(target, key, keys, ctx.data)
            if default is not None and near is None:
                continue  # a default meant for configs without the key
            gives = f"its default {default[1:].strip()}" if default is not None else "null"
            corrected = origin.raw.replace(match[0], match[0].replace(selected, near)) if near else None
            typed = origin.source.removeprefix("override ") if origin.source.startswith("override `") else ""
            if corrected is not None:
                fix = f"set {key}={corrected} (did you mean '{near}'?)"
            elif typed:
                fix = f"drop {typed} (it names no key, nor one like it)"
            else:
                fix = f"in {origin.source}, name a key the config sets at {key}, or give the value itself"
            yield Problem(
                key,
                f"{key} selects {target} (${{oc.select:{selected}}}), which no config file or override "
                f"sets: OmegaConf gives {gives} there without a word, not the value meant",
                origin.describe(),
                fix,
                severity="warning" if default is not None else "error",
            )


RULES = (selections_name_keys,)
