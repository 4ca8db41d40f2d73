"""slime's rollout-side hooks: one episode per sample, its reward, and per-category metric logging.

Flags (all dotted paths, as slime's `load_function` wants them):
  --custom-generate-function-path          t3rl_core.hooks.slime.generate
  --custom-rm-path (optional)              t3rl_core.hooks.slime.reward_func
  --custom-rollout-log-function-path       t3rl_core.hooks.slime.log_rollout_data
  --custom-eval-rollout-log-function-path  t3rl_core.hooks.slime.log_eval_rollout_data
  --eval-function-path                     t3rl_core.hooks.slime.eval_rollout_with_metrics
  --custom-config-path                     <run dir>/runtime/<stage>.yaml (top-level key `t3rl`)

`generate` sets `sample.reward`, so slime skips its own reward model for these samples. It also fills
what slime's own generate function would: `weight_versions`, `prefix_cache_info` and `spec_info` from
each SGLang call's meta_info, `non_generation_time`, and `metadata.source_name` (the row's
`data_source`, which slime's `get_source` reads). An episode the infrastructure broke is never trained
on (`t3rl_core.hooks.failures`).
"""

from __future__ import annotations

import asyncio
import operator
import weakref
from collections import defaultdict
from collections.abc import Iterable, Mapping
from enum import Enum
from statistics import fmean
from typing import TYPE_CHECKING, Any

from t3rl_core.config import RuntimeConfig
from t3rl_core.credit import turn_record
from t3rl_core.engines.base import SamplingOutOfDomain, SamplingParams
from t3rl_core.fields import refused_stops, stop_problem
from t3rl_core.hooks.failures import (
    METADATA_KEY,
    StepBudget,
    check_failure_rate,
    failure_metrics,
    failure_of,
    metadata_of,
    remove_failed_groups,
)
from t3rl_core.rewards.base import RewardInput, RewardResult, within_bounds
from t3rl_core.rollout.failures import ABORT_REQUESTED, Failure

if TYPE_CHECKING:
    from t3rl_core.rollout.episode import EpisodeResult
    from t3rl_core.rollout.runner import EpisodeRunner

# Per event loop (slime keeps one for the rollout manager; tests make many): (config, url) → runner.
_RUNNERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str], EpisodeRunner]] = (
    weakref.WeakKeyDictionary()
)
_SAMPLING_KEYS = ("temperature", "top_p", "top_k", "max_new_tokens")
# The metadata keys `generate` writes: one episode's results, never part of a task row.
_OUTPUT_METADATA = frozenset(
    {"outcome", "reward_metrics", "messages", "step_info", "turn_credit", "t3rl_metrics", METADATA_KEY}
)
# The key generate writes into every sample it fills: a sample holding it was filled by t3rl before.
_FILLED = "t3rl_metrics"
# Under t3rl_metrics: the row's names among _OUTPUT_METADATA that refused it.
_REFUSED = "refused_names"
# The failures of the training step under way in this process (slime runs one rollout manager).
_BUDGET: StepBudget | None = None


