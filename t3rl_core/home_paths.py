"""`~` in config values: the user's home directory, expanded once where a config is read.

A path in a config (`paths.cache_dir: ~/.cache/t3rl`, an override `model.hf_checkpoint=~/models/x`)
reaches many readers after interpolation copies it into other keys (`model.chat.tokenizer:
${paths.cache_dir}/models/tiny_qwen3`): a tokenizer loader, the eval engine, a stage's command. None of
them expands `~`, and they should not each have to. So a resolved config has every string that starts
with `~/` (or is `~`) expanded, as a shell expands a word, before any model sees it: `resolve` does it
for a run config (after the composition cache: the expansion reads $HOME each time), and
`RuntimeConfig` files read by `t3rl eval --runtime-config` get the same. `~user/…` is left as written.
"""

from __future__ import annotations

import os
from typing import Any


def expand_home(node: Any) -> Any:
    """`node` (plain data) with every string starting with `~/`, or equal to `~`, expanded."""
    if isinstance(node, str):
        return os.path.expanduser(node) if node == "~" or node.startswith("~/") else node
    if isinstance(node, dict):
        return {key: expand_home(value) for key, value in node.items()}
    if isinstance(node, list):
        return [expand_home(value) for value in node]
    return node
