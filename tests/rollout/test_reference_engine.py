"""The scripted reference policy: gold actions in the family's format, seeded faults, stops."""

from __future__ import annotations

import asyncio
import time

import pytest

from t3rl_core.chat.format import ChatFormat
from t3rl_core.config import ParsersConfig, RolloutConfig
from t3rl_core.engines.base import GenerationContext, SamplingParams
from t3rl_core.engines.config import ReferenceEngineConfig
from t3rl_core.engines.reference import PREMATURE_ANSWER, ReferenceEngine, as_model_output
from t3rl_core.parsers.tool_calls import ToolCallActionParser
from t3rl_core.rollout.episode import EpisodeResult, run_episode
from t3rl_core.types import AnswerAction, InvalidAction, ToolCall, ToolCallAction
from tests.rollout.fakes import TOOLS, ToyEnv, task


def play(chat: ChatFormat, env: ToyEnv, **config) -> tuple[EpisodeResult, ReferenceEngine]:
    engine = ReferenceEngine(ReferenceEngineConfig(**config), chat=chat)
    parser = ToolCallActionParser(ParsersConfig(tool_call_parser=chat.family.tool_call_parser), TOOLS)
    result = asyncio.run(
        run_episode(
            task(env.questions),
            env=env,
            engine=engine,
            chat=chat,
            parser=parser,
            sampling=SamplingParams(),
            limits=RolloutConfig(max_num_steps=8),
        )
    )
    return result, engine


def test_perfect_policy_solves_every_family(chat: ChatFormat) -> None:
    env = ToyEnv(("Add 1 and 2.", "Add 3 and 4.", "Add 5 and 6."))
    result, engine = play(chat, env)
    assert result.status == "completed" and result.num_model_calls == 6
    assert [type(a) for a in env.actions] == [ToolCallAction, AnswerAction] * 3
    assert env.actions[2].calls == (ToolCall("add", {"a": 3, "b": 4}),)
    assert not engine.injected


@pytest.mark.parametrize(
    ("fault", "check"),
    [
        ("malformed_json", lambda action: isinstance(action, InvalidAction)),
        ("wrong_argument", lambda action: action.calls[0] != ToolCall("add", {"a": 1, "b": 2})),
        ("extra_call", lambda action: len(action.calls) == 2 and action.calls[0] == action.calls[1]),
        ("premature_answer", lambda action: action == AnswerAction(text=PREMATURE_ANSWER)),
    ],
)
def test_each_fault_reaches_the_env(qwen_chat: ChatFormat, fault: str, check) -> None:
    env = ToyEnv(("Add 1 and 2.",))
    _, engine = play(qwen_chat, env, faults={fault: 1.0})
    assert check(env.actions[0])
    assert engine.injected[fault] >= 1


def test_faults_are_seeded_by_state(qwen_chat: ChatFormat) -> None:
    questions = tuple(f"Add {i}." for i in range(6))

    def run(seed: int) -> tuple[list[int], dict]:
        result, engine = play(qwen_chat, ToyEnv(questions), faults={"malformed_json": 0.5}, seed=seed)
        return result.tokens, dict(engine.injected)

    assert run(1) == run(1)
    assert len({str(run(seed)) for seed in range(4)}) > 1


def test_without_env_or_gold_action_it_aborts(qwen_chat: ChatFormat) -> None:
    engine = ReferenceEngine(ReferenceEngineConfig(), chat=qwen_chat)
    no_env = asyncio.run(engine.generate([1], SamplingParams()))
    assert no_env.finish_reason == "abort" and "no environment" in no_env.error
    finished = ToyEnv(("q",))
    finished.turn = 1
    no_gold = asyncio.run(engine.generate([1], SamplingParams(), GenerationContext(env=finished)))
    assert no_gold.finish_reason == "abort" and "no gold action" in no_gold.error
    with pytest.raises(ValueError, match="chat format"):
        ReferenceEngine(ReferenceEngineConfig())


