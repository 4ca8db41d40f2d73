"""What SGLang would refuse later, read from what SGLang declares (its option table, its sampling
domains) instead of a list of mistakes:

- slime's `--sglang-*` flags in `model.architecture.extra_args` start every rollout engine: they are
  checked like an eval server's flags (`launch.config.server_options`), each engine `gpus_per_engine`
  GPUs of tensor parallelism;
- slime's sampling flags in the same argv reach SGLang with every request: a value outside SGLang's
  sampling domain (`sglang_names.SAMPLING_DOMAINS`) fails the first rollout;
- greedy rollouts (temperature 0, which SGLang accepts) make the samples of a prompt identical: with a
  group baseline every advantage is 0;
- an eval's top_p / top_k next to temperature 0: greedy decoding ignores them;
- SGLang's attention backends, named in `hardware.sglang_attention_backend` or a server's flags, are
  SGLang's choices and run on the GPU type (`launch.config.gpus.SGLANG_ATTENTION`), as do its
  quantization methods (`SGLANG_QUANTIZATION`); expert
  parallelism on a model without experts does nothing, and a chat template of a server t3rl sends token
  ids to renders nothing;
- `model.chat.chat_template_kwargs` (SGLang's and verl's `enable_thinking` and friends) names variables
  its template reads: a key no variable of the template has is silently ignored;
- a local tokenizer (`model.chat.tokenizer`) adds some control token of those the family declares
  (`t3rl_core.chat.families`): another family's tokenizer would split them into plain text;
- a server's `--context-length` leaves room for the tokens one call asks for.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from launch.checks.context import Context, Scope, per_scope
from launch.checks.eval_configs import eval_configs, eval_key
from launch.checks.hf_config import json_object
from launch.checks.sglang_names import GREEDY_BELOW, SAMPLING_DOMAINS, greedy
from launch.config.algorithms import ESTIMATORS, filter_declaration
from launch.config.argv_tokens import argv_flags
from launch.config.errors import Problem, did_you_mean
from launch.config.fixes import list_override
from launch.config.gpus import GPUS, SGLANG_ATTENTION, SGLANG_QUANTIZATION
from launch.config.server_options import SERVER_OPTIONS, human_int, resolve, server_argv_problems, without
from t3rl_core.chat.families import FAMILIES
from t3rl_core.chat.shipped import load_template
from t3rl_core.counts import counted
from t3rl_core.home_paths import expand_home

EXTRA = "model.architecture.extra_args"
# slime's sampling flags (slime/utils/arguments.py) → the SGLang sampling parameter each one sets.
SLIME_SAMPLING = {
    "--rollout-temperature": "temperature",
    "--rollout-top-p": "top_p",
    "--rollout-top-k": "top_k",
    "--eval-temperature": "temperature",
    "--eval-top-p": "top_p",
    "--eval-top-k": "top_k",
    "--eval-min-new-tokens": "min_new_tokens",
}


def slime_sglang_flags(ctx: Context) -> Iterator[Problem]:
    """slime's `--sglang-*` pass-through flags are what SGLang's server parses and accepts."""
    hw = ctx.run.hardware
    yield from server_argv_problems(
        ctx.run.model.architecture.extra_args,
        EXTRA,
        tp=hw.gpus_per_engine,
        gpus=hw.gpus_per_engine,
        context_length=ctx.run.model.context_length,
        prefix="--sglang-",
    )


def slime_sampling_flags(ctx: Context) -> Iterator[Problem]:
    """slime's sampling flags hold values SGLang's SamplingParams.verify accepts."""
    extra = ctx.run.model.architecture.extra_args
    for index, flag, values in argv_flags(extra):
        parameter = SLIME_SAMPLING.get(flag)
        if parameter is None or len(values) != 1:
            continue
        test, says = SAMPLING_DOMAINS[parameter]
        try:
            ok = test(float(values[0]))
        except ValueError:
            continue  # not a number: slime's option table refuses it (launch.plan.slime_options)
        if not ok:
            yield Problem(
                EXTRA,
                f"{flag} {values[0]}: SGLang's {parameter} must be {says}; every request would fail",
                fix=f"set {list_override(EXTRA, without(extra, index, 1))}",
            )


@per_scope
def greedy_rollouts(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Rollouts at temperature 0 repeat one answer per prompt: a group baseline then cancels every reward
    (a filter that sets the advantages itself, tau2's rejection sampling, has no baseline)."""
    cur = scope.curriculum
    if (
        cur is None
        or cur.mode != "rl"
        or not greedy(cur.rollout_temperature)
        or cur.n_samples_per_prompt == 1
    ):
        return  # a group of one is refused by values.algorithm_meaningful
    if ctx.run.env.varies_between_attempts() is not None:
        return  # the env's own sampling (an LLM customer) makes a greedy group differ
    estimator = cur.algorithm.advantage_estimator
    filtered = filter_declaration(cur.dynamic_sampling_filter) if cur.dynamic_sampling_filter else None
    if ESTIMATORS[estimator].group_baseline and not (filtered is not None and filtered.sets_advantages):
        key = scope.cur("rollout_temperature")
        yield Problem(
            key,
            f"rollout_temperature {cur.rollout_temperature:g} is greedy (SGLang decodes below "
            f"{GREEDY_BELOW:g} as at 0): the {counted(cur.n_samples_per_prompt, 'sample')} of each prompt "
            "are one "
            f"answer repeated, so {estimator}'s group baseline makes every advantage 0 and training "
            "never updates the policy",
            fix=f"set {key}=1.0",
        )