async def generate(
    args: Any, sample: Any, sampling_params: Mapping[str, Any], evaluation: bool = False
) -> Any:
    """Run one episode of `sample`'s task against slime's SGLang router and fill the sample for training."""
    if getattr(args, "partial_rollout", False):
        raise ValueError("t3rl episodes cannot be resumed mid-way: run slime without --partial-rollout")
    runtime = RuntimeConfig.from_slime_args(args)
    runner = await _runner(args, runtime)
    clash = _clear_outputs(sample)
    metadata = sample.metadata
    task = {
        "prompt": sample.prompt,
        "metadata": dict(metadata) if isinstance(metadata, Mapping) else metadata,  # else refused, named
        "label": sample.label,
    }
    if clash:
        # The row's own values under the names generate writes its results under: dropped before the
        # episode (the world never read them) and overwritten after, without a word.
        reason = (
            f"the row's metadata holds {', '.join(clash)}: t3rl's generate writes each episode's results "
            "under these names (slime's sample.metadata), so the world would never read the row's: "
            "rename them when the data is prepared"
        )
        episode, reward = runner.refused(task, reason)
    else:
        episode, reward = await runner.run(
            task,
            "eval" if evaluation else "train",
            sampling=to_sampling(sampling_params),
            step=training_step(),
        )
    response_ids = list(episode.response_ids)
    if not len(response_ids) == len(episode.loss_mask) == len(episode.log_probs):
        raise AssertionError(
            f"TITO violation: {len(response_ids)} response tokens, {len(episode.loss_mask)} mask entries, "
            f"{len(episode.log_probs)} log-probs"
        )
    prompt_ids, loss_mask, log_probs = (
        list(episode.prompt_ids),
        list(episode.loss_mask),
        list(episode.log_probs),
    )
    # slime's trainer slices a sample's response as tokens[-response_length:] (the whole sequence for
    # 0) against response_length logits, after its prompt's: an episode that ended before any token
    # (an env done or failed at reset, an engine failing at once, a prompt over max_context_len) gets
    # one untrained token where it has none, the turn-ending token.
    if not prompt_ids:
        prompt_ids = [runner.chat.stop_token_ids[0]]
    if not response_ids:
        response_ids, loss_mask, log_probs = [runner.chat.stop_token_ids[0]], [0], [0.0]
    sample.tokens = prompt_ids + response_ids
    sample.response = episode.response_text
    sample.response_length = len(response_ids)
    sample.loss_mask = loss_mask
    sample.rollout_log_probs = log_probs
    sample.reward = reward.value
    sample.non_generation_time = float((episode.timings or {}).get("orchestration_s", 0.0))
    _apply_call_meta(args, sample, episode)
    # slime has no parse_error status: a turn the format repair could not fix removes the sample from
    # training (its loss mask is zeroed and the tau2 reward gives it weight 0), as the reference does.
    sample.status = sample_status(sample, "failed" if episode.status == "parse_error" else episode.status)
    failure = episode.failure or (
        None if evaluation else unplayed(episode) or ungraded(reward) or foreign_end(episode, runtime)
    )
    sample.remove_sample = episode.status == "parse_error" or failure is not None
    metadata = dict(sample.metadata) if isinstance(sample.metadata, Mapping) else {}
    if metadata.get("data_source") is not None:
        metadata["source_name"] = str(metadata["data_source"])
    if failure is not None:
        metadata[METADATA_KEY] = failure.as_dict()
    sample.metadata = {
        **metadata,
        "outcome": episode.outcome,
        "reward_metrics": dict(reward.metrics),
        "messages": list(episode.messages),
        "step_info": episode.step_info,  # the world's note on each env call (Transition.info)
        "turn_credit": turn_record(episode.outcome, episode.step_starts, len(response_ids)),
        _FILLED: {
            "num_model_calls": episode.num_model_calls,
            "trainable_tokens": sum(loss_mask),
            "format_repairs": episode.format_repairs,
            "cut_tokens": episode.cut_tokens,
            "after_stop_tokens": episode.after_stop_tokens,
            "parse_error": float(episode.status == "parse_error"),
            "status": episode.status,
            "error": episode.error,
            # The row's own names among generate's, kept so the refusal holds when slime hands the sample
            # over again: its values are written over below, and the row would then play without them.
            **({_REFUSED: clash} if clash else {}),
            **{f"time_{name}": value for name, value in (episode.timings or {}).items()},
        },
    }
    if not evaluation:
        _count_episode(args, runtime, failure, sample)
    return sample


def unplayed(episode: EpisodeResult) -> Failure | None:
    """The failure of an episode that ended before the policy's first turn, whatever ended it: its
    world (a tau2 user hanging up in its opening message, a world done or cut at reset) or its limits
    (a prompt over rollout.max_context_len). Its reward measured the world or the data, not the policy,
    so it must not stand in its group: a hang-up scored 1.0 on tau2 tasks whose database check passes
    untouched, and a prompt over the limit 0.0, and their siblings' advantages were built around it.
    Training only: an eval records such an episode with its attribution."""
    if episode.num_model_calls or episode.status not in ("completed", "truncated"):
        return None
    if episode.error:
        return Failure("env", "EndedBeforeFirstTurn", episode.error)
    termination = (episode.outcome or {}).get("termination_reason")
    said = f" (termination {termination})" if termination else ""
    how = "cut" if episode.status == "truncated" else "ended"
    message = f"the world {how} the episode before the policy's first turn{said}: nothing of it was played"
    return Failure("env", "EndedBeforeFirstTurn", message)


