"""An engine's numbers (log-probs, SGLang's meta_info counts) are read into their domain or refused as
the engine's answer, whatever the engine sends: an integer log-prob past a float's range (a plugin
engine's Python int, a JSON integer of 400 digits in SGLang's answer) raised OverflowError out of
float(), and the episode failed as t3rl's own bug ("episode loop error", with a traceback) instead of
the engine's BadGeneration; a count past int64 was kept for slime to sum into its int64 records."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.chat.format import ChatFormat
from t3rl_core.config import RolloutConfig
from t3rl_core.engines.answers import BadGeneration, call_meta, plain_generation
from t3rl_core.engines.base import Generation, SamplingParams
from t3rl_core.engines.sglang_http import BadResponse, parse_generation
from tests.rollout.fakes import FixedEngine, ToyEnv, play

HUGE = [10**400, -(10**400), 2**1024, -(10**5000)]
ANY_NUMBER = st.one_of(
    st.sampled_from(HUGE),
    st.integers(),
    st.floats(),
    st.booleans(),
    st.none(),
    st.text(max_size=3),
    st.sampled_from([np.float64("nan"), np.float32(-0.5), np.int64(-3), np.bool_(True), [1.0], {"lp": 1}]),
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(values=st.lists(ANY_NUMBER, min_size=1, max_size=4))
def test_any_log_probs_are_floats_or_the_engines_bad_generation(values: list[Any]) -> None:
    try:
        generation = plain_generation(Generation([1] * len(values), values, "stop"))
    except BadGeneration as exc:
        assert "log-probs" in str(exc) and len(str(exc)) < 2000
    else:
        assert all(type(lp) is float for lp in generation.log_probs)


@pytest.mark.parametrize("value", HUGE, ids=["1e400", "-1e400", "2**1024", "-1e5000"])
def test_an_integer_log_prob_past_a_float_is_the_engines_failure(value: int, qwen_chat: ChatFormat) -> None:
    ids = [*qwen_chat.encode("The sum is 3"), qwen_chat.stop_token_ids[0]]
    engine = FixedEngine([Generation(ids, [value] + [-0.1] * (len(ids) - 1), "stop")])
    result = play(
        qwen_chat, ToyEnv(), engine, RolloutConfig(max_response_len=64), SamplingParams(max_new_tokens=16)
    )
    assert result.failure is not None
    assert (result.failure.kind, result.failure.error_type) == ("engine", "BadGeneration"), result.failure
    assert "no finite number" in result.failure.message and result.status == "aborted"


def _body(log_prob: str, **meta: Any) -> bytes:
    info = {"output_token_logprobs": "LP", "finish_reason": {"type": "stop"}, **meta}
    return (
        json.dumps({"meta_info": info, "output_ids": [5]})
        .replace('"LP"', f"[[{log_prob}, 5, null]]")
        .encode()
    )


@pytest.mark.parametrize("log_prob", ["1" * 400, "-" + "9" * 309, "1e400", "NaN", "-Infinity"])
def test_sglangs_answer_of_a_log_prob_past_a_float_is_a_bad_response(log_prob: str) -> None:
    with pytest.raises(BadResponse, match="non-finite output_token_logprobs"):
        parse_generation(_body(log_prob))


def test_sglangs_finite_answer_is_read() -> None:
    generation = parse_generation(_body("-0.5", prompt_tokens=12, completion_tokens=1))
    assert generation.log_probs == [-0.5] and generation.meta == {"prompt_tokens": 12, "completion_tokens": 1}


@settings(max_examples=200, deadline=None, derandomize=True)
@given(count=ANY_NUMBER | st.integers(2**62, 2**70))
def test_a_kept_count_is_an_int64_count(count: Any) -> None:
    kept = call_meta({"prompt_tokens": count, "cached_tokens": count})
    for value in kept.values():
        assert type(value) is int and 0 <= value <= 2**63 - 1
    if isinstance(count, int) and not isinstance(count, bool) and 0 <= count < 2**63:
        assert kept == {"prompt_tokens": count, "cached_tokens": count}
    assert not (isinstance(count, float) and math.isnan(count) and kept)