def greedy_eval_ignores_nucleus(ctx: Context) -> Iterator[Problem]:
    """An eval's top_p / top_k apply only when it samples (temperature > 0)."""
    for stage, config, overrides in eval_configs(ctx.run):
        if not greedy(config.temperature) or config.engine.name == "reference":
            continue
        for field, off in (("top_p", None), ("top_k", -1)):
            if getattr(config, field) != off:
                key = eval_key(stage, overrides, field)
                yield Problem(
                    key,
                    f"{field} {getattr(config, field)} has no effect: temperature {config.temperature:g} "
                    "decodes greedily",
                    fix=f"set {eval_key(stage, overrides, 'temperature')}=1.0, or {key}="
                    + ("null" if off is None else str(off)),
                    severity="warning",
                )


# The server's own prompt rendering, which t3rl's token-in, token-out engines never ask for.
_RENDERED_BY_T3RL = ("--chat-template", "--hf-chat-template-name", "--default-chat-template-kwargs")
_QUANTIZATION = dict.fromkeys(
    ("--quantization", "--speculative-draft-model-quantization"), SGLANG_QUANTIZATION
)
_BACKEND_FLAGS = ("--attention-backend", "--prefill-attention-backend", "--decode-attention-backend")


def _server_argvs(ctx: Context) -> Iterator[tuple[str, list[str], str, bool]]:
    """(key, argv, flag prefix, whether it serves this run's model) of every SGLang t3rl starts."""
    yield EXTRA, list(ctx.run.model.architecture.extra_args), "--sglang-", True
    for stage, config, overrides in eval_configs(ctx.run):
        if stage and config.engine.name == "sglang" and getattr(config.engine, "url", None) is None:
            yield eval_key(stage, overrides, "server.extra_args"), list(config.server.extra_args), "--", True
    for name, service in ctx.run.services.items():
        if service.kind == "sglang":
            yield f"services.{name}.extra_args", list(service.extra_args), "--", False


def sglang_backend_is_sglangs(ctx: Context) -> Iterator[Problem]:
    """hardware.sglang_attention_backend is one of SGLang's --attention-backend choices."""
    choices = [str(c) for c in SERVER_OPTIONS["--attention-backend"].choices or ()]
    for scope in ctx.scopes:
        value = scope.hardware.sglang_attention_backend
        if value is None or value in choices:
            continue
        key = scope.hw("sglang_attention_backend")
        guess = did_you_mean(value, choices)
        yield Problem(
            key,
            f"'{value}' is not an attention backend of SGLang (choose from {', '.join(choices)})",
            fix=f"set {key}={guess}" if guess else f"set {key}=null (SGLang then picks one the GPU runs)",
        )


