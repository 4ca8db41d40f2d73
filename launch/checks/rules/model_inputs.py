"""What the model, its tokenizer and its engines are given, against what they are built from.

The Megatron flags of `model.architecture.extra_args` that build the model, against the checkpoint.

`MegatronArch` models the sizes and switches a config.json states; the rest of how Megatron builds a
family's model rides in `extra_args` (GLM's layer spec and its extra norms, GLM's half-rotated heads,
Llama 3.1's rope scaling, DeepSeek-V3's YaRN and router). A checkpoint is built with exactly its model
option's set of them. A list override replaces the whole list (`extra_args=[--no-rope-fusion]` to add one
flag drops GLM's spec), and a flag copied from another family's script adds scaling the checkpoint never
had: Megatron then builds another model than the one SGLang serves from the same weights (a layer's
weights not loading, or every position's rotation, hence every log-prob, differing between trainer and
rollout engine), with nothing refusing it before the train job runs.

The truth is, in this order: the model option of the hub id when the checkpoint is that id's download
(the same condition as `hub_ids.architecture_of_the_hub_checkpoint`), and a local config.json's
`rope_scaling` and `partial_rotary_factor` where it states them.

The flags the architecture's fields write (`--untie-embeddings-and-output-weights`, `--num-experts`, …,
each field's name as a Megatron flag) are the fields' alone: passed through while the field is off or
unset, Megatron builds what the flag says while every check against the checkpoint reads the field.

A token id indexes the model's embedding: every id the tokenizer can produce is below the vocabulary
the model is built with.

A local tokenizer's tokenizer_config.json lists the tokens added to its base vocabulary with their ids
(`added_tokens_decoder`). A tokenizer that added tokens past the model's rows (`<tool_call>` added to
Llama 3.1's tokenizer without resizing the model, a fine-tune's tokenizer on its base model) encodes
them as ids the embedding does not have: SGLang's and Megatron's lookups fail on the first sample that
holds one (a CUDA index assertion, far from the config). The model's rows are Megatron's
`model.architecture.vocab_size` and SGLang's `vocab_size`: a local config.json's, or the download's as
the hub id's model option declares it.

Where the run's base model comes from, before the stages that load it; and which model option a fix
may swap in.

A synthetic model (`model.synthetic`: tiny_qwen3 and options built on it) is no download: a prepare_model
stage builds it at `model.hf_checkpoint`. A run whose stages load the base model (a conversion, a train
stage, an eval of the base checkpoint) with no prepare_model stage before them (`model=tiny_qwen3` under a
GPU experiment, or the stage added after them) has nothing that makes it; `t3rl run` refuses it before any
stage starts, and the download hint of a released model does not apply (its hub id names nothing). The
probe of model directories (`probes.model_dirs_required`) leaves the synthetic model to its builder; this
rule says when there is none. A directory built by an earlier run is used as it is.

A fix that swaps the model (`model=<option>`) validates only if the run's layout takes that model's
architecture (layers over the pipeline, heads and query groups over TP): `fitting_model` tries each
candidate against every scope's per-scope rules, as a fix proposing a layout value is tried.

What an SGLang engine's own flags do to the calls t3rl sends it, and to the trainer it serves.

- The KV pool (`--max-total-tokens`) bounds a request as the context does: SGLang's scheduler takes
  min(context, pool) - 1 as the longest request, refuses a longer prompt and cuts each request's
  max_new_tokens to the room left. A pool no larger than one call's budget (an RL stage's
  rollout_max_response_len, an eval's max_new_tokens) cuts every long call short of the length the config
  says, silently (`sglang.server_context_holds_a_call` reads the context the same way).
- The rollout engines compute in one number format with the trainer: slime trains in bf16 (fp16 with
  Megatron's --fp16) and copies its weights into engines that compute in `--sglang-dtype` (auto: the
  checkpoint's torch_dtype, bf16 for every shipped model). Another format on either side makes every
  rollout log-prob differ from the trainer's by rounding alone (the train/inference mismatch the
  `mismatch_metrics` log measures), and bf16-trained activations may overflow fp16's range.
- The rollout engines build the model Megatron trains: `--sglang-json-model-override-args` changing a
  config.json key the architecture is compared by (a shape: the trainer's weights would not fit) is
  refused, one deciding how it computes (rope, norm epsilon) warned about. An eval server's override is
  the eval's own choice (YaRN for long contexts).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from launch.checks.context import Context, Scope, per_scope
from launch.checks.hf_config import as_hf_config, json_object, read_hf_config
from launch.checks.model_options import model_option, model_options

# hub_ids' one definition of "the checkpoint is the hub id's download", and sglang's reading of the servers
# t3rl starts with the call budgets each serves: private helpers shared rather than restated, so that the
# rules here agree with those on when the option is the truth and which servers a request meets.
from launch.checks.rules.hub_ids import _hub_checkpoint
from launch.checks.rules.layouts import scope_valid
from launch.checks.rules.sglang import _eval_calls, _server_argvs
from launch.config.argv_tokens import argv_flags, flags_on, without_flag
from launch.config.errors import Problem
from launch.config.fixes import list_override
from launch.config.model_size import GIB, engine_gib
from launch.config.schema import (
    ConvertHfToTorchDistStage,
    MegatronArch,
    MLAArch,
    MoEArch,
    PrepareDataStage,
    PrepareModelStage,
    TrainStage,
)
from launch.config.server_options import human_int, resolve
from t3rl_core import outside_json
from t3rl_core.home_paths import expand_home

EXTRA = "model.architecture.extra_args"

# Megatron flags that decide which weights a layer has or how positions enter attention: a checkpoint
# needs exactly its own. (Kernel and training choices such as --no-rope-fusion or the aux-loss settings
# are the user's to change, and are not listed.)
BUILDS = (
    "--spec",
    "--post-self-attn-layernorm",
    "--post-mlp-layernorm",
    "--apply-layernorm-1p",
    "--squared-relu",
    "--no-position-embedding",
    "--rotary-percent",
    "--rotary-interleaved",
    "--use-rope-scaling",
    "--rope-scaling-factor",
    "--rope-type",
    "--rotary-scaling-factor",
    "--mscale",
    "--mscale-all-dim",
    "--moe-router-score-function",
    "--moe-router-pre-softmax",
    "--moe-router-enable-expert-bias",
    "--moe-router-topk-scaling-factor",
    "--moe-router-num-groups",
    "--moe-router-group-topk",
)
# Megatron's value of a builder flag not given, where it has one that a checkpoint may state.
_DEFAULTS = {"--rotary-percent": ("1.0",), "--rotary-scaling-factor": ("1.0",)}


def _same(a: Sequence[str], b: Sequence[str]) -> bool:
    """Two flag values alike as Megatron parses them (8 and 8.0 are one float)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        try:
            if float(x) != float(y):
                return False
        except ValueError:
            if x != y:
                return False
    return True


