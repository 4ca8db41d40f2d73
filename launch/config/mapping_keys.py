"""A mapping typed for a section with a key the section has no field for: `env.data={a: 1}`.

Hydra merges a mapping into a section key by key and refuses a key the section lacks ("Could not
override 'env.data'. To append to your config use +env.data={a: 1}"). Its advice was the fix t3rl printed,
and the schema refused that again: `a` is no field of the section. The keys of the mapping are judged as
the same keys typed one by one would be (`env.data.a=1`): a misspelt one is renamed in the mapping typed,
one nothing resembles is dropped with the override. A key that is a field this config leaves at its default
needs Hydra's '+', which the caller proposes, as does a key under a free-form mapping
(`model.chat.chat_template_kwargs={enable_thinking: false}`: any key is one there).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from omegaconf import DictConfig, OmegaConf

from launch.config.errors import Problem, did_you_mean
from launch.config.schema_walk import field_names, takes_any_key


def unknown_mapping_key(key: str, text: str, value: Any, cfg: DictConfig) -> Problem | None:
    """The refusal of the first key of `value` (typed by override `text` for the section at `key`) that is
    neither in the composed config nor a schema field where it would go; None when every key is one."""
    composed = OmegaConf.to_container(cfg, resolve=False)
    for path in _paths(value):
        full = f"{key}.{path}"
        parent, _, leaf = full.rpartition(".")
        node = OmegaConf.select(cfg, parent, throw_on_missing=False)
        if not isinstance(node, DictConfig):
            return None  # a level the config lacks: judged at that level's own key
        if takes_any_key(parent, composed):  # type: ignore[arg-type]
            continue  # a free-form mapping's key (chat_template_kwargs): no name is unknown, '+' adds it
        known = {str(k) for k in node} | set(field_names(parent, composed))  # type: ignore[arg-type]
        if leaf in known:
            continue
        guess = did_you_mean(leaf, known)
        source = f"override `{text}`"
        message = f"unknown key '{leaf}' under '{parent}' (in the mapping typed for {key})"
        if guess:
            renamed = _renamed(text, leaf, guess)
            if renamed is not None:
                return Problem(
                    key=key, message=message, source=source, fix=f"set {renamed} instead of `{text}`"
                )
        listed = ", ".join(sorted(known)) or "none"
        return Problem(
            key=key,
            message=message,
            source=source,
            fix=f"drop `{text}` (known keys under '{parent}': {listed})",
        )
    return None


def _paths(value: Any, prefix: str = "") -> Iterator[str]:
    """Every key path of a mapping, a parent before its keys (`a`, `a.b`)."""
    if isinstance(value, dict):
        for k, v in value.items():
            path = f"{prefix}.{k}" if prefix else str(k)
            yield path
            yield from _paths(v, path)


def _renamed(text: str, leaf: str, guess: str) -> str | None:
    """The override `text` with the mapping's key `leaf` spelt `guess`; None when it is not found once."""
    pattern = rf"([{{,]\s*){re.escape(leaf)}(\s*:)"
    if len(re.findall(pattern, text)) != 1:
        return None
    return re.sub(pattern, rf"\g<1>{guess}\g<2>", text)
