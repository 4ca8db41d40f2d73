"""Runtime kinds of round eight: an engine answering ids past the model's vocabulary, and a world whose
outcome holds a verdict (`accuracy`, `progress`) that is no share in [0, 1]."""

from __future__ import annotations

import asyncio
import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.chat.vocab_limit import ID_CEILING, token_id_limit
from t3rl_core.config import RolloutConfig
from t3rl_core.engines.base import Generation, SamplingParams
from t3rl_core.finite import MissingScore
from t3rl_core.hooks import slime as hooks
from t3rl_core.hooks.failures import METADATA_KEY
from t3rl_core.rewards.base import InvalidReward, RewardInput, within_bounds
from t3rl_core.rewards.progress import ProgressReward
from t3rl_core.rewards.progress_config import ProgressRewardConfig
from t3rl_core.rewards.tau2 import Tau2RewardConfig, Tau2ShapedReward
from t3rl_core.rewards.toolrl import ToolRLReward, ToolRLRewardConfig
from t3rl_core.types import Transition
from tests.hooks.slime_fakes import slime_args, toy_sample, use_runner
from tests.rollout.fakes import FixedEngine, ToyEnv, play
from tests.support.slime_sample import Sample

# --- Token ids past the model's vocabulary ---------------------------------------------------------------

_EMBEDDING_ROWS = 512  # the tiny tokenizers have 425 tokens or so; the embedding is padded past them


@pytest.fixture(scope="module")
def model_chat(tmp_path_factory: pytest.TempPathFactory) -> ChatFormat:
    """qwen3's tiny tokenizer in a model dir whose config.json pads the embedding to 512 rows."""
    model = tmp_path_factory.mktemp("model") / "qwen3"
    shutil.copytree(shared_tokenizer_dir("qwen3"), model)
    (model / "config.json").write_text(json.dumps({"model_type": "qwen3", "vocab_size": _EMBEDDING_ROWS}))
    return ChatFormat.from_pretrained(model, "qwen3")


def _answer(chat: ChatFormat, token: int) -> Any:
    ids = [*chat.encode("The sum is"), token, chat.stop_token_ids[0]]
    return play(
        chat,
        ToyEnv(),
        FixedEngine([Generation(ids, [-0.1] * len(ids), "stop")]),
        RolloutConfig(max_response_len=64),
        SamplingParams(max_new_tokens=16),
    )


@pytest.mark.parametrize("token", [_EMBEDDING_ROWS, 10**6, 2**31, 2**64])
def test_a_token_id_past_the_models_vocabulary_is_the_engines_failure(
    model_chat: ChatFormat, token: int
) -> None:
    """An id past the embedding's rows went into the trajectory with loss mask 1 (a slime sample then
    indexes past the trainer's embedding: a device-side assert that stops the training step), and
    2**64 ended the episode as t3rl's own bug (an OverflowError in the decoder)."""
    result = _answer(model_chat, token)
    assert result.status == "aborted" and result.failure is not None
    assert (result.failure.kind, result.failure.error_type) == ("engine", "BadGeneration")
    assert str(token) in result.error
    assert token not in result.response_ids and sum(result.loss_mask) == 0


def test_a_padding_id_inside_the_embedding_is_the_models_own(model_chat: ChatFormat) -> None:
    """SGLang may sample a padding row (the embedding is wider than the tokenizer): no failure."""
    padding = len(model_chat.tokenizer)
    assert padding < _EMBEDDING_ROWS
    result = _answer(model_chat, padding)
    assert result.failure is None or result.failure.error_type != "BadGeneration"
    assert padding in result.response_ids


def test_the_bound_is_the_configs_vocabulary_else_the_ceiling(tmp_path: Path, model_chat: ChatFormat) -> None:
    assert model_chat.token_id_limit == _EMBEDDING_ROWS
    bare = ChatFormat.from_pretrained(shared_tokenizer_dir("qwen3"), "qwen3")
    assert bare.token_id_limit == ID_CEILING  # a tokenizer dir without the model's config
    nested = tmp_path / "vl"
    shutil.copytree(shared_tokenizer_dir("qwen3"), nested)
    (nested / "config.json").write_text(json.dumps({"text_config": {"vocab_size": 1000}}))
    assert token_id_limit(ChatFormat.from_pretrained(nested, "qwen3").tokenizer) == 1000
    small = tmp_path / "small"
    shutil.copytree(shared_tokenizer_dir("qwen3"), small)
    (small / "config.json").write_text(json.dumps({"vocab_size": 8}))  # never below the tokenizer's ids
    assert token_id_limit(ChatFormat.from_pretrained(small, "qwen3").tokenizer) == len(bare.tokenizer)


def test_no_sample_slime_receives_holds_an_id_past_the_vocabulary(
    monkeypatch: pytest.MonkeyPatch, model_chat: ChatFormat
) -> None:
    ids = [*model_chat.encode("The sum is"), 10**6, model_chat.stop_token_ids[0]]
    engine = FixedEngine([Generation(ids, [-0.1] * len(ids), "stop")])
    use_runner(monkeypatch, model_chat, engine=engine)
    sample = asyncio.run(hooks.generate(slime_args(1.0), toy_sample(0, group=0), {}))
    assert max(sample.tokens) < _EMBEDDING_ROWS
    assert sample.remove_sample and sample.status is Sample.Status.ABORTED
    assert sample.metadata[METADATA_KEY]["error_type"] == "BadGeneration"


