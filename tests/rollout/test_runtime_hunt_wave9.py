"""Runtime hunt, wave nine: the kinds found in the episode loop and slime's hooks after wave eight
(docs/explanation/tito.md, "Hunted, wave nine")."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import RolloutConfig
from t3rl_core.engines.base import Generation, SamplingParams
from t3rl_core.engines.reference import as_model_output
from t3rl_core.hooks import slime as hooks
from t3rl_core.types import Transition
from tests.hooks.slime_fakes import slime_args, toy_sample, use_runner
from tests.rollout.fakes import FixedEngine, ToyEnv, play

SAMPLING = {"temperature": 1.0, "max_new_tokens": 64}


@pytest.fixture(scope="module")
def qwen() -> ChatFormat:
    return ChatFormat.from_pretrained(shared_tokenizer_dir("qwen3"), "qwen3")


def _generated(monkeypatch: pytest.MonkeyPatch, qwen: ChatFormat, **rollout: Any) -> Any:
    use_runner(monkeypatch, qwen)
    args = slime_args(max_failure_rate=1.0)
    args.t3rl["rollout"].update(rollout)
    return asyncio.run(hooks.generate(args, toy_sample(0, 0), SAMPLING))


def test_a_prompt_over_the_context_limit_is_no_played_episode(
    monkeypatch: pytest.MonkeyPatch, qwen: ChatFormat
) -> None:
    """A row whose rendered prompt (tools included) is past rollout.max_context_len: the episode ended
    `truncated` before the policy's first call, without a word, and its reward 0.0 stood in its group
    (trained on as the policy's): now it is the episode's failure, naming the prompt's length and the
    limit, and the sample is removed with its group, as a world's hang-up before the first turn was."""
    sample = _generated(monkeypatch, qwen, max_context_len=20)
    failure = sample.metadata[hooks.METADATA_KEY]
    assert sample.remove_sample and failure["error_type"] == "EndedBeforeFirstTurn"
    assert "leaves no response token under rollout.max_context_len=20" in failure["message"]
    assert "the prompt of " in sample.metadata["t3rl_metrics"]["error"]
    # No over-refusal: a limit the prompt fits under plays the episode.
    played = _generated(monkeypatch, qwen, max_context_len=4096)
    assert not played.remove_sample and played.metadata["t3rl_metrics"]["num_model_calls"] > 0


class _SlowTokenizer:
    """A transformers tokenizer without a Rust backend (SentencePiece only), as its `decode` behaves: with
    clean_up_tokenization_spaces unset, the config's value (True in many older configs) rewrites " ,"."""

    clean_up_tokenization_spaces = True
    pieces = ('{"text": "a', " ,", ' b"}')

    def decode(
        self,
        ids: list[int],
        skip_special_tokens: bool = False,
        clean_up_tokenization_spaces: bool | None = None,
    ) -> str:
        text = "".join(self.pieces[i] for i in ids)
        clean = (
            self.clean_up_tokenization_spaces
            if clean_up_tokenization_spaces is None
            else clean_up_tokenization_spaces
        )
        return text.replace(" ,", ",") if clean else text


def test_a_slow_tokenizers_text_is_its_ids_text() -> None:
    """The model's text is decoded from its ids; a slow tokenizer's clean-up rewrote it (`a , b` became
    `a, b` inside a call's argument): the world ran a call the model did not write, and the assistant
    message was text whose fresh render encodes other ids. Now decode asks for the ids' own text."""
    slow = SimpleNamespace(_byte_decoder=None, _backend=None, tokenizer=_SlowTokenizer())
    assert ChatFormat.decode(slow, [0, 1, 2]) == '{"text": "a , b"}'  # type: ignore[arg-type]


def test_the_world_is_told_the_episodes_seed(monkeypatch: pytest.MonkeyPatch, qwen: ChatFormat) -> None:
    """A world that samples on its own (tau2's model-played user) reads the episode's seed, set by the
    runner before reset from the sampling slime (or the eval) seeds the policy with."""
    seen: list[int | None] = []

    class SeededWorld(ToyEnv):
        async def reset(self) -> Transition:
            seen.append(self.episode_seed)
            return await super().reset()

    for sampling in ({**SAMPLING, "sampling_seed": 5}, SAMPLING):
        use_runner(monkeypatch, qwen, env=SeededWorld)
        asyncio.run(hooks.generate(slime_args(max_failure_rate=1.0), toy_sample(0, 0), sampling))
    assert seen == [5, None]


def test_an_engine_failure_is_no_model_call(qwen: ChatFormat) -> None:
    """The same server failure on an episode's second call was 2 model calls in the record when the
    engine answered `abort` (SGLang's engine after its retries) and 1 when it raised (a plugin's). Now a
    model call is an answer the episode takes: the failures are 1 call each; an abort after some tokens
    (slime stopping a request mid-answer) took those tokens, and counts."""
    call = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
    answered = as_model_output(qwen, call, calls_tools=True, sampling=SamplingParams())
    first = Generation(answered.token_ids, [-0.5] * len(answered.token_ids), answered.finish_reason)
    partial = Generation(first.token_ids[:3], [-0.5] * 3, "abort", on_request=True)
    failures = (Generation([], [], "abort", error="server gone"), RuntimeError("boom"))
    for failure in failures:
        episode = play(qwen, ToyEnv(), FixedEngine([first, failure]), RolloutConfig())
        assert (episode.status, episode.num_model_calls) == ("aborted", 1), failure
    episode = play(qwen, ToyEnv(), FixedEngine([first, partial]), RolloutConfig())
    assert (episode.status, episode.num_model_calls) == ("aborted", 2)
