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
import tempfile
from collections.abc import MutableMapping
from pathlib import Path
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


# The per-user directories libraries t3rl loads write into (matplotlib's config and font cache, the
# Hugging Face hub cache, wandb's settings), by the variable that moves them, and their default.
USER_DIRS = (("XDG_CACHE_HOME", ".cache"), ("XDG_CONFIG_HOME", ".config"))


def usable_dir(path: Path) -> bool:
    """`path` is a directory this process can write, or can be made (its nearest existing ancestor is a
    writable directory). os.access also says no on a read-only file system, root or not."""
    for folder in (path, *path.parents):
        if folder.exists():
            return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)
    return False


def writable_user_dirs(environ: MutableMapping[str, str] = os.environ) -> list[str]:
    """Where HOME's cache or config dir cannot be written (a read-only home, a HOME that is no dir, a
    home of another user): XDG_CACHE_HOME / XDG_CONFIG_HOME not set by the user are pointed at a
    private dir under the temp dir, so the libraries fall back quietly instead of each printing its
    warning (matplotlib: "mkdir -p failed … it is highly recommended to set MPLCONFIGDIR") in every
    stage. The names set; inherited by every process t3rl starts."""
    home = Path(os.path.expanduser("~"))
    changed = []
    for name, default in USER_DIRS:
        if environ.get(name) or usable_dir(home / default):
            continue
        private = Path(tempfile.gettempdir()) / f"t3rl-{os.getuid()}" / default.lstrip(".")
        try:
            private.mkdir(parents=True, exist_ok=True, mode=0o700)
            if private.parent.stat().st_uid != os.getuid():  # another user's: not ours to write into
                continue
        except OSError:
            continue
        environ[name] = str(private)
        changed.append(name)
    return changed