def test_latency_stop_strings_and_length(qwen_chat: ChatFormat) -> None:
    engine = ReferenceEngine(ReferenceEngineConfig(latency_s=0.05), chat=qwen_chat)
    context = GenerationContext(env=ToyEnv(("q",)), tool_call_parser="hermes")
    started = time.monotonic()
    full = asyncio.run(engine.generate([1], SamplingParams(), context))
    assert time.monotonic() - started >= 0.05
    assert full.token_ids[-1] == qwen_chat.stop_token_ids[0] and full.log_probs == [0.0] * len(full.token_ids)
    cut = asyncio.run(engine.generate([1], SamplingParams(stop=('"add"',)), context))
    assert cut.finish_reason == "stop" and qwen_chat.decode(cut.token_ids).endswith('"add"')
    short = asyncio.run(engine.generate([1], SamplingParams(max_new_tokens=2), context))
    assert short.finish_reason == "length" and len(short.token_ids) == 2


class _Scripted(ToyEnv):
    """Answers with the given texts in turn (the engine's oracle)."""

    def __init__(self, texts: list[str]) -> None:
        super().__init__(("q",))
        self.texts = texts

    def oracle(self) -> AnswerAction:
        return AnswerAction(text=self.texts.pop(0))


def test_kept_ids_of_repeated_texts_equal_fresh_encodes(
    qwen_chat: ChatFormat, monkeypatch: pytest.MonkeyPatch
) -> None:
    from t3rl_core.engines import reference

    monkeypatch.setattr(reference, "_IDS_CACHE_SIZE", 3)  # evictions happen within the script
    monkeypatch.setattr(reference, "_IDS_CACHE_MAX_CHARS", 40)
    long = "a long answer that is never kept " * 3
    # Same-length texts, repeats after eviction, a text that is a prefix of another, a long one twice.
    texts = ["Done: ab.", "Done: cd.", "Done: ab.", "Done", "Done: ef.", "Done: gh.", "Done: ab.", long, long]
    engine = ReferenceEngine(ReferenceEngineConfig(), chat=qwen_chat)
    encodes: list[str] = []
    encode_async = qwen_chat.encode_async

    async def counted(text: str) -> list[int]:
        encodes.append(text)
        return await encode_async(text)

    monkeypatch.setattr(qwen_chat, "encode_async", counted)
    context = GenerationContext(env=_Scripted(list(texts)))
    for text in texts:
        generation = asyncio.run(engine.generate([1], SamplingParams(), context))
        fresh = as_model_output(qwen_chat, text, calls_tools=False, sampling=SamplingParams())
        assert generation.token_ids == fresh.token_ids, text
        generation.token_ids.clear()  # a caller changing its ids must not change the kept ones
    # The second "Done: ab." came from the kept ids; the third was evicted by then, the long one never kept.
    assert len(encodes) == len(texts) - 1
    assert encodes.count(long) == 2


@pytest.mark.parametrize(("writing", "slept"), [(0.03, [0.02]), (0.07, [])])
def test_the_latency_is_the_whole_calls_and_the_reply_is_written_within_it(
    qwen_chat: ChatFormat, monkeypatch: pytest.MonkeyPatch, writing: float, slept: list[float]
) -> None:
    from t3rl_core.engines import reference

    clock = [100.0]
    sleeps: list[float] = []

    class Slow(_Scripted):
        def oracle(self) -> AnswerAction:
            clock[0] += writing  # the reply takes this long to work out
            return super().oracle()

    async def sleep(seconds: float) -> None:
        sleeps.append(round(seconds, 9))
        clock[0] += seconds

    monkeypatch.setattr(reference, "monotonic", lambda: clock[0])
    monkeypatch.setattr(reference.asyncio, "sleep", sleep)
    engine = ReferenceEngine(ReferenceEngineConfig(latency_s=0.05), chat=qwen_chat)
    reply = asyncio.run(engine.generate([1], SamplingParams(), GenerationContext(env=Slow(["Done."]))))
    assert qwen_chat.decode(reply.token_ids).startswith("Done.")
    assert sleeps == slept and clock[0] == pytest.approx(100.0 + max(0.05, writing))
