"""slime's rollout-side hooks: one episode per sample, its reward, and per-category metric logging.

Flags (all dotted paths, as slime's `load_function` wants them):
  --custom-generate-function-path          t3rl_core.hooks.slime.generate
  --custom-rm-path (optional)              t3rl_core.hooks.slime.reward_func
  --custom-rollout-log-function-path       t3rl_core.hooks.slime.log_rollout_data
  --custom-eval-rollout-log-function-path  t3rl_core.hooks.slime.log_eval_rollout_data
  --eval-function-path                     t3rl_core.hooks.slime.eval_rollout_with_metrics
  --custom-config-path                     <run dir>/runtime/<stage>.yaml (top-level key `t3rl`)

`generate` sets `sample.reward`, so slime skips its own reward model for these samples.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import defaultdict
from collections.abc import Iterable, Mapping
from enum import Enum
from statistics import fmean
from typing import TYPE_CHECKING, Any

from t3rl_core.config import RuntimeConfig
from t3rl_core.engines.base import SamplingParams
from t3rl_core.rewards.base import RewardInput

if TYPE_CHECKING:
    from t3rl_core.rollout.runner import EpisodeRunner

# Per event loop (slime keeps one for the rollout manager; tests make many): (config, url) → runner.
_RUNNERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str], EpisodeRunner]] = (
    weakref.WeakKeyDictionary()
)
_SAMPLING_KEYS = ("temperature", "top_p", "top_k", "max_new_tokens")


async def generate(
    args: Any, sample: Any, sampling_params: Mapping[str, Any], evaluation: bool = False
) -> Any:
    """Run one episode of `sample`'s task against slime's SGLang router and fill the sample for training."""
    if getattr(args, "partial_rollout", False):
        raise ValueError("t3rl episodes cannot be resumed mid-way: run slime without --partial-rollout")
    runtime = RuntimeConfig.from_slime_args(args)
    runner = await _runner(args, runtime)
    task = {"prompt": sample.prompt, "metadata": dict(sample.metadata or {}), "label": sample.label}
    episode, reward = await runner.run(
        task, "eval" if evaluation else "train", sampling=to_sampling(sampling_params), step=training_step()
    )
    response_ids = list(episode.response_ids)
    if not len(response_ids) == len(episode.loss_mask) == len(episode.log_probs):
        raise AssertionError(
            f"TITO violation: {len(response_ids)} response tokens, {len(episode.loss_mask)} mask entries, "
            f"{len(episode.log_probs)} log-probs"
        )
    sample.tokens = list(episode.prompt_ids) + response_ids
    sample.response = episode.response_text
    sample.response_length = len(response_ids)
    sample.loss_mask = list(episode.loss_mask)
    sample.rollout_log_probs = list(episode.log_probs)
    sample.reward = reward.value
    # slime has no parse_error status: a turn the format repair could not fix removes the sample from
    # training (its loss mask is zeroed and the tau2 reward gives it weight 0), as the reference does.
    sample.status = sample_status(sample, "failed" if episode.status == "parse_error" else episode.status)
    if episode.status == "parse_error":
        sample.remove_sample = True
    sample.metadata = {
        **(sample.metadata or {}),
        "outcome": episode.outcome,
        "reward_metrics": dict(reward.metrics),
        "messages": list(episode.messages),
        "t3rl_metrics": {
            "num_model_calls": episode.num_model_calls,
            "trainable_tokens": sum(episode.loss_mask),
            "format_repairs": episode.format_repairs,
            "parse_error": float(episode.status == "parse_error"),
            "status": episode.status,
            "error": episode.error,
            **{f"time_{name}": value for name, value in (episode.timings or {}).items()},
        },
    }
    return sample


async def reward_func(args: Any, sample: Any, **_: Any) -> Any:
    """The reward `generate` stored, else recomputed from the stored outcome (lists: --group-rm)."""
    if isinstance(sample, list):
        return [await reward_func(args, s) for s in sample]
    if sample.reward is not None:
        return sample.reward
    outcome = (sample.metadata or {}).get("outcome")
    if outcome is None:
        raise ValueError("sample has no t3rl outcome: was it produced by t3rl_core.hooks.slime.generate?")
    from t3rl_core.registries import REWARDS

    runtime = RuntimeConfig.from_slime_args(args)
    reward = REWARDS.build(runtime.reward)
    result = reward(
        RewardInput(
            outcome=outcome,
            response=sample.response,
            label=sample.label,
            metadata=sample.metadata,
            step=training_step(),
        )
    )
    return result.value


def log_rollout_data(
    rollout_id: int,
    args: Any,
    samples: list[Any],
    rollout_extra_metrics: dict[str, Any] | None,
    rollout_time: float,
) -> bool:
    """Adds rollout/<data_source>/<metric> and rollout/average/<metric>; False keeps slime's own logging."""
    metrics = category_metrics(_flatten(samples), "rollout")
    _publish(args, rollout_id, metrics, rollout_extra_metrics, "rollout/step")
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
    """slime's default rollout for eval, with `metrics` always a dict (the eval log hook adds to it)."""
    from slime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput
    from slime.rollout.sglang_rollout import generate_rollout

    output = generate_rollout(args, rollout_id, data_source, evaluation=evaluation)
    if not isinstance(output, RolloutFnEvalOutput | RolloutFnTrainOutput):
        output = RolloutFnEvalOutput(data=output) if evaluation else RolloutFnTrainOutput(samples=output)
    if not isinstance(output.metrics, dict):
        output.metrics = {}
    return output


def category_metrics(samples: Iterable[Any], prefix: str) -> dict[str, float]:
    """Means of the reward, its metrics and t3rl's counters per `metadata.data_source` and overall."""
    per_source: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    everything: dict[str, list[float]] = defaultdict(list)
    for sample in samples:
        metadata = sample.metadata or {}
        source = str(metadata.get("data_source", "default"))
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
    if params.get("stop_token_ids"):
        kwargs["stop_token_ids"] = tuple(params["stop_token_ids"])
    if params.get("sampling_seed") is not None:
        kwargs["seed"] = int(params["sampling_seed"])
    return SamplingParams(**kwargs)


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


def _numbers(sample: Any, metadata: Mapping[str, Any]) -> Iterable[tuple[str, float]]:
    if isinstance(sample.reward, int | float):
        yield "reward", float(sample.reward)
    for group in ("reward_metrics", "t3rl_metrics"):
        for name, value in (metadata.get(group) or {}).items():
            if isinstance(value, int | float):
                yield name, float(value)
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