def ungraded(reward: RewardResult) -> Failure | None:
    """The failure of a training episode whose reward graded nothing (`RewardResult.ungraded`: ReTool's
    math-verify past its budget, raising or its worker dying on a formatted answer). Its value (the
    reference's 0) measured the grader, not the policy: trained on, it stood in its prompt group as a
    wrong answer and its siblings' advantages were built around it. Removed with its group and counted
    (`rollout/failures/reward/NotGraded`, toward rollout.max_failure_rate: a grader failing most
    answers stops the run rather than training on nothing). An eval keeps such a record, attributed
    `infrastructure/not_graded`."""
    if reward.ungraded is None:
        return None
    return Failure("reward", "NotGraded", f"{reward.ungraded}; the sample is left out of training")


def foreign_end(episode: EpisodeResult, runtime: RuntimeConfig) -> Failure | None:
    """The failure of a training episode another party ended (its env's `FOREIGN_ENDINGS`: tau2's user
    model sending an empty message), whose reward (tau2's 0 for it) measured that party: trained on,
    it stood in its group as the policy's failure. The eval attributes it (user_simulator/own_error)."""
    reason = (episode.outcome or {}).get("termination_reason")
    said = runtime.env.FOREIGN_ENDINGS.get(reason) if isinstance(reason, str) else None
    if said is None:
        return None
    return Failure(
        "env", "ForeignEnd", f"{said}; its reward measured that, not the policy: left out of training"
    )


def _clear_outputs(sample: Any) -> list[str]:
    """Take back what an earlier `generate` of this same sample object wrote: slime's fully-async
    rollout puts a group holding an aborted sample back into its buffer and hands the sample over
    again (t3rl refuses partial rollouts, so its episode starts over). The episode reads the row as
    the dataset gave it, and the counters slime sums per call start from zero. Returns the row's own
    keys among the names generate writes (a sample no generate filled: none of them is t3rl's; one a
    refusal filled: the names it was refused for, whose values that refusal wrote over)."""
    sample.weight_versions = []
    sample.prefix_cache_info = type(sample.prefix_cache_info)()
    sample.spec_info = type(sample.spec_info)()
    metadata = sample.metadata or {}
    if not isinstance(metadata, Mapping):  # the runner fails the row, naming what it is
        return []
    if _FILLED not in metadata:
        return sorted(key for key in metadata if key in _OUTPUT_METADATA)
    # source_name is generate's copy of data_source (slime's get_source reads it), else the row's.
    owned = _OUTPUT_METADATA | ({"source_name"} if metadata.get("data_source") is not None else set())
    sample.metadata = {key: value for key, value in metadata.items() if key not in owned}
    filled = metadata[_FILLED]
    return list(filled.get(_REFUSED) or []) if isinstance(filled, Mapping) else []


def _apply_call_meta(args: Any, sample: Any, episode: EpisodeResult) -> None:
    """Per model call, what slime's own generate keeps from SGLang's meta_info: the weight version,
    prompt and prefix-cached tokens, and (with speculative decoding) the draft counters."""
    speculative = getattr(args, "sglang_speculative_algorithm", None)
    for meta in episode.call_meta:
        if "weight_version" in meta:
            sample.weight_versions.append(meta["weight_version"])
        sample.prefix_cache_info.add(meta)
        if speculative:
            sample.spec_info.add(meta)


def _count_episode(args: Any, runtime: RuntimeConfig, failure: Failure | None, sample: Any) -> None:
    """Count a training episode, failed or not, against its step's budget (raises once it is spent).
    An episode slime itself aborted never reaches training and is not counted: at the end of a
    rollout, and when its weight update pauses SGLang (which aborts every request in flight: the
    fully-async rollout's groups go back into its buffer)."""
    global _BUDGET
    if (
        failure is not None
        and failure.kind == "engine"
        and (failure.error_type == ABORT_REQUESTED or _slime_aborting())
    ):
        return
    step = training_step()
    # slime's args hold both; a caller's without them (a script driving generate) gets a budget over
    # the episodes played alone.
    batch = int(getattr(args, "rollout_batch_size", 0) or 0) * int(
        getattr(args, "n_samples_per_prompt", 1) or 1
    )
    if _BUDGET is None or (_BUDGET.step, _BUDGET.batch) != (step, batch):
        _BUDGET = StepBudget(step, batch)
    if failure is None:
        _BUDGET.played += 1
    else:
        _BUDGET.record(failure, sample, runtime.rollout.max_failure_rate)


