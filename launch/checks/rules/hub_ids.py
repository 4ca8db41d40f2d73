"""What the model's hub ids say, read against the `model/` options that declare them
(`launch/checks/model_options.py`), without downloading anything:

- a tokenizer given as a hub id is of the model's chat family (another family's tokenizer splits the
  control tokens into plain text, as a local one is checked in `sglang.tokenizer_has_family_tokens`);
- `model.hf_id` (what the download hint fetches) is a model of this family and architecture;
- `model.context_length` is not more than the option of this hub id declares (SGLang refuses a request
  past the model's own context). A local checkpoint's config.json is the truth where there is one
  (`lengths.context_matches_checkpoint`);
- the published result an eval is to reproduce (`eval.published.target`) is of a model trained from this
  hub id (`PublishedResult.trained_from`): a model swapped in leaves the recipe's target stale.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from launch.checks.context import Context
from launch.checks.eval_configs import eval_configs, eval_key
from launch.checks.hf_config import SECTIONS, as_hf_config, compare, override_value, read_hf_config
from launch.checks.model_options import ModelOption, family_of, model_option, model_options, options_of
from launch.config.errors import Problem
from launch.config.schema import MegatronArch, ModelConfig
from t3rl_core.chat.families import FAMILIES
from t3rl_core.counts import counted
from t3rl_core.fields import HfHubId
from t3rl_core.home_paths import expand_home

TOKENIZER = "model.chat.tokenizer"
HF_ID = "model.hf_id"
CONTEXT = "model.context_length"
# Architecture fields that tell two models of one family apart (those a config.json also holds).
_SHAPE = ("num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads", "vocab_size", "rotary_base")


def _compatible(ours: str, theirs: str) -> bool:
    """Two chat families share a control token (Qwen2.5 and Qwen3 do): a tokenizer of one serves both."""
    a, b = FAMILIES.get(ours), FAMILIES.get(theirs)
    if a is None or b is None:
        return ours == theirs
    return bool(set(a.special_tokens) & set(b.special_tokens))


@cache
def _hub_id() -> TypeAdapter[str]:
    # Built when a rule runs (inside launch.config.pydantic_plugins.without_plugins), not at import:
    # a validator built at import scans every installed distribution for pydantic plugins.
    return TypeAdapter(HfHubId)


def _is_hub_id(value: str) -> bool:
    if Path(expand_home(value)).exists():
        return False
    try:
        _hub_id().validate_python(value)
    except ValidationError:
        return False
    return True


def tokenizer_hub_id_of_the_family(ctx: Context) -> Iterator[Problem]:
    """A hub-id tokenizer names a model of the model's chat family."""
    model = ctx.run.model
    tokenizer = model.chat.tokenizer
    if model.chat.family is not None or tokenizer in (model.hf_checkpoint, model.hf_id):
        return  # a family described by hand, or the model's own tokenizer
    if not _is_hub_id(tokenizer):
        return
    theirs = family_of(tokenizer, model_options(ctx.config_dirs))
    if theirs is None:
        return
    missing = _tokens_missing(model.family, theirs)
    if _compatible(model.family, theirs) and not missing:
        return
    key = ctx.latest(TOKENIZER, "model.family")
    why = (
        f"it lacks the {model.family} format's tokens {', '.join(missing)}, which it would split into plain "
        "text (the model was trained on them as one token each)"
        if _compatible(model.family, theirs)
        else "it would split the chat format's control tokens into plain text"
    )
    yield Problem(
        key,
        f"tokenizer {tokenizer} is a {theirs} model's (by its hub id), but model.family is {model.family}: "
        + why,
        fix=f"set {TOKENIZER}={model.hf_checkpoint} (the model's own tokenizer)",
    )


def _tokens_missing(ours: str, theirs: str) -> list[str]:
    """The tokens of family `ours` (control and format tags, each one token of its tokenizer) that a
    tokenizer of family `theirs` does not declare: a Qwen2.5 tokenizer has no <think> for Qwen3."""
    a, b = FAMILIES.get(ours), FAMILIES.get(theirs)
    if a is None or b is None:
        return []
    have = {*b.special_tokens, *b.tag_tokens}
    return [t for t in (*a.special_tokens, *a.tag_tokens) if t not in have]


