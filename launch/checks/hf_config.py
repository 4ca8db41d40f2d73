"""Compare a local HF checkpoint's config.json with the Megatron architecture, before any GPU is used.

slime runs the same comparison at argument-parsing time (`_hf_validate_args` in
slime/backends/megatron_utils/arguments.py) — on the cluster, after the job started. These are its
rules (a field is compared only when both sides have it; MoE configs skip the dense FFN size unless
some layers are dense), plus query groups and the vocabulary, which may only be larger than the HF one
(Megatron pads it; a smaller one cannot hold the checkpoint's embeddings), and the fields slime does not
compare that the weights fix all the same: the head size (`kv_channels`, Megatron's default
hidden_size / heads when unset), the experts and how many a token is routed to, and multi-latent
attention's ranks and head sizes. A Megatron model built with another shape than the checkpoint's
fails to load it in the conversion; one routed to another number of experts runs a model it was not
trained as. Reads the JSON directly: no transformers import.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from launch.config.schema import MegatronArch, MLAArch, MoEArch
from t3rl_core import outside_json
from t3rl_core.records import Record

_MOE_MARKERS = ("moe_intermediate_size", "num_experts", "n_routed_experts", "num_local_experts")
# The expert count's key in config.json, by model line (DeepSeek, Qwen-MoE, Mixtral): read as the first.
_EXPERT_KEYS = ("n_routed_experts", "num_experts", "num_local_experts")


class Mismatch(Record):
    """One architecture field that disagrees with config.json."""

    # MegatronArch field, dotted below model.architecture ("num_layers", "moe.moe_ffn_hidden_size").
    field: str
    ours: Any
    # The HF key and its value.
    hf_key: str
    theirs: Any
    # The value our field should take to agree.
    expected: Any
    # "==": must be equal; ">=": ours must be at least `expected` (Megatron pads the vocabulary up).
    relation: str = "=="

    @property
    def value(self) -> str:
        """`expected` as an override's value (a section as Hydra's dict, None as null)."""
        return override_value(self.expected)

    @property
    def refused_by(self) -> str:
        """What refuses the disagreement, and when."""
        compared = "the conversion and slime's check of config.json refuse it"
        return _NOT_COMPARED_BY_SLIME.get(self.field, compared)


def read_hf_config(checkpoint: str | Path) -> dict[str, Any] | None:
    """The text-model part of `<checkpoint>/config.json`, or None when there is no such local file or it
    is not a config every key of `_KINDS` reads from (`hf_config_problem` says why;
    `probes.model_dirs_usable` reports it): no rule sees a size that is no number."""
    return _text_config(Path(checkpoint).expanduser() / "config.json")[0]


def hf_config_problem(checkpoint: str | Path) -> str | None:
    """Why `<checkpoint>/config.json`, which is there, cannot be read as a checkpoint's config; None
    when it reads or is not there at all."""
    return _text_config(Path(checkpoint).expanduser() / "config.json")[1]


def _text_config(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    config, problem = json_object(path)
    if config is None:
        return None, problem
    text = config.get("text_config", None)
    if text is not None and not isinstance(text, dict):
        return None, f"{path} has text_config {_json(text)}, not an object"
    text = text or config
    for key, value in (*text.items(), ("rope_parameters.rope_theta", _rope_theta(text))):
        kind = _KINDS.get(key)
        if kind is not None and value is not None and not kind[0](value):
            return None, f"{path} has {key} {_json(value)}, not {kind[1]}"
    return text, None


def _json(value: Any) -> str:
    """`value` as config.json writes it (null, true, a list), cut short."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


# What each config.json key the rules read must hold (null is unset): a size that is a string, a
# flag that is a number, or an infinite epsilon was compared as if it were the model's (true equalled
# any non-zero size, infinity any size, and a dict crashed the vocabulary's comparison).
_WHOLE = (lambda v: type(v) is int and v >= 0, "a whole number >= 0")
_POSITIVE = (lambda v: type(v) in (int, float) and math.isfinite(v) and v > 0, "a finite number > 0")
_FLAG = (lambda v: type(v) is bool, "true or false")