def _slime_aborting() -> bool:
    """Whether slime is aborting its rollout's remaining requests (its batch is complete)."""
    try:
        from slime.rollout.sglang_rollout import GenerateState
    except ImportError:
        return False
    # slime's singleton (SingletonMeta): read, never built here.
    state = getattr(GenerateState, "_instances", {}).get(GenerateState)
    return bool(getattr(state, "aborted", False))


async def reward_func(args: Any, sample: Any, **_: Any) -> Any:
    """The reward `generate` stored, else recomputed from the stored outcome (lists: --group-rm)."""
    if isinstance(sample, list):
        return [await reward_func(args, s) for s in sample]
    if sample.reward is not None:
        return sample.reward
    # A sample no t3rl generate filled may hold any metadata (slime's default is {}): without a mapping
    # there is no outcome, and the error says so rather than an AttributeError out of slime's reward call.
    metadata = sample.metadata if isinstance(sample.metadata, Mapping) else {}
    outcome = metadata.get("outcome")
    if outcome is None:
        raise ValueError("sample has no t3rl outcome: was it produced by t3rl_core.hooks.slime.generate?")
    from t3rl_core.registries import REWARDS

    runtime = RuntimeConfig.from_slime_args(args)
    reward = REWARDS.build(runtime.reward)
    inp = RewardInput(
        outcome=outcome,
        response=sample.response,
        label=sample.label,
        metadata=metadata,
        step=training_step(),
    )
    return within_bounds(reward, inp, reward(inp)).value


def log_rollout_data(
    rollout_id: int,
    args: Any,
    samples: list[Any],
    rollout_extra_metrics: dict[str, Any] | None,
    rollout_time: float,
) -> bool:
    """Adds rollout/<data_source>/<metric>, rollout/average/<metric> and rollout/failures/…; False keeps
    slime's own logging. slime calls it on the whole batch before building training data from it, so
    this is also where every prompt group holding a failed episode is removed from training."""
    flat = _flatten(samples)
    removed = remove_failed_groups(flat)
    metrics = category_metrics(flat, "rollout") | failure_metrics(flat, "rollout", removed)
    _publish(args, rollout_id, metrics, rollout_extra_metrics, "rollout/step")
    if removed:
        check_failure_rate(flat, _max_failure_rate(args), f"rollout {rollout_id}")
    return False


def log_eval_rollout_data(
    rollout_id: int, args: Any, data: Mapping[str, Mapping[str, Any]], extra_metrics: dict[str, Any] | None
) -> bool:
    """Adds eval/<dataset>/<data_source>/<metric> and eval/<dataset>/average/<metric>; returns False."""
    metrics: dict[str, float] = {}
    for name, result in data.items():
        metrics |= category_metrics(_flatten(result.get("samples") or []), f"eval/{name}")
    _publish(args, rollout_id, metrics, extra_metrics, "eval/step")
    return False


def eval_rollout_with_metrics(args: Any, rollout_id: int, data_source: Any, evaluation: bool = True) -> Any:
    """slime's default rollout for eval, with `metrics` always a dict (the eval log hook adds to it), and
    every sample the infrastructure broke taken out of each dataset's samples, rewards and truncation
    flags (counted under eval/<dataset>/failures/…), so slime's eval scores measure the policy only."""
    from slime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
    from slime.rollout.sglang_rollout import generate_rollout

    output = generate_rollout(args, rollout_id, data_source, evaluation=evaluation)
    if not isinstance(output, RolloutFnEvalOutput | RolloutFnTrainOutput):
        output = RolloutFnEvalOutput(data=output) if evaluation else RolloutFnTrainOutput(samples=output)
    if not isinstance(output.metrics, dict):
        output.metrics = {}
    if isinstance(output, RolloutFnEvalOutput):
        for name, result in output.data.items():
            output.metrics |= _without_failures(args, rollout_id, name, result)
    return output


def _without_failures(args: Any, rollout_id: int, name: str, result: dict[str, Any]) -> dict[str, float]:
    """Drop one eval dataset's failed samples, with their rewards and truncation flags (slime's eval
    data keeps the three lists aligned); returns the failure metrics."""
    samples = list(result.get("samples") or [])
    metrics = failure_metrics(samples, f"eval/{name}")
    kept = [i for i, sample in enumerate(samples) if failure_of(sample) is None]
    if len(kept) < len(samples):
        check_failure_rate(samples, _max_failure_rate(args), f"eval {name} at rollout {rollout_id}")
        for key in ("samples", "rewards", "truncated"):
            if isinstance(result.get(key), list) and len(result[key]) == len(samples):
                result[key] = [result[key][i] for i in kept]
    return metrics