def hf_id_of_the_model(ctx: Context) -> Iterator[Problem]:
    """`model.hf_id` names a model of this chat family and architecture (the download hint fetches it)."""
    model = ctx.run.model
    if not _downloaded(model):
        return
    own = model_option(model.name, ctx.config_dirs)
    if own is not None and own.hf_id == model.hf_id:
        return  # the option's own hub id (the other options are not read)
    options = model_options(ctx.config_dirs)
    declared = options_of(model.hf_id, options)
    if not declared:
        return
    exact = [o for o in declared if o.hf_id == model.hf_id]
    theirs = family_of(model.hf_id, options)
    wrong_family = theirs is not None and not _compatible(model.family, theirs)
    ours = model.architecture.model_dump()
    other = [o for o in exact if not _same_shape(o, ours)]
    if not wrong_family and (not exact or len(other) < len(exact)):
        return
    what = f"a {theirs} model" if wrong_family else f"the model of option {other[0].name}"
    yield Problem(
        HF_ID,
        f"{HF_ID} {model.hf_id} is {what}, not {model.name} (model.family {model.family}, "
        f"{counted(model.architecture.num_layers, 'layer')}): the checkpoint it downloads would not load",
        fix=_hf_id_fix(model.name, own, exact),
    )


def _same_shape(option: ModelOption, ours: dict[str, object]) -> bool:
    return all(option.architecture.get(f, ours[f]) == ours[f] for f in _SHAPE)


def _hf_id_fix(name: str, own: ModelOption | None, exact: list[ModelOption]) -> str:
    if exact:
        return f"set model={exact[0].name} (the option of this hub id)"
    if own is not None and own.hf_id is not None:
        return f"set {HF_ID}={own.hf_id} (the hub id option {name} declares)"
    return f"set {HF_ID} to the hub id of {name}'s checkpoint"


def context_within_the_declared(ctx: Context) -> Iterator[Problem]:
    """`model.context_length` is at most what the model option of this hub id declares."""
    model = ctx.run.model
    if model.context_length is None or not _hub_checkpoint(ctx):
        return
    own = model_option(model.name, ctx.config_dirs)
    ours = model.architecture.model_dump()
    # The option of this hub id and architecture; another one is hf_id_of_the_model's to report.
    if own is not None and own.hf_id == model.hf_id:
        candidates = [own]
    else:
        candidates = options_of(model.hf_id, model_options(ctx.config_dirs))
    declared = [
        o.context_length
        for o in candidates
        if o.hf_id == model.hf_id and o.context_length and _same_shape(o, ours)
    ]
    if not declared or model.context_length <= max(declared):
        return
    limit = max(declared)
    yield Problem(
        CONTEXT,
        f"{CONTEXT} {model.context_length} is more than the {limit} tokens {model.hf_id} attends over "
        "(its max_position_embeddings, as its model option declares): SGLang refuses longer requests",
        fix=f"set {CONTEXT}={limit}",
    )


def _downloaded(model: ModelConfig) -> bool:
    """The checkpoint is to come from the hub: not built offline, and no config.json of it here yet."""
    return not model.synthetic and read_hf_config(model.hf_checkpoint) is None


def _hub_checkpoint(ctx: Context) -> bool:
    """The checkpoint is the hub id's download: not here to read, and at the path the model option
    gives it (a path the user set elsewhere may hold a model of their own)."""
    model, provenance = ctx.run.model, ctx.provenance
    if not _downloaded(model):
        return False  # a local config.json is the truth (model.hf_checkpoint_matches_architecture)
    chosen, path = provenance.origin("model.name"), provenance.origin("model.hf_checkpoint")
    return chosen is not None and path is not None and path.source == chosen.source


def synthetic_only_where_nothing_is_released(ctx: Context) -> Iterator[Problem]:
    """`model.synthetic` builds random weights of the model's architecture offline: meant for the
    synthetic options (tiny_qwen3), not for a released model whose option declares a real hub id, where
    it would train a full-size model from noise, written beside the path the download fills."""
    model = ctx.run.model
    if not model.synthetic:
        return
    released = [o for o in options_of(model.hf_id, model_options(ctx.config_dirs)) if not o.synthetic]
    exact = [o for o in released if o.hf_id == model.hf_id]
    if not exact:
        return
    synthetic = sorted(n for n, o in model_options(ctx.config_dirs).items() if o.synthetic)
    yield Problem(
        ctx.latest("model.synthetic", "model.hf_id", "model.name"),
        f"model.synthetic builds random weights of {model.hf_id}'s architecture ({exact[0].name}): a train "
        f"stage would start from noise, at {model.hf_checkpoint}, where its download belongs",
        fix="set model.synthetic=false (and download it)"
        + (f", or model={synthetic[0]} for a model built offline" if synthetic else ""),
    )


