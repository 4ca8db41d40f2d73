"""World hunt, wave ten: wave nine's leftovers closed by declarations (an ungraded answer is no sample,
a model-played user's unreadable call is answered, an episode says whether its seed reproduces it), and
the kinds found after (docs/explanation/tito.md, "Hunted, wave ten")."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.hooks import slime as hooks
from t3rl_core.rewards import retool
from t3rl_core.rewards.base import InvalidReward, Reward, RewardInput, RewardResult, checked
from tests.hooks.slime_fakes import slime_args, toy_sample, use_runner

SAMPLING = {"temperature": 1.0, "max_new_tokens": 64}
FORMATTED = "<answer>\\boxed{391}</answer>"


@pytest.fixture(scope="module")
def qwen() -> ChatFormat:
    return ChatFormat.from_pretrained(shared_tokenizer_dir("qwen3"), "qwen3")


# ----------------------------------------------------------- an ungraded answer is no sample (wave 9)


class _Workers:
    """ReTool's grading workers answering one fixed way: a verdict, or a worker that died."""

    def __init__(self, verdict: str | BaseException | None) -> None:
        self.verdict = verdict

    async def run(self, fn: str, args: list[Any], budget_s: float) -> str | None:
        if isinstance(self.verdict, BaseException):
            raise self.verdict
        return self.verdict


def _retool(response: str, verdict: str | BaseException | None) -> RewardResult:
    reward = retool.ReToolOutcomeReward(retool.ReToolRewardConfig())
    reward._workers = _Workers(verdict)  # type: ignore[assignment]
    inp = RewardInput(outcome={"response": response, "ground_truth": "391"})
    return checked(asyncio.run(reward.score_async(inp)))


def test_retool_declares_which_values_are_no_grade() -> None:
    """A formatted answer nobody graded (past its CPU budget, grading raised, its worker died) has a
    value standing for no grade; graded answers, and an unformatted one (−1 whatever a grade said),
    measure the response."""
    from t3rl_core.envs.bounded_calls import WorkerLost

    for verdict, named in ((None, "past its budget"), ("error", "raised"), (WorkerLost("gone"), "died")):
        result = _retool(FORMATTED, verdict)
        assert result.ungraded is not None and named in result.ungraded, result
        assert result.metrics["graded"] == 0.0
    assert _retool(FORMATTED, "1").ungraded is None and _retool(FORMATTED, "0").ungraded is None
    unformatted = _retool(FORMATTED + " and more", None)
    assert unformatted.value == -1.0 and unformatted.ungraded is None


class _Ungraded(Reward):
    def __call__(self, inp: RewardInput) -> RewardResult:
        return RewardResult(0.0, {"graded": 0.0}, "math-verify's grading ran past its budget")


def test_an_ungraded_sample_leaves_training_with_its_group(
    monkeypatch: pytest.MonkeyPatch, qwen: ChatFormat
) -> None:
    """Wave nine left it: a ReTool answer not graded trained at the reference's 0, standing in its
    prompt group as a wrong answer. Now slime's generate hook reads the reward's declaration and fails
    the sample as `reward/NotGraded` (remove_sample, its group removed by the log hook, counted)."""
    use_runner(monkeypatch, qwen, reward=_Ungraded())
    sample = asyncio.run(hooks.generate(slime_args(max_failure_rate=1.0), toy_sample(0, 0), SAMPLING))
    failure = sample.metadata[hooks.METADATA_KEY]
    assert sample.remove_sample and (failure["kind"], failure["error_type"]) == ("reward", "NotGraded")
    assert "ran past its budget" in failure["message"]
    sibling = toy_sample(1, 0)
    use_runner(monkeypatch, qwen)
    sibling = asyncio.run(hooks.generate(slime_args(max_failure_rate=1.0), sibling, SAMPLING))
    assert not sibling.remove_sample
    hooks.log_rollout_data(0, slime_args(max_failure_rate=1.0), [sample, sibling], {}, 0.0)
    assert sibling.remove_sample  # its group's baseline held a value no grade gave