def json_object(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """A model's JSON file (config.json, tokenizer_config.json) as an object: (it, None), or (None, why
    it is no such object), or (None, None) when there is no such file."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None, None
    except OSError as error:
        return None, f"{path} cannot be read ({error.strerror})"
    return _parsed(path, stat.st_mtime_ns, stat.st_size, stat.st_ino)


@functools.lru_cache(maxsize=16)
def _parsed(path: Path, *version: int) -> tuple[dict[str, Any] | None, str | None]:
    """`json_object` of the file as it is (`version`: its mtime, size and inode): read once per pre-flight
    by every rule that asks, again once it is rewritten."""
    try:
        config = outside_json.loads(path.read_bytes(), str(path))
    except OSError as error:
        return None, f"{path} cannot be read ({error.strerror})"
    except outside_json.OutsideJsonError as error:
        return None, str(error)
    except json.JSONDecodeError as error:
        return None, f"{path} is not JSON (line {error.lineno}: {error.msg})"
    except UnicodeDecodeError:
        return None, f"{path} is not JSON (its bytes are no UTF-8 text)"
    if not isinstance(config, dict):
        return None, f"{path} holds {_json(config)}, not a JSON object"
    return config, None


def compare(arch: MegatronArch, hf: dict[str, Any]) -> list[Mismatch]:
    """Every field of `arch` that disagrees with the HF config."""
    mismatches = []
    for field, ours, hf_key, theirs in _pairs(arch, hf):
        if theirs is None or ours is None:
            continue
        # HF ties embeddings where Megatron unties them: the two flags must be opposite.
        expected = not theirs if field == "untie_embeddings_and_output_weights" else theirs
        if field == "vocab_size":
            if ours < expected:
                mismatches.append(Mismatch(field, ours, hf_key, theirs, expected, ">="))
        elif not _equal(ours, expected):
            mismatches.append(Mismatch(field, ours, hf_key, theirs, expected))
    return [*_sections_differ(arch, hf), *mismatches]


# A section of the architecture and the config.json key whose value says the checkpoint has one: routed
# experts (any of the expert keys, a count above 0) and multi-latent attention (a key-value LoRA rank).
# `compare` reads a field only when both sides have it, so a dense model file on an MoE checkpoint (or
# MLA's on one of plain attention) compared nothing of the section and passed; the conversion then cannot
# load the experts' weights, or builds ones the checkpoint lacks.
_SECTION_KEYS = {"moe": _EXPERT_KEYS, "mla": ("kv_lora_rank",)}
SECTIONS = tuple(_SECTION_KEYS)


def _sections_differ(arch: MegatronArch, hf: dict[str, Any]) -> list[Mismatch]:
    """A section one side has and the other lacks: its fix drops ours or writes the checkpoint's."""
    found = []
    for section, keys in _SECTION_KEYS.items():
        hf_key = next((k for k in keys if hf.get(k) is not None), keys[0])
        theirs = hf.get(hf_key)
        ours = getattr(arch, section)
        if (ours is not None) == bool(theirs):
            continue
        fields = {
            field.split(".", 1)[1]: hf.get(key)
            for field, key in _FIELDS
            if field.startswith(f"{section}.") and key not in _EXPERT_KEYS
        }
        if section == "moe":
            fields["num_experts"] = theirs
        expected = {k: v for k, v in fields.items() if v is not None} if theirs else None
        shown = ours.model_dump(exclude_none=True) if ours is not None else None
        found.append(Mismatch(section, shown, hf_key, theirs, expected))
    return found


def override_value(value: Any) -> str:
    """`value` as Hydra's override grammar reads it back: null, a dict {k:v,...}, a list [a,b], else repr."""
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{override_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(override_value(v) for v in value) + "]"
    return repr(value)


# Our field, the HF key (rope_theta also appears as rope_parameters.rope_theta).
_FIELDS = (
    ("hidden_size", "hidden_size"),
    ("num_attention_heads", "num_attention_heads"),
    ("num_layers", "num_hidden_layers"),
    ("vocab_size", "vocab_size"),
    ("norm_epsilon", "rms_norm_eps"),
    ("num_query_groups", "num_key_value_heads"),
    ("untie_embeddings_and_output_weights", "tie_word_embeddings"),
    ("rotary_base", "rope_theta"),
    ("ffn_hidden_size", "intermediate_size"),
    ("moe.moe_ffn_hidden_size", "moe_intermediate_size"),
    ("moe.moe_shared_expert_intermediate_size", "shared_expert_intermediate_size"),
    ("kv_channels", "head_dim"),
    ("moe.num_experts", _EXPERT_KEYS[0]),
    ("moe.moe_router_topk", "num_experts_per_tok"),
    ("mla.q_lora_rank", "q_lora_rank"),
    ("mla.kv_lora_rank", "kv_lora_rank"),
    ("mla.qk_head_dim", "qk_nope_head_dim"),
    ("mla.qk_pos_emb_head_dim", "qk_rope_head_dim"),
    ("mla.v_head_dim", "v_head_dim"),
)


_KINDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    **{hf_key: _WHOLE for _, hf_key in _FIELDS},
    **{key: _WHOLE for key in (*_EXPERT_KEYS, "max_position_embeddings")},
    "tie_word_embeddings": _FLAG,
    "rms_norm_eps": _POSITIVE,
    "rope_theta": _POSITIVE,
    "rope_parameters.rope_theta": _POSITIVE,
}


# The fields slime's check does not compare, and what goes wrong instead.
_SHAPE = "the conversion cannot load the checkpoint's weights into a model of that shape"
_NOT_COMPARED_BY_SLIME = {
    "kv_channels": _SHAPE,
    "moe.num_experts": _SHAPE,
    "moe.moe_router_topk": "slime does not compare it: the model would route each token to another "
    "number of experts than it was trained with",
    **{f"mla.{name}": _SHAPE for name in MLAArch.model_fields},
    "moe": "slime compares no expert field one side lacks, and " + _SHAPE + " (with experts, or without)",
    "mla": "slime compares no multi-latent attention field one side lacks, and " + _SHAPE,
}


def as_hf_config(arch: MegatronArch) -> dict[str, Any]:
    """The config.json keys `compare` reads, as a checkpoint of this architecture has them."""
    ours = _ours(arch)
    hf = {hf_key: ours[field] for field, hf_key in _FIELDS if ours[field] is not None}
    hf["tie_word_embeddings"] = not arch.untie_embeddings_and_output_weights
    return hf


def _ours(arch: MegatronArch) -> dict[str, Any]:
    moe = arch.moe.model_dump() if arch.moe else {}
    mla = arch.mla.model_dump() if arch.mla else {}
    return {
        **arch.model_dump(),
        "num_query_groups": arch.num_query_groups or arch.num_attention_heads,
        # Megatron's head size when --kv-channels is not given; multi-latent attention has its own sizes
        "kv_channels": None if arch.mla else arch.kv_channels or arch.hidden_size // arch.num_attention_heads,
        **{f"moe.{name}": moe.get(name) for name in MoEArch.model_fields},
        **{f"mla.{name}": mla.get(name) for name in MLAArch.model_fields},
    }


def _pairs(arch: MegatronArch, hf: dict[str, Any]) -> list[tuple[str, Any, str, Any]]:
    """(our field, our value, HF key, HF value) for each field both sides have."""
    ours = _ours(arch)
    experts = next((hf[k] for k in _EXPERT_KEYS if hf.get(k) is not None), None)
    theirs = {
        **hf,
        "rope_theta": _rope_theta(hf),
        _EXPERT_KEYS[0]: experts,
        "head_dim": _head_dim(hf),
        "tie_word_embeddings": _tied(hf),
    }
    skip_dense = _is_moe(hf) and not _has_dense_layers(arch)
    return [
        (
            field,
            ours[field],
            _UNWRITTEN.get(hf_key, hf_key).format(hf.get("model_type")) if hf.get(hf_key) is None else hf_key,
            theirs[hf_key],
        )
        for field, hf_key in _FIELDS
        if hf_key in theirs and not (skip_dense and field == "ffn_hidden_size")
    ]


# A config.json without head_dim (Llama 3.1's, Qwen2.5's) has HF's default head size, hidden_size /
# num_attention_heads (LlamaConfig and Qwen2's attention take it so); compared only where it was
# written, a kv_channels of another size passed, and the conversion could not load the weights.
_DEFAULTED = "head_dim (not written: hidden_size / num_attention_heads)"


# A config.json without tie_word_embeddings has its model class's default, which each class of these
# model_types declares False (Qwen2Config, Qwen3Config, LlamaConfig, Glm4Config; PretrainedConfig's own
# default, True, is not theirs): compared only where written, a tied model file passed on an untied
# checkpoint, and the conversion could not load its separate output layer.
_TIED_BY_DEFAULT = {"qwen2": False, "qwen3": False, "llama": False, "glm4": False}
# The HF key named in a message when config.json leaves it to a default ({} is the model_type).
_UNWRITTEN = {
    "head_dim": _DEFAULTED,
    "tie_word_embeddings": "tie_word_embeddings (not written: the {} model class's default)",
}


def _tied(hf: dict[str, Any]) -> Any:
    written = hf.get("tie_word_embeddings")
    return written if written is not None else _TIED_BY_DEFAULT.get(str(hf.get("model_type")))


def _head_dim(hf: dict[str, Any]) -> Any:
    if hf.get("head_dim") is not None or hf.get("kv_lora_rank") is not None:
        return hf.get("head_dim")  # multi-latent attention has its own head sizes
    hidden, heads = hf.get("hidden_size"), hf.get("num_attention_heads")
    return hidden // heads if isinstance(hidden, int) and isinstance(heads, int) and heads else None


def _rope_theta(hf: dict[str, Any]) -> Any:
    if "rope_theta" in hf:
        return hf["rope_theta"]
    parameters = hf.get("rope_parameters")
    return parameters.get("rope_theta") if isinstance(parameters, dict) else None


def _is_moe(hf: dict[str, Any]) -> bool:
    return any(marker in hf for marker in _MOE_MARKERS)


def _has_dense_layers(arch: MegatronArch) -> bool:
    # slime compares the dense FFN size of an MoE config only when --moe-layer-freq is unset, lists a 0,
    # or is the int 0 (t3rl always passes it).
    if arch.moe is None:
        return True
    freq = arch.moe.moe_layer_freq
    return 0 in freq if isinstance(freq, list) else freq == 0


def _equal(ours: Any, expected: Any) -> bool:
    if isinstance(ours, bool) or isinstance(expected, bool):
        return bool(ours) == bool(expected)
    if isinstance(ours, int | float) and isinstance(expected, int | float):
        return abs(float(ours) - float(expected)) <= 1e-12 * max(1.0, abs(float(expected)))
    return ours == expected