def server_flags_fit_gpu_and_model(ctx: Context) -> Iterator[Problem]:
    """A server's attention backend and quantization run on the GPU type; expert parallelism needs
    experts; a chat template of the server serving this run's model renders nothing."""
    gpu = GPUS.get(ctx.run.hardware.gpu_type)
    arch = ctx.run.model.architecture
    for key, argv, prefix, own_model in _server_argvs(ctx):
        for index, flag, values in argv_flags(argv):
            if not flag.startswith(prefix) or len(values) != 1:
                continue
            name = resolve("--" + flag.removeprefix(prefix))
            if isinstance(name, list):
                continue  # not an SGLang option: server_argv_problems reports it
            rest = without(argv, index, 1)
            table = SGLANG_ATTENTION if name in _BACKEND_FLAGS else _QUANTIZATION.get(name, {})
            needs = table.get(values[0])
            why = needs.refuses(gpu, arch.mla is not None and own_model) if needs and gpu else None
            if why is not None:
                yield Problem(
                    key,
                    f"{flag} {values[0]} cannot run on a {ctx.run.hardware.gpu_type}: {why}",
                    fix=f"set {list_override(key, rest)} (without it SGLang picks what the GPU runs)",
                )
            if name in _RENDERED_BY_T3RL and own_model:
                yield Problem(
                    key,
                    f"{flag} has no effect: t3rl sends the server token ids (/generate), rendered with "
                    "model.chat.chat_template and its kwargs, so the server's chat template renders nothing",
                    fix=f"set {list_override(key, rest)} (set model.chat.chat_template instead)",
                    severity="warning",
                )
            if name == "--ep-size" and own_model and arch.moe is None and values[0] not in ("1", "0"):
                yield Problem(
                    key,
                    f"{flag} {values[0]}: {ctx.run.model.name} has no experts, so expert parallelism "
                    "does nothing",
                    fix=f"set {list_override(key, rest)}",
                    severity="warning",
                )


KWARGS = "model.chat.chat_template_kwargs"
# What the chat format passes to every rendering itself (t3rl_core.chat.format): not the user's to set.
_RENDER_NAMES = frozenset({"messages", "tools", "add_generation_prompt"})


def template_reads_its_kwargs(ctx: Context) -> Iterator[Problem]:
    """Every chat_template_kwargs key is a variable the (shipped or .jinja) template reads."""
    chat = ctx.run.model.chat
    if not chat.chat_template_kwargs or chat.chat_template is None:
        return  # the tokenizer's own template is read only where the stage runs
    try:
        source = load_template(chat.chat_template)
    except ValueError:
        return  # a template plugin (its variables are its own), or a missing one (model.py reports it)
    # lazy: Jinja is needed only when kwargs are given, and then only to list the template's variables
    import jinja2.meta

    read = jinja2.meta.find_undeclared_variables(jinja2.Environment().parse(source)) - _RENDER_NAMES
    unread = [k for k in chat.chat_template_kwargs if k not in read]
    if not unread:
        return
    renamed = {k: did_you_mean(k, sorted(read)) for k in unread}
    kept = {
        (renamed.get(k) or k): v
        for k, v in chat.chat_template_kwargs.items()
        if k not in unread or renamed[k]
    }
    value = "{" + ",".join(f"{k}:{_value(v)}" for k, v in kept.items()) + "}"
    guesses = [f"{k} → {g}" for k, g in renamed.items() if g]
    yield Problem(
        KWARGS,
        f"template {Path(chat.chat_template).stem} reads no variable {', '.join(unread)}: the "
        f"setting would be ignored (it reads {', '.join(sorted(read)) or 'none'})",
        fix=f"set {KWARGS}={value}" + (f" (did you mean {', '.join(guesses)}?)" if guesses else ""),
    )


def _value(value: object) -> str:
    """A kwargs value as a Hydra override writes it."""
    if isinstance(value, bool):
        return str(value).lower()
    return repr(value) if isinstance(value, str) else str(value)


