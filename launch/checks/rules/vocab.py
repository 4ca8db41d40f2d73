"""A token id indexes the model's embedding: every id the tokenizer can produce is below the vocabulary
the model is built with.

A local tokenizer's tokenizer_config.json lists the tokens added to its base vocabulary with their ids
(`added_tokens_decoder`). A tokenizer that added tokens past the model's rows (`<tool_call>` added to
Llama 3.1's tokenizer without resizing the model, a fine-tune's tokenizer on its base model) encodes
them as ids the embedding does not have: SGLang's and Megatron's lookups fail on the first sample that
holds one (a CUDA index assertion, far from the config). The model's rows are Megatron's
`model.architecture.vocab_size` and SGLang's `vocab_size`: a local config.json's, or the download's as
the hub id's model option declares it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from launch.checks.context import Context
from launch.checks.hf_config import json_object, read_hf_config
from launch.checks.model_options import model_option

# hub_ids' one definition of "the checkpoint is the hub id's download" (as rules/model_flags.py reads it)
from launch.checks.rules.hub_ids import _hub_checkpoint
from launch.config.errors import Problem
from t3rl_core.home_paths import expand_home

TOKENIZER = "model.chat.tokenizer"
VOCAB = "model.architecture.vocab_size"


def _added_ids(path: Path) -> dict[int, str]:
    """Added token id -> its text, as tokenizer_config.json lists them ({} when it lists none)."""
    config, _ = json_object(path / "tokenizer_config.json")  # unreadable: probes.tokenizer_readable says
    added = None if config is None else config.get("added_tokens_decoder")
    if not isinstance(added, dict):
        return {}
    ids = {}
    for key, entry in added.items():
        if isinstance(key, str) and key.isdigit():
            ids[int(key)] = str(entry.get("content", "?")) if isinstance(entry, dict) else "?"
    return ids


def tokenizer_ids_within_the_vocabulary(ctx: Context) -> Iterator[Problem]:
    """The largest id a local tokenizer adds is below the model's vocabulary (Megatron's and SGLang's)."""
    model = ctx.run.model
    if model.synthetic:
        return  # the tiny model is built from its own tokenizer (prepare_model)
    ids = _added_ids(Path(expand_home(model.chat.tokenizer)))
    if not ids:
        return  # a hub id, a tokenizer not here yet, or one that lists no added tokens
    rows = {VOCAB: model.architecture.vocab_size}
    hf = read_hf_config(model.hf_checkpoint)
    if hf is not None and isinstance(hf.get("vocab_size"), int):
        rows[f"{model.hf_checkpoint}/config.json vocab_size"] = hf["vocab_size"]
    own = model_option(model.name, ctx.config_dirs) if _hub_checkpoint(ctx) else None
    declared = own.architecture.get("vocab_size") if own is not None and own.hf_id == model.hf_id else None
    if isinstance(declared, int):  # the download's config.json, which SGLang builds its embedding from
        rows[f"{model.hf_id}'s vocab_size, as model option {own.name} declares"] = declared
    where, size = min(rows.items(), key=lambda item: item[1])
    past = sorted(i for i in ids if i >= size)
    if not past:
        return
    shown = ", ".join(f"{ids[i]} ({i})" for i in past[:3]) + (" …" if len(past) > 3 else "")
    key = ctx.latest(TOKENIZER, VOCAB, "model.hf_checkpoint")
    fix = (
        f"set {TOKENIZER}={model.hf_checkpoint} (the model's own tokenizer)"
        if key == TOKENIZER and model.chat.tokenizer != model.hf_checkpoint
        else f"resize the model's embedding to at least {past[-1] + 1} rows (and set {VOCAB} to it), or set "
        f"{TOKENIZER} to a tokenizer of this model"
    )
    yield Problem(
        key,
        f"tokenizer {model.chat.tokenizer} adds {len(past)} token(s) past the model's {size} embedding rows "
        f"({where}): {shown}; the first sample holding one fails the embedding lookup (SGLang's and "
        "Megatron's), mid-run",
        fix=fix,
    )


RULES = (tokenizer_ids_within_the_vocabulary,)
