"""The generate / reward / log hooks end to end on CPU: slime-shaped samples, the runtime YAML passed
the way slime passes it, and the tiny model behind a local server speaking SGLang's /generate."""

import asyncio
import itertools
import json
from types import SimpleNamespace

import pytest
import yaml

from t3rl_core.hooks import slime as hooks
from tests.support.slime_sample import Sample
from tests.support.tiny_stack import generate_server, shared_tiny_stack, write_runtime_yaml

pytestmark = pytest.mark.slow

# Frequent stop strings end most calls early with finish "stop", so episodes span several calls and
# turns (model tokens, then observation tokens, then model tokens again).
SAMPLING = {
    "temperature": 1.0, "top_p": 1.0, "top_k": -1, "max_new_tokens": 12, "no_stop_trim": True,
    "stop": ["e", "a", "o", "i", " "], "sampling_seed": 3,
}  # fmt: skip


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    root = tmp_path_factory.mktemp("hooks_e2e")
    data, model = shared_tiny_stack()
    rows = [json.loads(line) for line in (data / "bfcl_test.jsonl").read_text().splitlines()]
    config = write_runtime_yaml(root / "runtime.yaml", model, max_num_steps=3)
    with generate_server(model) as (host, port):
        yield SimpleNamespace(rows=rows, config=config, host=host, port=port)


def _args(stack, via):
    args = SimpleNamespace(
        sglang_router_ip=stack.host, sglang_router_port=stack.port, partial_rollout=False, use_wandb=False
    )
    if via == "attribute":  # slime's --custom-config-path: every top-level key becomes an attribute
        for key, value in yaml.safe_load(stack.config.read_text()).items():
            setattr(args, key, value)
    else:  # only the path (hooks read the file themselves)
        args.custom_config_path = str(stack.config)
    return args


def _sample(row, index):
    return Sample(index=index, group_index=index, prompt=row["prompt"], metadata=dict(row["metadata"]))


@pytest.mark.parametrize("via", ["attribute", "path"])
def test_generate_fills_a_trainable_sample(stack, via):
    args = _args(stack, via)

    async def play():
        samples = [_sample(row, i) for i, row in enumerate(stack.rows)]
        try:
            return await asyncio.gather(*(hooks.generate(args, s, SAMPLING) for s in samples))
        finally:
            await hooks.close_runners()

    samples = asyncio.run(play())
    for sample in samples:
        assert isinstance(sample.status, Sample.Status)
        assert sample.status in (Sample.Status.COMPLETED, Sample.Status.TRUNCATED)
        n = sample.response_length
        assert n > 0 and len(sample.loss_mask) == n and len(sample.rollout_log_probs) == n
        prompt_len = len(sample.tokens) - n
        assert prompt_len > 0
        # Model tokens carry real (negative) log-probs; template and env tokens carry mask 0 and 0.0.
        model = [lp for lp, m in zip(sample.rollout_log_probs, sample.loss_mask, strict=True) if m == 1]
        other = [lp for lp, m in zip(sample.rollout_log_probs, sample.loss_mask, strict=True) if m == 0]
        assert model and all(lp < 0 for lp in model) and all(lp == 0.0 for lp in other)
        assert sum(sample.loss_mask) <= SAMPLING["max_new_tokens"] * 3
        metadata = sample.metadata
        assert metadata["data_source"].startswith("multi_turn_")
        assert set(metadata) >= {"outcome", "reward_metrics", "messages", "t3rl_metrics", "bfcl_task"}
        assert 1 <= metadata["t3rl_metrics"]["num_model_calls"] <= 3
        assert sample.reward == pytest.approx(metadata["outcome"]["progress"])
        assert metadata["messages"][: len(sample.prompt)] == sample.prompt
        # SGLang's per-call bookkeeping, as slime's own generate keeps it; slime's get_source reads
        # metadata.source_name.
        calls = metadata["t3rl_metrics"]["num_model_calls"]
        assert sample.weight_versions == ["default"] * calls
        assert sample.prefix_cache_info.total_prompt_tokens >= prompt_len * calls
        assert metadata["source_name"] == metadata["data_source"]
        # What slime calls on it: response-length metrics, the debug dump and its reload.
        assert sample.effective_response_length == sum(sample.loss_mask)
        assert Sample.from_dict(sample.to_dict()) == sample
        assert sample.response == "".join(
            m["content"] for m in metadata["messages"][len(sample.prompt) :] if m["role"] == "assistant"
        )

    # At least one episode alternates model and observation tokens over several calls.
    assert any(
        s.metadata["t3rl_metrics"]["num_model_calls"] >= 2
        and "1,0" in _runs(s.loss_mask)
        and "0,1" in _runs(s.loss_mask)
        for s in samples
    )

    # A later call reads its episode's earlier tokens again: the server's prefix cache served them, and
    # slime's rollout/prefix_cache_hit_rate (cached over prompt tokens of all samples) sees it (the
    # server is shared by the tests of this module: a repeated prompt is all cached).
    multi = [s for s in samples if s.metadata["t3rl_metrics"]["num_model_calls"] >= 2]
    assert multi and all(
        s.prefix_cache_info.cached_tokens >= len(s.tokens) - s.response_length for s in multi
    )
    cached = sum(s.prefix_cache_info.cached_tokens for s in samples)
    assert 0 < cached <= sum(s.prefix_cache_info.total_prompt_tokens for s in samples)

    # reward_func recomputes the same value from the stored outcome once the reward is cleared.
    stored = [s.reward for s in samples]
    for s in samples:
        s.reward = None
    assert asyncio.run(hooks.reward_func(args, samples)) == stored
    for s, r in zip(samples, stored, strict=True):
        s.reward = r

    extra = {}
    hooks.log_rollout_data(0, args, [[s] for s in samples], extra, 1.0)
    for sample in samples:
        assert f"rollout/{sample.metadata['data_source']}/progress" in extra
    assert extra["rollout/average/reward"] == pytest.approx(sum(stored) / len(stored))


def _runs(mask):
    """The mask as its sequence of runs, e.g. [1, 1, 0, 1] → "1,0,1"."""
    runs = [mask[0]] + [b for a, b in itertools.pairwise(mask) if a != b]
    return ",".join(map(str, runs))


def test_eval_mode_uses_the_official_scoring(stack):
    args = _args(stack, "attribute")

    async def play():
        try:
            return await hooks.generate(args, _sample(stack.rows[0], 0), SAMPLING, evaluation=True)
        finally:
            await hooks.close_runners()

    sample = asyncio.run(play())
    assert sample.metadata["outcome"]["mode"] == "eval"