def _max_failure_rate(args: Any) -> float:
    return RuntimeConfig.from_slime_args(args).rollout.max_failure_rate


# The names the hooks write beside the per-source means under a prefix: a data source named so had its
# means overwritten by the overall ones (`average`) or written among the failure counts (`failures`).
_RESERVED_SOURCES = frozenset({"average", "failures"})
_SOURCE_MARK = "source_"


def metric_source(source: str) -> str:
    """`source` as a metric path segment: a data source whose first segment is one of the hooks' own
    names (or starts with the mark itself, so that no two sources share a key) is written as
    `source_<name>`; every other source as it is."""
    reserved = source.split("/", 1)[0] in _RESERVED_SOURCES or source.startswith(_SOURCE_MARK)
    return _SOURCE_MARK + source if reserved else source


def category_metrics(samples: Iterable[Any], prefix: str) -> dict[str, float]:
    """Means of the reward, its metrics and t3rl's counters per `metadata.data_source` and overall,
    over the samples no infrastructure failure broke."""
    per_source: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    everything: dict[str, list[float]] = defaultdict(list)
    for sample in samples:
        metadata = metadata_of(sample)
        if METADATA_KEY in metadata:  # measured nothing about the policy (rollout/failures/… counts it)
            continue
        source = metric_source(str(metadata.get("data_source", "default")))
        for name, value in _numbers(sample, metadata):
            per_source[source][name].append(value)
            everything[name].append(value)
    result = {
        f"{prefix}/{source}/{name}": fmean(values)
        for source, named in sorted(per_source.items())
        for name, values in sorted(named.items())
    }
    result |= {f"{prefix}/average/{name}": fmean(values) for name, values in sorted(everything.items())}
    return result


def to_sampling(params: Mapping[str, Any]) -> SamplingParams:
    """slime's SGLang `sampling_params` dict as the engine's SamplingParams (unknown keys dropped)."""
    kwargs: dict[str, Any] = {key: params[key] for key in _SAMPLING_KEYS if params.get(key) is not None}
    if params.get("stop"):
        stop = params["stop"]
        kwargs["stop"] = (stop,) if isinstance(stop, str) else tuple(stop)
        # A stop string is non-empty text: SGLang's stop check finds "" in every text, so each call of
        # every episode ended after its first token (a world's Env.stop is held to the same).
        empty = refused_stops(kwargs["stop"])
        if empty:
            raise ValueError(
                f"slime's sampling_params stop (--rollout-stop) holds {empty[0]!r}: "
                f"{stop_problem(empty[0])}; drop it from --rollout-stop"
            )
    if params.get("stop_token_ids"):
        ids = params["stop_token_ids"]
        kwargs["stop_token_ids"] = tuple(map(_integral, ids)) if isinstance(ids, list | tuple) else (ids,)
    if params.get("sampling_seed") is not None:
        kwargs["seed"] = _integral(params["sampling_seed"])
    for name in ("top_k", "max_new_tokens"):
        if name in kwargs:
            kwargs[name] = _integral(kwargs[name])
    try:
        return SamplingParams(**kwargs)
    except SamplingOutOfDomain as refused:
        raise ValueError(
            f"slime's sampling_params: {refused}; set by {_SLIME_SAMPLING_FLAGS[refused.field]}"
        ) from None


# The slime flag behind each sampling field `to_sampling` reads, named when its value is refused.
_SLIME_SAMPLING_FLAGS = {
    "temperature": "--rollout-temperature",
    "top_p": "--rollout-top-p",
    "top_k": "--rollout-top-k",
    "max_new_tokens": "--rollout-max-response-len",
    "stop_token_ids": "--rollout-stop-token-ids",
    "seed": "slime's sampling_seed (from --rollout-seed)",
}


def _integral(value: Any) -> Any:
    """`value` as an int when it is an integer of another type (numpy's), else as it is (a bool, a
    float or a text stays, for the sampling's domain to refuse)."""
    if isinstance(value, bool):
        return value
    try:
        return operator.index(value)
    except TypeError:
        return value


