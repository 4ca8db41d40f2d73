"""The token ids a model can emit: below the rows of its embedding.

A model's embedding may be padded past its tokenizer (Qwen3: 151,936 rows for 151,669 tokens), and
SGLang may sample a padding id, so the tokenizer's size is no bound. The model's `config.json`
(`vocab_size`, or its `text_config`'s) beside the tokenizer is: an id at or past it is no token the
model sampled, and in a slime sample it is an index past the trainer's embedding (a device-side
assert that stops the whole training step, not one episode). Without a config the bound is
`ID_CEILING`: no vocabulary reaches it, and the decoder cannot even read such an id (the Rust
tokenizer takes ids as 32-bit integers; 2**64 raised an OverflowError that ended the episode as
t3rl's own bug).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from t3rl_core import outside_json

ID_CEILING = 2**31


def token_id_limit(tokenizer: Any) -> int:
    """One past the largest id the tokenizer's model can emit (see the module docstring)."""
    directory = getattr(tokenizer, "name_or_path", None)
    config: Any = {}
    if isinstance(directory, str | os.PathLike) and str(directory):
        try:
            config = outside_json.loads(
                (Path(directory) / "config.json").read_text(encoding="utf-8"), "config.json"
            )
        except (OSError, ValueError):
            config = {}
    sizes = []
    for section in (config, config.get("text_config")) if isinstance(config, dict) else ():
        size = section.get("vocab_size") if isinstance(section, dict) else None
        if isinstance(size, int) and not isinstance(size, bool) and size > 0:
            sizes.append(size)
    if not sizes:
        return ID_CEILING
    return min(max(len(tokenizer), *sizes), ID_CEILING)