def test_an_ungraded_eval_episode_is_kept(monkeypatch: pytest.MonkeyPatch, qwen: ChatFormat) -> None:
    use_runner(monkeypatch, qwen, reward=_Ungraded())
    args = slime_args(max_failure_rate=1.0)
    sample = asyncio.run(hooks.generate(args, toy_sample(0, 0), SAMPLING, evaluation=True))
    assert not sample.remove_sample and hooks.METADATA_KEY not in sample.metadata


@pytest.mark.parametrize("bad", ["", 0, b"why"])
def test_ungraded_is_a_reason(bad: Any) -> None:
    with pytest.raises(InvalidReward, match="ungraded="):
        checked(RewardResult(0.0, {}, bad))


# ------------------------------------ a model-played user's call that is no call is answered (wave 9)


@pytest.fixture(scope="module")
def telecom() -> Any:
    """A telecom row (the user has device tools) and a factory of its episodes, with the model-played
    user's completions replaced by `_Replies`."""
    from t3rl_core.envs.tau2.config import Tau2EnvConfig
    from t3rl_core.envs.tau2.data import rows
    from t3rl_core.envs.tau2.env import make_factory

    config = Tau2EnvConfig(
        domains=["telecom"], user={"name": "llm", "base_url": "http://127.0.0.1:1/v1", "model": "u"}
    )
    row = next(iter(rows(config, "base")))
    factory = make_factory(config)
    yield row, factory
    asyncio.run(factory.aclose())


class _Replies:
    """The user model's completions, canned: each a UserTurn built from (text, [(name, arguments text)])."""

    def __init__(self, replies: list[tuple[str | None, list[tuple[str, str | None]]]]) -> None:
        from t3rl_core.envs.tau2.users import user_call

        self.turns = [
            (text, tuple(user_call(f"u{i}_{j}", n, a) for j, (n, a) in enumerate(calls)))
            for i, (text, calls) in enumerate(replies)
        ]
        self.heard: list[list[dict[str, Any]]] = []

    async def complete(self, messages: Any, tools: Any, seed: int | None = None) -> Any:
        from t3rl_core.envs.tau2.users import UserTurn

        self.heard.append([dict(m) for m in messages])
        text, calls = self.turns.pop(0)
        return UserTurn(text=text, tool_calls=calls)


def _opening(telecom: Any, replies: _Replies) -> tuple[Any, Any]:
    row, factory = telecom
    env = factory(row, "train")
    env.user.user = replies  # the session's simulator: its completions are the canned ones
    return env, asyncio.run(env.reset())


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ('{"on": tru', "no JSON"),
        ("[1, 2]", "a JSON list, not an object"),
        ('"{}"', "a JSON str, not an object"),
        ("1" * 5000, "no JSON object"),
    ],
)
def test_a_user_call_that_is_no_call_is_answered_to_the_user(telecom: Any, written: str, said: str) -> None:
    """tau2's LLM user writing a device call whose arguments are not a JSON object: t3rl ran it with {}
    (a tool taking none ran a call the user never wrote; tau2's own client raises), and past Python's
    digit limit the reading raised out of the episode. Now the call is not made: the user reads the
    problem as its call's error, beside what it wrote, and the outcome counts it as the user's."""
    replies = _Replies([(None, [("check_status_bar", written)]), ("My phone has no internet.", [])])
    env, opening = _opening(telecom, replies)
    assert opening.messages == [{"role": "user", "content": "My phone has no internet."}]
    tool_message = replies.heard[1][-1]
    assert tool_message["role"] == "tool" and "was not made" in tool_message["content"]
    assert said in tool_message["content"]
    assert replies.heard[1][-2]["tool_calls"][0]["function"]["arguments"] == written  # its own text
    outcome = env.outcome()
    assert outcome["user_call_errors"] == 1 and outcome["tool_errors"] == 0  # not the agent's
    assert not any(getattr(m, "tool_calls", None) for m in env._trajectory)  # never made in tau2