def sample_status(sample: Any, status: str) -> Any:
    """`status` as a member of the sample's own Status enum (slime's `Sample.Status`)."""
    enum: type[Enum] | None = getattr(type(sample), "Status", None)
    if enum is None:
        try:
            from slime.utils.types import Sample
        except ImportError:
            return status
        enum = Sample.Status
    return enum(status)


def training_step() -> int:
    """slime's current rollout id (the training step), 0 outside a slime rollout."""
    try:
        from slime.rollout import sample_hooks
    except ImportError:
        return 0
    return int(getattr(sample_hooks, "_current_rollout_id", None) or 0)


async def close_runners() -> None:
    """Close the runners (engine sessions, env pools) this event loop's hooks built. slime never needs
    it (its loop lives as long as the process); a caller that runs hooks in short-lived loops does."""
    for runner in _RUNNERS.pop(asyncio.get_running_loop(), {}).values():
        await runner.aclose()


async def _runner(args: Any, runtime: RuntimeConfig) -> EpisodeRunner:
    url = f"http://{args.sglang_router_ip}:{args.sglang_router_port}"
    cache = _RUNNERS.setdefault(asyncio.get_running_loop(), {})
    key = (runtime.model_dump_json(), url)
    if key not in cache:
        cache[key] = _build_runner(args, runtime, url)
    return cache[key]


def _build_runner(args: Any, runtime: RuntimeConfig, url: str) -> EpisodeRunner:
    from t3rl_core.chat.format import ChatFormat
    from t3rl_core.engines.config import SGLangEngineConfig
    from t3rl_core.registries import ENGINES
    from t3rl_core.rollout.runner import EpisodeRunner

    # slime's own semaphore already bounds requests in flight; the engine's must not bind below it.
    engines = max(
        1,
        (getattr(args, "rollout_num_gpus", None) or 1)
        // (getattr(args, "rollout_num_gpus_per_engine", 1) or 1),
    )
    config = SGLangEngineConfig(
        url=url,
        concurrency=(getattr(args, "sglang_server_concurrency", None) or 512) * engines,
        timeout_s=float(getattr(args, "sglang_router_request_timeout_secs", None) or 14400),
    )
    chat = ChatFormat.from_config(runtime.chat, runtime.parsers)
    return EpisodeRunner.from_runtime(runtime, ENGINES.build(config, chat=chat), chat=chat)


# The metrics `_numbers` reads from the sample itself, beside its groups of named metrics.
_SAMPLE_METRICS = frozenset({"reward", "truncated", "aborted"})


def _numbers(sample: Any, metadata: Mapping[str, Any]) -> Iterable[tuple[str, float]]:
    """Each number a sample reports, under one name each: a reward metric named as one of t3rl's (the
    sample's own, or t3rl_metrics') is written as `reward/<name>`. Under its own name it was averaged
    into t3rl's (a plugin reward's {"reward": raw} mixed with the value slime trains on)."""
    if isinstance(sample.reward, int | float):
        yield "reward", float(sample.reward)
    groups = {group: metadata.get(group) for group in ("reward_metrics", "t3rl_metrics")}
    groups = {group: named if isinstance(named, Mapping) else {} for group, named in groups.items()}
    taken = _SAMPLE_METRICS | set(groups["t3rl_metrics"])
    for group, named in groups.items():
        for name, value in named.items():
            if isinstance(value, int | float):
                shared = group == "reward_metrics" and name in taken
                yield (f"reward/{name}" if shared else name), float(value)
    status = getattr(sample.status, "value", sample.status)
    yield "truncated", float(status == "truncated")
    yield "aborted", float(status == "aborted")


def _flatten(samples: Iterable[Any]) -> list[Any]:
    flat = []
    for item in samples:
        flat.extend(_flatten(item) if isinstance(item, list) else [item])
    return flat


def _publish(
    args: Any, rollout_id: int, metrics: dict[str, float], extra: dict[str, Any] | None, step_key: str
) -> None:
    """Merge into slime's extra-metrics dict (its default logger then logs them at the right step), or,
    when slime passed none, log them through slime's logging utilities."""
    if isinstance(extra, dict):
        extra.update(metrics)
        return
    try:
        from slime.observability import logging_utils
        from slime.observability.metric_utils import compute_rollout_step
    except ImportError:
        return
    logging_utils.log(args, {**metrics, step_key: compute_rollout_step(args, rollout_id)}, step_key=step_key)