def builder_flags(argv: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Builder flag → its values, the last given of each (argparse keeps the last)."""
    return {name: tuple(values) for _, name, values in argv_flags(argv) if name in BUILDS}


def _shown(flags: dict[str, tuple[str, ...]]) -> str:
    return ", ".join(" ".join((name, *values)) for name, values in flags.items())


def _with(extra: Sequence[str], flags: dict[str, tuple[str, ...]]) -> list[str]:
    """`extra` with every builder flag replaced by `flags` (the user's other flags kept, in order)."""
    kept = list(extra)
    for name in BUILDS:
        kept = without_flag(kept, name)
    return [*kept, *(token for name, values in flags.items() for token in (name, *values))]


def _builds_megatron(ctx: Context) -> bool:
    """A stage builds a Megatron model of the architecture (a conversion or a train stage)."""
    return any(isinstance(s, TrainStage | ConvertHfToTorchDistStage) for s in ctx.run.stages.values())


def builder_flags_of_the_hub_checkpoint(ctx: Context) -> Iterator[Problem]:
    """The builder flags are the model option's when the checkpoint is its hub id's download."""
    model = ctx.run.model
    if not _builds_megatron(ctx) or not _hub_checkpoint(ctx):
        return
    own = model_option(model.name, ctx.config_dirs)
    if own is None or own.hf_id != model.hf_id:
        return  # another hub id: hub_ids.hf_id_of_the_model judges it
    declared_argv = own.architecture.get("extra_args") or []
    if not isinstance(declared_argv, list):
        return  # the option's own file is refused by its schema
    declared = builder_flags([str(token) for token in declared_argv])
    ours = builder_flags(model.architecture.extra_args)
    lost = {k: v for k, v in declared.items() if k not in ours or not _same(ours[k], v)}
    added = {k: v for k, v in ours.items() if k not in declared}
    if not lost and not added:
        return
    said = []
    if lost:
        said.append(f"lacks {_shown(lost)}")
    if added:
        said.append(f"adds {_shown(added)}")
    yield Problem(
        EXTRA,
        f"{EXTRA} {' and '.join(said)}: {model.hf_id} is built with {_shown(declared) or 'none of them'} "
        f"(as model option {own.name} declares), and Megatron would build another model than the one SGLang "
        "serves from the same weights (weights that do not load, or positions rotated otherwise, so every "
        "log-prob the trainer computes differs from the rollout's)",
        fix=f"set {list_override(EXTRA, _with(model.architecture.extra_args, declared))} "
        "(the option's model-building flags, your other flags kept)",
    )


def _config_json_needs(hf: dict[str, Any], mla: bool) -> dict[str, tuple[str, ...] | None]:
    """Builder flag -> the values config.json's rope settings need of it (None: not given), for what it
    states: Llama 3's scaling is Megatron's --use-rope-scaling, none rules it out; YaRN's factor is the
    MLA models' --rotary-scaling-factor; a share of each head rotated is --rotary-percent."""
    needs: dict[str, tuple[str, ...] | None] = {}
    # transformers 5 writes rope_parameters (its rope_type "default" is no scaling), earlier ones rope_scaling
    stated = (
        "rope_scaling" if "rope_scaling" in hf else "rope_parameters" if "rope_parameters" in hf else None
    )
    if stated is not None:
        scaling = hf[stated]
        kind = scaling.get("rope_type", scaling.get("type")) if isinstance(scaling, dict) else None
        if kind in (None, "default", "llama3"):
            needs["--use-rope-scaling"] = () if kind == "llama3" else None
        factor = scaling.get("factor") if isinstance(scaling, dict) else None
        if kind == "yarn" and mla and _number(factor):
            needs["--rotary-scaling-factor"] = (str(float(factor)),)
    parameters = hf.get("rope_parameters")
    share = hf.get(
        "partial_rotary_factor",
        parameters.get("partial_rotary_factor") if isinstance(parameters, dict) else None,
    )
    if _number(share):
        needs["--rotary-percent"] = (str(float(share)),)
    return needs


def _differs(ours: dict[str, tuple[str, ...]], name: str, need: tuple[str, ...] | None) -> bool:
    """The flag as given (or Megatron's default) is not what is needed (None: not given)."""
    if need is None:
        return name in ours
    given = ours.get(name, _DEFAULTS.get(name))
    return given is None or not _same(given, need)


def _wrong_shown(ours: dict[str, tuple[str, ...]], name: str, need: tuple[str, ...] | None) -> str:
    if need is None:
        return f"{name} is given"
    if not need:
        return f"{name} is not given"
    return f"{name} {' '.join(ours.get(name, _DEFAULTS.get(name, ())))}, not {' '.join(need)}"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def builder_flags_of_the_local_checkpoint(ctx: Context) -> Iterator[Problem]:
    """A local config.json's rope scaling and rotated share are the builder flags'."""
    model = ctx.run.model
    if not _builds_megatron(ctx):
        return
    hf = read_hf_config(model.hf_checkpoint)
    if hf is None:
        return  # not here yet: the hub option is the truth (above), or it is read where the stage runs
    extra = list(model.architecture.extra_args)
    ours = builder_flags(extra)
    wrong = {
        name: need
        for name, need in _config_json_needs(hf, model.architecture.mla is not None).items()
        if _differs(ours, name, need)
    }
    if not wrong:
        return
    said = "; ".join(_wrong_shown(ours, name, need) for name, need in wrong.items())
    fixed = {k: v for k, v in ours.items() if k not in wrong}
    fixed |= {k: v for k, v in wrong.items() if v is not None and v != _DEFAULTS.get(k)}
    stated = {k: hf[k] for k in ("rope_scaling", "rope_parameters", "partial_rotary_factor") if k in hf}
    yield Problem(
        EXTRA,
        f"{model.hf_checkpoint}/config.json states {stated}, but {EXTRA} builds Megatron's model otherwise "
        f"({said}): SGLang serves it as config.json says, so trainer and rollout engine rotate positions "
        "differently and every log-prob differs",
        fix=f"set {list_override(EXTRA, _with(extra, fixed))}",
    )


# What the HF model class of each model_type builds that config.json states as no size (read from the
# classes' modeling code): the switches hub_ids compares with a hub id's model option (`_NO_HF_KEY`), for
# a local checkpoint. A string is the config.json key holding the value, with HF's default beside it.
_BUILT_BY: dict[str, dict[str, Any]] = {
    "qwen2": {"normalization": "RMSNorm", "swiglu": True, "qk_layernorm": False, "add_qkv_bias": True},
    "qwen3": {
        "normalization": "RMSNorm",
        "swiglu": True,
        "qk_layernorm": True,
        "add_qkv_bias": ("attention_bias", False),
    },
    "llama": {
        "normalization": "RMSNorm",
        "swiglu": True,
        "qk_layernorm": False,
        "add_qkv_bias": ("attention_bias", False),
    },
    "glm4": {
        "normalization": "RMSNorm",
        "swiglu": True,
        "qk_layernorm": False,
        "add_qkv_bias": ("attention_bias", True),
    },
}


def switches_of_the_local_checkpoint(ctx: Context) -> Iterator[Problem]:
    """The architecture's switches are what a local checkpoint's model_type builds (its norms, its biases,
    its gated MLP are weights: another switch leaves some unloaded, or loads into none)."""
    model = ctx.run.model
    if not _builds_megatron(ctx):
        return
    hf = read_hf_config(model.hf_checkpoint)
    built = _BUILT_BY.get(str(hf.get("model_type"))) if hf is not None else None
    if hf is None or built is None:
        return  # not here, or a model_type whose class is not read here
    for field, value in built.items():
        if isinstance(value, tuple):
            stated, default = value
            value = hf.get(stated, default)
        ours = getattr(model.architecture, field)
        if ours == value:
            continue
        key = f"model.architecture.{field}"
        shown = _typed(value)
        yield Problem(
            ctx.latest(key, "model.hf_checkpoint"),
            f"{key} is {_typed(ours)}, but {model.hf_checkpoint} holds a {hf['model_type']} checkpoint "
            f"(config.json's model_type), which HF builds with {field} {shown}: its weights would not load "
            "into that model (norms, biases and MLP shapes are weights)",
            fix=f"set {key}={shown}",
        )


def _typed(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


# The architecture's fields are Megatron's flags of the same name (`MegatronArch`: "the model architecture
# as Megatron flags"), written by the plan only when the field is on or set; these markers are written for
# a section or an optional field as a whole.
_MARKERS = {"--group-query-attention": "num_query_groups", "--multi-latent-attention": "mla"}


def _owned(arch: MegatronArch) -> dict[str, tuple[str, Any]]:
    """Flag -> (the architecture field that writes it, the field's value), for every modelled flag."""
    owned: dict[str, tuple[str, Any]] = {}
    sections = {"moe": (MoEArch, arch.moe), "mla": (MLAArch, arch.mla)}
    for name in MegatronArch.model_fields:
        if name == "extra_args":
            continue
        if name in sections:
            model, section = sections[name]
            for field in model.model_fields:
                owned[_flag(field)] = (
                    f"{name}.{field}",
                    None if section is None else getattr(section, field),
                )
            continue
        owned[_flag(name)] = (name, getattr(arch, name))
    for flag, name in _MARKERS.items():
        owned[flag] = (name, getattr(arch, name))
    return owned


def _flag(field: str) -> str:
    return "--" + field.replace("_", "-")


def modelled_flags_not_passed_through(ctx: Context) -> Iterator[Problem]:
    """A flag an architecture field writes is not passed through while the field leaves it out (a switch
    off, a section or optional size unset): the plan would write both truths, the field's and the flag's
    (one the field writes too is refused as given twice where the argv is built)."""
    arch = ctx.run.model.architecture
    owned = _owned(arch)
    extra = list(arch.extra_args)
    passed: dict[str, list[tuple[str, list[str]]]] = {}  # the field's top key -> its flags passed
    for _, flag, values in argv_flags(extra):
        if flag in owned and owned[flag][1] in (None, False):
            passed.setdefault(owned[flag][0].split(".")[0], []).append((flag, values))
    for top, flags in passed.items():
        key = f"model.architecture.{top}"
        rest = extra
        for flag, _ in flags:
            rest = without_flag(rest, flag)
        value = getattr(arch, top)
        values = [v for _, vs in flags for v in vs]
        if value is False:
            also = f"; or set {key}=true if the checkpoint has it"
        elif top not in ("moe", "mla") and len(values) == 1:
            also = f"; or set {key}={values[0]} instead"
        else:
            also = f" ({key} declares it, checked against the checkpoint)"
        shown = ", ".join(" ".join((flag, *vs)) for flag, vs in flags)
        state = "false" if value is False else "null"
        yield Problem(
            EXTRA,
            f"{shown} in {EXTRA} is what {key} writes, and it is {state} here: "
            "Megatron would build the model the flag says, while every check of the architecture against "
            "the checkpoint reads the field",
            fix=f"set {list_override(EXTRA, rest)}{also}",
        )


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


def synthetic_model_is_built_first(ctx: Context) -> Iterator[Problem]:
    """A synthetic base model is built by a prepare_model stage before the first stage that loads it,
    unless it is built here already."""
    model = ctx.run.model
    if not model.synthetic or (Path(expand_home(model.hf_checkpoint)) / "config.json").is_file():
        return
    loading: list[str] = []
    for name, stage in ctx.run.stages.items():
        if isinstance(stage, PrepareModelStage):
            break
        if not isinstance(stage, PrepareDataStage):
            loading.append(name)
    if not loading:
        return
    released = sorted(
        name
        for name, option in model_options(ctx.config_dirs).items()
        if not option.synthetic and option.family == model.family
    )
    swap = fitting_model(ctx, released)
    instead = f"set model={swap} (a released {model.family} model); or " if swap else ""
    yield Problem(
        "model.name",
        f"{model.name} is built offline (model.synthetic) by a prepare_model stage, and this run has none "
        f"before stage(s) {', '.join(loading)}, which load it from {model.hf_checkpoint} (no config.json "
        "there yet): t3rl run refuses it before any stage starts, and it cannot be downloaded",
        fix=f"{instead}build it first with a run that has a prepare_model stage (t3rl run "
        "+experiment=quickstart builds it there)",
        severity="warning",
    )


def model_trials(ctx: Context, names: list[str]) -> Iterator[tuple[str, Context]]:
    """Each of the model options `names` (in order) whose architecture validates, with `ctx` as it would
    be with that model in place of the run's (name and architecture swapped, nothing else)."""
    options = model_options(ctx.config_dirs)
    for name in names:
        try:
            arch = MegatronArch.model_validate(options[name].architecture)
        except (KeyError, ValidationError):
            continue
        model = ctx.run.model.model_copy(update={"name": name, "architecture": arch})
        yield name, ctx._replace(run=ctx.run.model_copy(update={"model": model}))


def fitting_model(ctx: Context, names: list[str]) -> str | None:
    """Of the model options `names` (in order), the first whose architecture every scope's layout takes
    (the per-scope rules pass with it), so that a fix swapping the model in validates; None if none."""
    trials = model_trials(ctx, names)
    return next((name for name, trial in trials if all(scope_valid(s, trial) for s in ctx.scopes)), None)


POOL = "--max-total-tokens"


def kv_pool_holds_a_call(ctx: Context) -> Iterator[Problem]:
    """A server's KV pool is larger than the tokens one call may ask for."""
    calls = [
        (s.cur("rollout_max_response_len"), s.curriculum.rollout_max_response_len)
        for s in ctx.scopes
        if s.curriculum
    ]
    for key, argv, prefix, own_model in _server_argvs(ctx):
        if not own_model:
            continue  # a service of another model: its calls are not this config's
        for _, flag, values in argv_flags(argv):
            if not flag.startswith(prefix) or resolve("--" + flag.removeprefix(prefix)) != POOL:
                continue
            try:
                pool = human_int(values[0]) if len(values) == 1 else None
            except ValueError:
                continue  # refused by its type (server_options)
            own = calls if prefix == "--sglang-" else _eval_calls(ctx, key)
            cut = [(source, tokens) for source, tokens in own if pool is not None and tokens >= pool]
            if not cut:
                continue
            source, tokens = max(cut, key=lambda pair: pair[1])
            yield Problem(
                ctx.latest(key, source),
                f"{flag} {values[0]} makes the KV pool of each engine smaller than the {tokens} tokens "
                f"{source} lets one call write: SGLang cuts every request's max_new_tokens to the room "
                "the pool leaves (and refuses a prompt that fills it), so long calls end short of the "
                "length the config says",
                fix=f"set {list_override(key, without_flag(argv, flag))} (SGLang sizes the pool from its "
                f"memory fraction); or set {source}={pool // 2}",
            )


def kv_bytes_per_token(arch: MegatronArch, tp: int) -> int:
    """bf16 KV-cache bytes one token takes on each GPU of an engine of `tp` GPUs: keys and values of every
    layer's key-value heads on that GPU (replicated when TP exceeds them), or MLA's one latent a layer."""
    if arch.mla is not None:
        return arch.num_layers * (arch.mla.kv_lora_rank + arch.mla.qk_pos_emb_head_dim) * 2
    heads = arch.num_query_groups or arch.num_attention_heads
    head_dim = arch.kv_channels or arch.hidden_size // arch.num_attention_heads
    return 2 * arch.num_layers * max(1, heads // tp) * head_dim * 2


@per_scope
def kv_cache_left_holds_a_call(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """What sglang_mem_fraction leaves of each engine GPU after the weights holds the KV cache of one call:
    the pool is sized from that room (less SGLang's activations and graphs, so this estimate is its most),
    and a pool below one call cuts every long call short, as --max-total-tokens would."""
    hw, cur = scope.hardware, scope.curriculum
    if cur is None or hw.gpu_memory_gib is None:
        return
    extra = ctx.run.model.architecture.extra_args
    if any(
        f.startswith("--sglang-") and resolve("--" + f.removeprefix("--sglang-")) == POOL
        for _, f, _ in argv_flags(extra)
    ):
        return  # the pool is given: kv_pool_holds_a_call reads it
    arch = ctx.run.model.architecture
    room = hw.gpu_memory_gib * hw.sglang_mem_fraction - engine_gib(arch, hw.gpus_per_engine)
    if room <= 0:
        return  # the weights do not fit: resources.engine_weights_fit says so
    per_token = kv_bytes_per_token(arch, hw.gpus_per_engine)
    tokens = int(room * GIB // per_token)
    call = cur.rollout_max_response_len
    if tokens > call:
        return
    share = scope.hw("sglang_mem_fraction")
    needed = (engine_gib(arch, hw.gpus_per_engine) + 2 * call * per_token / GIB) / hw.gpu_memory_gib
    fix = f"set {share}={min(0.95, round(needed + 0.005, 2))}" if needed <= 0.95 else ""
    source = scope.cur("rollout_max_response_len")
    yield Problem(
        ctx.latest(share, scope.hw("gpus_per_engine"), source),
        f"sglang_mem_fraction {hw.sglang_mem_fraction} of {hw.gpu_memory_gib:g} GiB leaves at most "
        f"{room:.1f} GiB of each engine GPU for the KV cache after {ctx.run.model.name}'s weights, "
        f"{tokens} tokens, fewer than the {call} {source} lets one call write: SGLang cuts every request "
        "to the pool's room, so long calls end short of the length the config says",
        fix=(f"{fix}; or " if fix else "") + f"set {source}={max(16, tokens // 2)}",
        severity="warning",
    )


# SGLang's --dtype words (and config.json's torch_dtype) by the format they compute in, and back.
_DTYPES = {"half": "fp16", "float16": "fp16", "bfloat16": "bf16", "float": "fp32", "float32": "fp32"}
_WORD = {"fp16": "float16", "bf16": "bfloat16"}


def _engine_dtype(extra: list[str]) -> str | None:
    """The value of --sglang-dtype (or an abbreviation SGLang's argparse takes for it), the last given."""
    given = None
    for _, flag, values in argv_flags(extra):
        if flag.startswith("--sglang-") and resolve("--" + flag.removeprefix("--sglang-")) == "--dtype":
            given = values[0] if len(values) == 1 else None
    return given


def engines_compute_in_the_trainers_format(ctx: Context) -> Iterator[Problem]:
    """The rollout engines' --sglang-dtype is the number format Megatron trains in."""
    if not any(isinstance(s, TrainStage) for s in ctx.run.stages.values()):
        return  # no rollout engines: an eval's server has its own --dtype, for its own reasons
    extra = list(ctx.run.model.architecture.extra_args)
    trainer = "fp16" if "--fp16" in flags_on(extra) else "bf16"
    given = _engine_dtype(extra)
    hf = read_hf_config(ctx.run.model.hf_checkpoint)
    stated = hf.get("torch_dtype") if hf is not None else None
    # auto: the checkpoint's own format (bf16 for every shipped model and a download not made yet)
    engine = _DTYPES.get(given or "") or (_DTYPES.get(stated, "bf16") if given in (None, "auto") else None)
    if engine is None or engine == trainer:
        return
    flag = "--sglang-dtype"
    shown = (
        f"{flag} {given}" if given not in (None, "auto") else "the checkpoint's own, as --sglang-dtype auto"
    )
    fix = (
        f"set {list_override(EXTRA, without_flag(extra, flag))} (the checkpoint's bf16 on both sides)"
        if trainer == "bf16" and stated in (None, "bfloat16")
        else f"set {list_override(EXTRA, [*without_flag(extra, flag), flag, _WORD[trainer]])}"
    )
    overflow = " (and bf16-trained activations may overflow fp16's range)" if engine == "fp16" else ""
    yield Problem(
        EXTRA,
        f"the rollout engines compute in {engine} ({shown}) while Megatron trains in {trainer}: every "
        "rollout log-prob differs from the trainer's by rounding alone, which the importance ratios and the "
        f"KL read as a change of policy{overflow}",
        fix=fix,
        severity="warning",
    )


# config.json keys an engine's --json-model-override-args may change: those deciding how the model computes
# from its weights (positions, norms), and the other keys the architecture is compared by, which decide
# the weights' shapes (`hf_config.as_hf_config`).
_COMPUTES = ("rope_scaling", "rope_parameters", "rope_theta", "partial_rotary_factor", "rms_norm_eps")
OVERRIDE = "--json-model-override-args"


def engines_build_the_trainers_model(ctx: Context) -> Iterator[Problem]:
    """The rollout engines serve the model Megatron trains: --sglang-json-model-override-args does not
    change a key of config.json that decides the weights' shapes (the engines could not take the trainer's
    weights) or how positions rotate (every rollout log-prob would differ from the trainer's). An eval
    server's override is its own: scoring a checkpoint with YaRN for long contexts is a choice."""
    if not any(isinstance(s, TrainStage) for s in ctx.run.stages.values()):
        return
    extra = list(ctx.run.model.architecture.extra_args)
    shapes = set(as_hf_config(ctx.run.model.architecture)) - set(_COMPUTES)
    for _, flag, values in argv_flags(extra):
        if not flag.startswith("--sglang-") or resolve("--" + flag.removeprefix("--sglang-")) != OVERRIDE:
            continue
        try:
            changed = outside_json.loads(values[0], flag) if len(values) == 1 else None
        except json.JSONDecodeError as error:
            # SGLang's option is a string it reads with json.loads when each engine builds its model config
            yield Problem(
                EXTRA,
                f"{flag} {values[0]!r} is no JSON ({error.msg}): every rollout engine fails as it starts",
                fix=f"set {list_override(EXTRA, without_flag(extra, flag))}",
            )
            continue
        if not isinstance(changed, dict):
            continue
        shape = sorted(k for k in changed if k in shapes)
        computes = sorted(k for k in changed if k in _COMPUTES)
        if not shape and not computes:
            continue
        fix = f"set {list_override(EXTRA, without_flag(extra, flag))}"
        if shape:
            yield Problem(
                EXTRA,
                f"{flag} changes {', '.join(shape)} of the model the rollout engines build: the weights "
                "Megatron trains and sends them after every step have other shapes, and the first update "
                "fails (model.architecture is the one truth of the model's shape)",
                fix=fix,
            )
        if computes:
            yield Problem(
                EXTRA,
                f"{flag} changes {', '.join(computes)} for the rollout engines only: they compute otherwise "
                "than the model Megatron trains (its rotary_base, norm_epsilon and rope flags), so every "
                "rollout log-prob differs from the trainer's",
                fix=f"{fix}; or set the same on Megatron's side (model.architecture) and on a checkpoint "
                "whose config.json states it",
                severity="warning",
            )


RULES = (
    builder_flags_of_the_hub_checkpoint,
    builder_flags_of_the_local_checkpoint,
    switches_of_the_local_checkpoint,
    modelled_flags_not_passed_through,
    tokenizer_ids_within_the_vocabulary,
    synthetic_model_is_built_first,
    kv_pool_holds_a_call,
    kv_cache_left_holds_a_call,
    engines_compute_in_the_trainers_format,
    engines_build_the_trainers_model,
)