@settings(max_examples=40, deadline=None)
@given(ids=st.lists(st.one_of(st.integers(0, 600), st.integers(2**31 - 2, 2**70)), min_size=1, max_size=10))
def test_every_trained_id_is_below_the_vocabulary(model_chat: ChatFormat, ids: list[int]) -> None:
    result = play(
        model_chat,
        ToyEnv(),
        FixedEngine([Generation(ids, [-0.1] * len(ids), "stop")]),
        RolloutConfig(max_response_len=64),
        SamplingParams(max_new_tokens=16),
    )
    assert all(token < _EMBEDDING_ROWS for token in result.prompt_ids + result.response_ids)
    assert len(result.response_ids) == len(result.loss_mask) == len(result.log_probs)
    assert all(math.isfinite(lp) for lp in result.log_probs)


# --- A world's verdict that is no share ------------------------------------------------------------------


class _NaNVerdict(ToyEnv):
    def outcome(self) -> dict[str, Any]:
        return {**super().outcome(), "accuracy": math.nan}


def test_a_worlds_verdict_that_is_no_share_is_never_trained_on(
    monkeypatch: pytest.MonkeyPatch, qwen_chat: ChatFormat
) -> None:
    """A NaN accuracy went into the sample's outcome as the world's verdict (the binary reward trains on
    it, the eval counts it as a wrong answer): the world's bug, removed with its group and counted."""
    use_runner(monkeypatch, qwen_chat, env=_NaNVerdict)
    sample = asyncio.run(hooks.generate(slime_args(1.0), toy_sample(0, group=0), {}))
    failure = sample.metadata[METADATA_KEY]
    assert (failure["kind"], failure["error_type"]) == ("env", "InvalidOutcome")
    assert "accuracy" in failure["message"] and "accuracy" not in sample.metadata["outcome"]
    assert sample.remove_sample and sample.status is Sample.Status.FAILED
    assert math.isfinite(sample.reward)


# --- A reward past its own formula's range ---------------------------------------------------------------


class _Overcounts(ToyEnv):
    """A world reporting more turns correct than it counted (a plugin world's bookkeeping bug)."""

    def outcome(self) -> dict[str, Any]:
        return {"turns_correct": 3, "turns_total": 2, "accuracy": 1.0, "interactions": 4, "format_errors": 0}


def test_a_reward_past_its_declared_range_is_the_rewards_failure(
    monkeypatch: pytest.MonkeyPatch, qwen_chat: ChatFormat
) -> None:
    """The progress reward of such a world was 1.5: trained on, it outweighed every sibling of its group
    that solved the task (slime z-scores rewards within the group)."""
    use_runner(monkeypatch, qwen_chat, env=_Overcounts, reward=ProgressReward(ProgressRewardConfig()))
    sample = asyncio.run(hooks.generate(slime_args(1.0), toy_sample(0, group=0), {}))
    failure = sample.metadata[METADATA_KEY]
    assert (failure["kind"], failure["error_type"]) == ("reward", "InvalidReward")
    assert "1.5" in failure["message"] and "[0, 1]" in failure["message"]
    assert sample.remove_sample and sample.reward == 0.0


def test_slimes_reward_hook_checks_the_declared_range_too() -> None:
    from types import SimpleNamespace

    args = slime_args()  # its reward: progress
    outcome = _Overcounts().outcome()
    sample = SimpleNamespace(reward=None, metadata={"outcome": outcome}, response="", label=None)
    with pytest.raises(InvalidReward, match="outside the"):
        asyncio.run(hooks.reward_func(args, sample))


_TOOLRL_PIECES = st.sampled_from(
    [
        "<think>",
        "</think>",
        "\n",
        "<tool_call>",
        "</tool_call>",
        "<response>",
        "</response>",
        '{"name": "a", "parameters": {"x": 1}}',
        '{"name": "b", "parameters": {"y": 2, "x": 1}}',
        "words and more words ",
    ]
)
_TOOLRL_TRUTHS = [
    '<think>t</think>\n<tool_call>\n{"name": "a", "parameters": {"x": 1}}\n</tool_call>',
    "<think>t</think>\n<response>ok</response>",
    '<think>t</think>\n<tool_call>\n{"name": "a", "parameters": {"x": 1}}\n'
    '{"name": "b", "parameters": {"y": 2, "x": 1}}\n</tool_call>\n<response>ok</response>',
]
_TOOLRL_CONFIGS = [
    {},
    {"format_max": 0.3, "format_min": 0.1, "correctness_max": 0.3, "correctness_min": 0.1},
    {"schedule_reward": True},
    {"max1_step30_max3": True, "with_length": True, "schedule_length": True},
    {"correct_max1": True, "refined": True},
    {"coarse": True, "with_length": True, "length_max": 0.5, "length_min": -0.5},
]


