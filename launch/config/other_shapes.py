"""A value merged over one of the other container shape: a mapping where a list is, a list where a
mapping is.

OmegaConf merges neither into the other. A config file that gave one (`categories: {a: 1}` over the
base's list) crashed the pre-flight with "Cannot merge DictConfig with ListConfig", and an override got
Hydra's "Error merging override" with no fix. Everywhere else a later value replaces the earlier one (a
number over a mapping, a mapping over a number) and the schema judges what is left, naming the key, its
source and a fix. These merges are made the same: the earlier node is taken out first, so the later
value replaces it and the schema is the one judge of a value's shape.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict


def cleared_other_shapes(node: DictConfig, value: Any, *, lists: bool = True) -> bool:
    """Take out of `node` each node that `value` (a mapping merged into it) gives a container of the other
    shape, at any depth; True when one was taken out. `lists=False`: only lists given a mapping (a list
    typed for a section on the command line has its own refusal, `compose._override_problem`)."""
    if isinstance(value, DictConfig):
        value = OmegaConf.to_container(value, resolve=False)
    if not isinstance(value, dict):
        return False
    cleared = False
    for key, new in value.items():
        old = node._get_node(key, validate_access=False) if isinstance(key, str | int) else None
        if (isinstance(old, ListConfig) and isinstance(new, dict)) or (
            lists and isinstance(old, DictConfig) and isinstance(new, list)
        ):
            with open_dict(node):
                del node[key]
            cleared = True
        elif isinstance(old, DictConfig) and not old._is_none() and isinstance(new, dict):
            # (a section a schema leaves None, `params: null` of Hydra's basic sweeper, holds no node)
            cleared = cleared_other_shapes(old, new, lists=lists) or cleared
    return cleared