def architecture_of_the_hub_checkpoint(ctx: Context) -> Iterator[Problem]:
    """With no local checkpoint to compare with yet, the architecture is the one the model option of
    this hub id declares: a field changed away from it describes another checkpoint than the one the
    download fetches, which slime's check of config.json refuses when the train job starts."""
    model = ctx.run.model
    if not _hub_checkpoint(ctx):
        return
    own = model_option(model.name, ctx.config_dirs)
    if own is None or own.hf_id != model.hf_id:
        return  # another hub id: hf_id_of_the_model's to judge
    try:
        declared = MegatronArch.model_validate(own.architecture)
    except ValidationError:
        return
    mismatches = compare(model.architecture, as_hf_config(declared))
    # A section (experts, multi-latent attention) one side lacks is one problem, fixed to the option's
    # whole section (with what config.json does not state, its layer pattern) or to none.
    sections = {m.field for m in mismatches if m.field in SECTIONS}
    for field in _NO_HF_KEY:
        if field.split(".")[0] in sections:
            continue
        ours, theirs = _field(model.architecture, field), _field(declared, field)
        if ours != theirs:
            key = f"model.architecture.{field}"
            yield Problem(
                key,
                f"{key} is {_shown(ours)}, but {model.hf_id} is built with {_shown(theirs)} (as model option "
                f"{own.name} declares; config.json does not say): its weights would not load into that "
                "model (norms, biases and MLP shapes are weights)",
                fix=f"set {key}={_shown(theirs)}",
            )
    for m in mismatches:
        key = f"model.architecture.{m.field}"
        need = "at least " if m.relation == ">=" else ""
        if m.field in sections:
            section = getattr(declared, m.field)
            value = override_value(section.model_dump(exclude_none=True) if section is not None else None)
        else:
            value = m.value
        yield Problem(
            key,
            f"{key} is {override_value(m.ours)}, but {model.hf_id}'s checkpoint has {m.hf_key} "
            f"{override_value(m.theirs)} (as model option {own.name} declares; needs {need}{value}): "
            f"{m.refused_by}, after the data is prepared",
            fix=f"set {key}={value}",
        )


# What decides the weights' names and shapes that a config.json does not state: compared with the
# architecture the option of the hub id declares.
_NO_HF_KEY = (
    "normalization",
    "swiglu",
    "disable_bias_linear",
    "add_qkv_bias",
    "qk_layernorm",
    "moe.moe_layer_freq",
)


def _field(arch: MegatronArch, dotted: str) -> Any:
    node: Any = arch
    for part in dotted.split("."):
        node = getattr(node, part, None)
    return node


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ",".join(map(str, value)) + "]"
    return str(value)


def published_target_of_this_model(ctx: Context) -> Iterator[Problem]:
    """The result an eval's verdict is on was trained from the run's model: with another model swapped in
    (`model=qwen3_8b` under stage1_bfcl's T3RL target, a Qwen3-4B result) the eval reports
    "not reproduced" about a number nobody claimed for this model. A warning: the run is a valid one,
    and the scripted reference engine evaluates no model at all."""
    model, seen = ctx.run.model, set()
    for stage, config, overrides in eval_configs(ctx.run):
        published = config.published
        if published is None or published.target is None or config.engine.name == "reference":
            continue
        key = eval_key(stage, overrides, "published.target")
        result = next((r for r in published.results if r.label == published.target), None)
        base = result.trained_from if result is not None else None
        if key in seen or base is None or base.lower() == model.hf_id.lower():
            continue
        seen.add(key)
        # the model alternative only when one option declares that hub id (two may parse it otherwise)
        options = [o.name for o in options_of(base, model_options(ctx.config_dirs)) if o.hf_id == base]
        yield Problem(
            ctx.latest(HF_ID, key),
            f"{key} is '{published.target}', a result of a model trained from {base}, but this run's model "
            f"is {model.hf_id}: the eval's verdict would hold {model.hf_id} to a number published for "
            "another model",
            fix=f"set {key}=null (the published results stay, for reference)"
            + (
                f"; or model={options[0]} (the model the result was trained from)"
                if len(options) == 1
                else ""
            ),
            severity="warning",
        )


RULES = (
    published_target_of_this_model,
    tokenizer_hub_id_of_the_family,
    hf_id_of_the_model,
    context_within_the_declared,
    synthetic_only_where_nothing_is_released,
    architecture_of_the_hub_checkpoint,
)
