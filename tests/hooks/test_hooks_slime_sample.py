"""What slime reads from the samples the generate hook returns, beyond tokens and masks: SGLang's
per-call bookkeeping (weight versions, prefix cache, speculative decoding), the source name, the
non-generation time, and the Sample methods slime calls on them, on a stand-in kept equal to slime's
Sample at the pinned commit."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from enum import Enum
from pathlib import Path
from types import SimpleNamespace

from launch.plan.slime_option_table import SLIME_COMMIT
from t3rl_core.engines.base import Generation
from t3rl_core.engines.config import ReferenceEngineConfig
from t3rl_core.engines.reference import ReferenceEngine
from t3rl_core.engines.sglang_http import parse_generation
from t3rl_core.hooks import slime as hooks
from tests.hooks.slime_fakes import slime_args, toy_sample, use_runner
from tests.support.slime_sample import Sample

RECORD = Path(__file__).parents[1] / "fixtures" / "slime_sample" / "sample_fields.json"


def _methods(cls: type) -> set[str]:
    """Public methods and properties, inherited ones too (not fields, not nested classes)."""
    fields = {f.name for f in dataclasses.fields(cls)}
    return {
        name
        for name in dir(cls)
        if not name.startswith("_") and name not in fields and not isinstance(getattr(cls, name), type)
    }


def test_the_stand_in_has_every_field_and_method_of_slimes_sample_at_the_pin():
    record = json.loads(RECORD.read_text())
    assert record["commit"] == SLIME_COMMIT, "re-record the Sample fields at the new slime pin"
    assert [f.name for f in dataclasses.fields(Sample)] == record["fields"]
    # slime's own generate is the only caller of append_response_tokens (see tests/support/slime_sample.py).
    assert _methods(Sample) == set(record["methods"]) - {"append_response_tokens"}
    assert issubclass(Sample.Status, Enum)
    assert [member.name for member in Sample.Status] == record["nested"]["Status"]["members"]
    for name in ("SpecInfo", "PrefixCacheInfo"):
        nested = getattr(Sample, name)
        assert [f.name for f in dataclasses.fields(nested)] == record["nested"][name]["fields"]
        assert _methods(nested) == set(record["nested"][name]["methods"])


class MetaEngine(ReferenceEngine):
    """The scripted policy, each call answered with SGLang's meta_info bookkeeping (kept in `metas`)."""

    def __init__(self, chat) -> None:
        super().__init__(ReferenceEngineConfig(), chat=chat)
        self.metas: list[dict] = []

    async def generate(self, input_ids, sampling, context=None) -> Generation:
        generation = await super().generate(input_ids, sampling, context)
        meta = {
            "prompt_tokens": len(input_ids),
            "cached_tokens": 0 if not self.metas else len(input_ids) - 5,
            "completion_tokens": len(generation.token_ids),
            "weight_version": f"v{len(self.metas) + 1}",
            "spec_accept_token_num": 3,
            "spec_draft_token_num": 4,
            "spec_verify_ct": 2,
        }
        self.metas.append(meta)
        return dataclasses.replace(generation, meta=meta)


def test_generate_fills_what_slimes_own_generate_would(monkeypatch, qwen_chat):
    engine = MetaEngine(qwen_chat)
    use_runner(monkeypatch, qwen_chat, engine=engine)
    args = slime_args(sglang_speculative_algorithm="EAGLE", reward_key=None)
    sample = asyncio.run(hooks.generate(args, toy_sample(0, group=0), {}))
    calls = sample.metadata["t3rl_metrics"]["num_model_calls"]
    assert calls == len(engine.metas) >= 2
    assert sample.weight_versions == [f"v{i}" for i in range(1, calls + 1)]
    cache = sample.prefix_cache_info
    assert cache.total_prompt_tokens == sum(meta["prompt_tokens"] for meta in engine.metas)
    assert cache.cached_tokens == sum(meta["cached_tokens"] for meta in engine.metas) > 0
    assert 0 < cache.prefix_cache_hit_rate < 1
    spec = sample.spec_info
    assert (spec.spec_accept_token_num, spec.spec_draft_token_num, spec.spec_verify_ct) == (
        3 * calls,
        4 * calls,
        2 * calls,
    )
    assert spec.completion_token_num == sum(sample.loss_mask)
    # slime's get_source reads metadata.source_name ("unknown" without it).
    assert sample.metadata["source_name"] == "multi_turn_base"
    timings = sample.metadata["t3rl_metrics"]
    assert sample.non_generation_time == timings["time_orchestration_s"] > 0

    # What slime calls on it: reward post-processing, response-length metrics, the debug dump and reload.
    assert sample.get_reward_value(args) == sample.reward == 1.0
    assert sample.effective_response_length == sum(sample.loss_mask) < sample.response_length
    reloaded = Sample.from_dict(sample.to_dict())
    assert (
        reloaded == sample and reloaded.prefix_cache_info.prefix_cache_hit_rate == cache.prefix_cache_hit_rate
    )


def test_without_speculative_decoding_the_draft_counters_stay_empty(monkeypatch, qwen_chat):
    use_runner(monkeypatch, qwen_chat, engine=MetaEngine(qwen_chat))
    sample = asyncio.run(hooks.generate(slime_args(), toy_sample(0, group=0), {}))
    assert sample.spec_info == Sample.SpecInfo() and sample.weight_versions[0] == "v1"


def test_a_dict_reward_is_read_through_the_reward_key():
    sample = Sample(reward={"score": 0.5, "acc": 1.0})
    assert sample.get_reward_value(SimpleNamespace(reward_key="score")) == 0.5


def test_the_sglang_client_keeps_the_calls_bookkeeping():
    body = {
        "text": "",
        "meta_info": {
            "id": "r1",
            "finish_reason": {"type": "stop", "matched": 7},
            "output_token_logprobs": [[-0.5, 7, None]],
            "prompt_tokens": 40,
            "cached_tokens": 32,
            "completion_tokens": 1,
            "weight_version": "12",
            "e2e_latency": 0.3,
        },
    }
    generation = parse_generation(json.dumps(body).encode())
    assert generation.meta == {
        "prompt_tokens": 40,
        "cached_tokens": 32,
        "completion_tokens": 1,
        "weight_version": "12",
    }
    assert generation == Generation([7], [-0.5], "stop")  # bookkeeping is not output