def test_a_user_call_beside_an_unreadable_one_is_made(telecom: Any) -> None:
    replies = _Replies(
        [(None, [("check_status_bar", "{}"), ("check_status_bar", "nope")]), ("It shows no signal.", [])]
    )
    env, _ = _opening(telecom, replies)
    first, second = replies.heard[1][-2:]
    assert "was not made" not in first["content"] and "was not made" in second["content"]
    assert env.outcome()["user_call_errors"] == 1
    made = [m for m in env._trajectory if getattr(m, "tool_calls", None)]
    assert len(made) == 1 and len(made[0].tool_calls) == 1


# ------------------------------------------- an episode says whether its seed plays it again (wave 9)


def test_a_sampling_user_is_declared_unseeded(telecom: Any) -> None:
    """Wave nine sent the episode's seed with each LLM-user request, but a server that ignores it
    plays another conversation for the same seed, unsaid. Each user session now declares whether its
    replies follow the seed; the world hands it on (`Env.unseeded_draws`)."""
    from t3rl_core.envs.tau2.users import (
        LLMUser,
        LLMUserConfig,
        ScriptedUser,
        ScriptedUserConfig,
        UserSession,
        UserTask,
    )

    task = UserTask(system_prompt="", instructions="My data is off.")

    row, factory = telecom
    said = factory(row, "eval").unseeded_draws()
    assert said is not None and "temperature 0.7" in said and "may not read" in said
    greedy = LLMUser(LLMUserConfig(base_url="http://127.0.0.1:1/v1", model="u", temperature=0))
    assert greedy.session(task).unseeded() is None
    assert ScriptedUser(ScriptedUserConfig()).session(task).unseeded() is None

    class Plugin(UserSession):  # a plugin's simulator that says nothing is taken at its silence
        async def reply(self, incoming: Any) -> Any:
            raise AssertionError

    assert "does not say" in str(Plugin().unseeded())


def test_the_record_says_which_samplers_the_seed_may_not_decide(qwen: ChatFormat) -> None:
    from t3rl_core.config import RolloutConfig
    from t3rl_core.engines.base import SamplingParams
    from tests.rollout.fakes import ScriptedEngine, ToyEnv, play

    class Drawing(ToyEnv):
        def unseeded_draws(self) -> str | None:
            return "its judge samples unseeded"

    class Broken(ToyEnv):
        def unseeded_draws(self) -> str | None:
            return ""  # type: ignore[return-value]  # neither None nor a reason

    call = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'

    def unseeded(env: ToyEnv, seed: int | None) -> list[str]:
        engine = ScriptedEngine(qwen, [call, "3", call, "7"])
        return play(qwen, env, engine, RolloutConfig(), SamplingParams(seed=seed)).unseeded

    assert unseeded(ToyEnv(), 3) == []
    assert unseeded(ToyEnv(), None) == ["the policy's sampling has no seed"]
    assert unseeded(Drawing(), 3) == ["its judge samples unseeded"]
    assert "not None or a reason" in unseeded(Broken(), 3)[0]


def test_the_eval_record_carries_it() -> None:
    from types import SimpleNamespace

    from t3rl_core.engines.base import SamplingParams
    from t3rl_core.eval.runner import _run_episode
    from t3rl_core.rollout.episode import EpisodeResult

    def record(unseeded: list[str]) -> dict[str, Any]:
        episode = EpisodeResult([1], [], [], [], [], "", "completed", {}, 0, unseeded=unseeded)

        class Runner:
            async def run(self, *args: Any, **kwargs: Any) -> Any:
                return episode, RewardResult(0.0)

        job = SimpleNamespace(task_id="t", category="c", row={"metadata": {}}, sample=0, repeat=0, seed=5)
        return asyncio.run(_run_episode(Runner(), job, SamplingParams(), 0))  # type: ignore[arg-type]

    assert record([])["reproducible"] is True
    drawn = record(["the user model 'u' at … samples at temperature 0.7"])
    assert drawn["reproducible"] is False and drawn["unseeded"][0].startswith("the user model")