TOKENIZER = "model.chat.tokenizer"


def tokenizer_has_family_tokens(ctx: Context) -> Iterator[Problem]:
    """A local tokenizer's added tokens include the family's control tokens."""
    model = ctx.run.model
    declared = model.chat.family or FAMILIES.get(model.family)
    path = Path(expand_home(model.chat.tokenizer)) / "tokenizer_config.json"
    if declared is None or not path.is_file():
        return  # a hub id or a tokenizer not downloaded yet: read where the stage runs
    config, _ = json_object(path)
    added = None if config is None else config.get("added_tokens_decoder")  # unreadable: probes.py says
    if not isinstance(added, dict) or not added:
        return  # an old format that lists no added tokens here
    have = {entry.get("content") for entry in added.values() if isinstance(entry, dict)}
    missing = [token for token in declared.special_tokens if token not in have]
    if len(missing) < len(declared.special_tokens):
        return  # one of them is there: the family's tokenizer (another may live in its base vocabulary)
    key = ctx.latest(TOKENIZER, "model.family")
    fix = (
        f"set {TOKENIZER}={model.hf_checkpoint} (the model's own tokenizer)"
        if key == TOKENIZER and model.hf_checkpoint != model.chat.tokenizer
        else f"set {TOKENIZER} to a {model.family} tokenizer, or model= the option of this tokenizer's model"
    )
    yield Problem(
        key,
        f"tokenizer {model.chat.tokenizer} has no {', '.join(missing)}: it is not a tokenizer of the "
        f"{model.family} chat format, whose control tokens it would split into plain text",
        fix=fix,
    )


def server_context_holds_a_call(ctx: Context) -> Iterator[Problem]:
    """A server's --context-length is more than the tokens one call may ask for (SGLang refuses a
    request whose prompt and max_new_tokens do not fit, unless it is started to truncate them)."""
    calls = [
        (f"{s.cur('rollout_max_response_len')}", s.curriculum.rollout_max_response_len)
        for s in ctx.scopes
        if s.curriculum
    ]
    for key, argv, prefix, own_model in _server_argvs(ctx):
        named = [
            resolve("--" + f.removeprefix(prefix)) for _, f, _ in argv_flags(argv) if f.startswith(prefix)
        ]
        if not own_model or "--allow-auto-truncate" in named:
            continue  # with it, SGLang cuts max_new_tokens to the room left instead of refusing
        for index, flag, values in argv_flags(argv):
            if not flag.startswith(prefix) or resolve("--" + flag.removeprefix(prefix)) != "--context-length":
                continue
            try:
                length = human_int(values[0]) if len(values) == 1 else None
            except ValueError:
                continue  # refused by its type
            own = calls if prefix == "--sglang-" else _eval_calls(ctx, key)
            for source, tokens in own:
                if length is not None and tokens >= length:
                    rest = without(argv, index, 1)
                    blamed = ctx.latest(key, source)
                    yield Problem(
                        blamed,
                        f"{flag} {values[0]} leaves no room for a prompt before {source.rsplit('.', 1)[-1]} "
                        f"{tokens}: SGLang refuses every such request",
                        fix=f"set {source}={length // 2}"
                        if blamed == source
                        else f"set {list_override(key, rest)} (the model's own context)",
                    )
                    break


def _eval_calls(ctx: Context, key: str) -> list[tuple[str, int]]:
    """The per-call token budget the eval whose server flags are `key` sets itself."""
    for stage, config, overrides in eval_configs(ctx.run):
        if eval_key(stage, overrides, "server.extra_args") == key and config.max_new_tokens is not None:
            return [(eval_key(stage, overrides, "max_new_tokens"), config.max_new_tokens)]
    return []


RULES = (
    slime_sglang_flags,
    slime_sampling_flags,
    greedy_rollouts,
    greedy_eval_ignores_nucleus,
    sglang_backend_is_sglangs,
    server_flags_fit_gpu_and_model,
    template_reads_its_kwargs,
    tokenizer_has_family_tokens,
    server_context_holds_a_call,
)