@settings(max_examples=150, deadline=None)
@given(
    pieces=st.lists(_TOOLRL_PIECES, max_size=8),
    gold=st.sampled_from(_TOOLRL_TRUTHS),
    exact=st.booleans(),
    config=st.sampled_from(_TOOLRL_CONFIGS),
    step=st.integers(0, 400),
)
def test_toolrl_never_leaves_its_declared_range(
    pieces: list[str], gold: str, exact: bool, config: dict[str, Any], step: int
) -> None:
    """No false failure: every answer, any variant, any step stays within the declared range."""
    reward = ToolRLReward(ToolRLRewardConfig(**config))
    inp = RewardInput(
        outcome={"response": gold if exact else "".join(pieces), "ground_truth": gold}, step=step
    )
    low, high = reward.bounds(inp)
    assert low <= high
    within_bounds(reward, inp, reward(inp))


@pytest.mark.parametrize(
    ("components", "task_reward", "valid"),
    [({"action": 1.0, "communicate": 1.0}, 1.0, True), ({"action": 3.0}, 1.0, False), ({}, 2.0, False)],
)
def test_tau2s_shaped_reward_declares_one_plus_its_domains_alpha(
    components: dict[str, float], task_reward: float, valid: bool
) -> None:
    reward = Tau2ShapedReward(Tau2RewardConfig())
    outcome = {"domain": "airline", "task_reward": task_reward, "partial_components": components}
    inp = RewardInput(outcome=outcome)
    assert reward.bounds(inp) == (0.0, 1.25)
    if valid:
        assert within_bounds(reward, inp, reward(inp)).value == 1.25
    else:  # a share past 1 is the world's score refused as it is read, or the reward's past its bounds
        with pytest.raises((InvalidReward, MissingScore)):
            within_bounds(reward, inp, reward(inp))


# --- A world that ends the episode before the policy's first turn ----------------------------------------


class _HangsUpOnOdd(ToyEnv):
    """A model-played user: for some samples of a group its opening message ends the call (tau2's
    ###STOP###), and the world's verdict of the untouched state is a full score."""

    hang_up = False

    async def reset(self) -> Transition:
        return Transition(done=True) if self.hang_up else Transition()

    def outcome(self) -> dict[str, Any]:
        if self.hang_up:
            return {"turns_answered": 2, "turns": 2, "termination_reason": "user_stop"}
        return super().outcome()


def test_an_episode_ended_before_the_policys_first_turn_is_never_in_its_group(
    monkeypatch: pytest.MonkeyPatch, qwen_chat: ChatFormat
) -> None:
    """tau2 scores a hang-up in the user's opening message 1.0 on tasks whose database check passes
    untouched (3 of 8 airline tasks tried): such a sample stood in its group with a reward the policy
    never earned, and with a model-played user only some samples of the group hung up, so their
    siblings' advantages were built around it."""
    use_runner(monkeypatch, qwen_chat, env=_HangsUpOnOdd)
    group = [toy_sample(index, group=0) for index in range(4)]
    for sample in group:
        _HangsUpOnOdd.hang_up = sample.index % 2 == 1
        asyncio.run(hooks.generate(slime_args(1.0), sample, {}))
    hung_up = group[1]
    failure = hung_up.metadata[METADATA_KEY]
    assert (failure["kind"], failure["error_type"]) == ("env", "EndedBeforeFirstTurn")
    assert "user_stop" in failure["message"] and hung_up.remove_sample
    assert sum(hung_up.loss_mask) == 0 and hung_up.metadata["t3rl_metrics"]["num_model_calls"] == 0
    played = group[0]
    assert METADATA_KEY not in played.metadata and not played.remove_sample
    metrics: dict[str, Any] = {}
    hooks.log_rollout_data(0, slime_args(1.0), group, metrics, 0.0)
    assert all(sample.remove_sample for sample in group)  # the group, as for any failure
    assert metrics["rollout/failures/env/EndedBeforeFirstTurn"] == 2


def test_slimes_eval_keeps_an_episode_ended_before_the_first_turn(
    monkeypatch: pytest.MonkeyPatch, qwen_chat: ChatFormat
) -> None:
    """As t3rl eval does (scored, attributed to the user simulator): no failure, nothing to train."""
    use_runner(monkeypatch, qwen_chat, env=_HangsUpOnOdd)
    _HangsUpOnOdd.hang_up = True
    sample = asyncio.run(hooks.generate(slime_args(0.0), toy_sample(1, group=0), {}, evaluation=True))
    assert METADATA_KEY not in sample.metadata and sample.status is Sample.Status.COMPLETED


def test_a_tokenizer_without_a_directory_is_bounded_by_the_ceiling() -> None:
    """A tokenizer object built in memory (no name_or_path, or one that is no path) has no model config:
    Path(3) raised a TypeError out of ChatFormat."""
    for name in (None, "", 3, object()):
        assert token_id_limit(type("InMemory", (), {"name_or_path": name})()) == ID_CEILING
