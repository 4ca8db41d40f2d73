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


# ------------------------------------------------------------ new kinds: slime's sampling, a domain


@pytest.mark.parametrize(
    ("params", "flag"),
    [
        ({"temperature": float("nan")}, "--rollout-temperature"),
        ({"temperature": -0.5}, "--rollout-temperature"),
        ({"top_p": 0.0}, "--rollout-top-p"),
        ({"top_k": 0}, "--rollout-top-k"),
        ({"max_new_tokens": 0}, "--rollout-max-response-len"),
        ({"max_new_tokens": 1.5}, "--rollout-max-response-len"),
        ({"stop_token_ids": [-1]}, "--rollout-stop-token-ids"),
        ({"stop_token_ids": [True]}, "--rollout-stop-token-ids"),
        ({"stop_token_ids": "12"}, "--rollout-stop-token-ids"),
        ({"sampling_seed": "abc"}, "--rollout-seed"),
        ({"sampling_seed": 2**70}, "--rollout-seed"),
    ],
)
def test_slimes_sampling_outside_its_domain_names_the_flag(params: dict[str, Any], flag: str) -> None:
    """slime's sampling_params reached the engine as given: NaN or negative temperatures, top_p 0,
    max_new_tokens 0 (every episode unplayed), a text of stop ids read as one id per character, a bool
    id as 1, a seed past SGLang's range. Each call failed at the server (or played another sampling),
    and the run stopped on the failure rate naming no flag. Now SamplingParams declares each field's
    domain and to_sampling names the flag that set it."""
    with pytest.raises(ValueError, match="slime's sampling_params: sampling ") as refused:
        hooks.to_sampling(params)
    assert flag in str(refused.value)


def test_slimes_sampling_inside_its_domain_is_taken() -> None:
    import numpy as np

    taken = hooks.to_sampling(
        {"temperature": 0, "top_p": 1.0, "top_k": -1, "max_new_tokens": 1, "stop_token_ids": [np.int64(7)]}
        | {"sampling_seed": np.int64(3)}
    )
    assert taken.stop_token_ids == (7,) and taken.seed == 3 and type(taken.seed) is int


def test_each_sampling_field_has_a_domain() -> None:
    """The declaration covers every field but the stop strings (refused_stops reads those)."""
    from dataclasses import fields

    from t3rl_core.engines.base import SAMPLING_FIELDS, SamplingParams

    assert {f.name for f in fields(SamplingParams)} - set(SAMPLING_FIELDS) == {"stop"}
    assert set(SAMPLING_FIELDS) - {"stop"} <= set(hooks._SLIME_SAMPLING_FLAGS)
    # SGLang's own domains are one declaration, which the pre-flight reads too.
    from launch.checks import sglang_names
    from t3rl_core.fields import SAMPLING_DOMAINS

    assert sglang_names.SAMPLING_DOMAINS is SAMPLING_DOMAINS
    for name in ("temperature", "top_p", "top_k"):
        assert SAMPLING_FIELDS[name][1] == SAMPLING_DOMAINS[name][1]


# ------------------------------------------------------- new kinds: a reward's range that is no range


class _Bounded(Reward):
    def __init__(self, bounds: Any) -> None:
        self.declared = bounds

    def __call__(self, inp: RewardInput) -> RewardResult:
        return RewardResult(0.5)

    def bounds(self, inp: RewardInput) -> Any:
        return self.declared


@pytest.mark.parametrize(
    "bounds", [(1.0, 0.0), (float("nan"), 1.0), (0.0, float("inf")), (0, 1, 2), "01", (None, 1)]
)
def test_a_declared_range_that_is_no_range_is_blamed_on_the_bounds(bounds: Any) -> None:
    """An inverted or NaN range refused every value, blamed on the value ("gave 0.5, outside the
    [1, 0]"); a triple or a text raised Python's words out of the reward's check."""
    from t3rl_core.rewards.base import within_bounds

    with pytest.raises(InvalidReward, match=r"_Bounded.bounds\(\) returned .*, no range"):
        within_bounds(_Bounded(bounds), RewardInput(outcome={}), RewardResult(0.5))
    assert within_bounds(_Bounded([0, 1]), RewardInput(outcome={}), RewardResult(0.5)).value == 0.5


# ------------------------------------------ new kinds: the log hooks on samples generate never filled


@pytest.mark.parametrize(
    "metadata",
    [["row", "as", "list"], {"reward_metrics": [1, 2]}, {"t3rl_metrics": "x"}, "text"],
)
def test_the_log_hook_reads_a_sample_generate_never_filled(metadata: Any) -> None:
    """A sample slime aborted before generate keeps the row's metadata, of any type: a list there (or
    under reward_metrics) raised AttributeError out of log_rollout_data, which then removed no failed
    group and logged nothing of the batch."""
    from tests.support.slime_sample import Sample

    odd = Sample(index=0, group_index=0, reward=1.0, metadata=metadata)
    extra: dict[str, Any] = {}
    hooks.log_rollout_data(0, slime_args(), [odd], extra, 0.0)
    assert extra["rollout/average/reward"] == 1.0 and extra["rollout/failures/rate"] == 0.0


@pytest.mark.parametrize("record", [{"x": 1}, "boom", {"kind": "env", "error_type": 3, "message": "m"}])
def test_a_failure_record_of_another_shape_is_a_failure(record: Any) -> None:
    from t3rl_core.hooks.failures import failure_of, remove_failed_groups
    from tests.support.slime_sample import Sample

    odd = Sample(index=0, group_index=0, reward=1.0, metadata={hooks.METADATA_KEY: record})
    sibling = Sample(index=1, group_index=0, reward=1.0, metadata={})
    failure = failure_of(odd)
    assert failure is not None and failure.label == "t3rl/UnreadableFailure"
    assert remove_failed_groups([odd, sibling]) == 2 and sibling.remove_sample


# --------------------------------------- new kinds: an episode another party ended is no sample of it


def _ended_by_user(monkeypatch: pytest.MonkeyPatch, qwen: ChatFormat, env_name: str, reason: str) -> Any:
    from tests.rollout.fakes import ToyEnv

    class UserEnded(ToyEnv):
        def outcome(self) -> dict[str, Any]:
            return super().outcome() | {"termination_reason": reason}

    use_runner(monkeypatch, qwen, env=UserEnded)
    args = slime_args(max_failure_rate=1.0)
    args.t3rl["env"] = {"name": env_name}
    return asyncio.run(hooks.generate(args, toy_sample(0, 0), SAMPLING))


def test_an_episode_the_user_simulator_ended_leaves_training(
    monkeypatch: pytest.MonkeyPatch, qwen: ChatFormat
) -> None:
    """tau2 ends a simulation on the user model's empty message (UserError) and scores it 0: the eval
    attributes it to the user simulator, but training took the 0 as the policy's, in its group. Now
    the env declares the ending another party's (EnvConfig.FOREIGN_ENDINGS) and the hook fails it."""
    sample = _ended_by_user(monkeypatch, qwen, "tau2", "user_error")
    failure = sample.metadata[hooks.METADATA_KEY]
    assert sample.remove_sample and failure["error_type"] == "ForeignEnd"
    assert "empty message" in failure["message"]
    for env_name, reason in (
        ("tau2", "user_stop"),
        ("tau2", "agent_stop"),
        ("bfcl_multi_turn", "user_error"),
    ):
        kept = _ended_by_user(monkeypatch, qwen, env_name, reason)
        assert not kept.remove_sample, (env_name, reason)


# ------------------------------------ new kinds: the eval's attribution reads the loop's own error


def test_a_user_models_refusal_is_told_apart_from_a_crash(qwen: ChatFormat) -> None:
    """The attribution read a user model's refusal (openai's BadRequestError: the conversation outgrew
    it) from the text before the error's first ':', but the loop writes "environment error: " before
    the type: every such episode was infrastructure/crashed, never the user simulator's own_error (its
    tests wrote the bare type). Now both read the loop's declared prefix (rollout.failures.ENV_ERROR)."""
    from t3rl_core.config import RolloutConfig
    from t3rl_core.eval.attribution import attribute
    from tests.rollout.fakes import ScriptedEngine, ToyEnv, play

    class BadRequestError(Exception):  # openai's name for a 400 from the user model's API
        pass

    class Refused(ToyEnv):
        async def step(self, action: Any) -> Any:
            raise BadRequestError("Error code: 400 - context length exceeded")

    call = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
    episode = play(qwen, Refused(), ScriptedEngine(qwen, [call]), RolloutConfig())
    record = {"status": episode.status, "error": episode.error, "success": False, "outcome": {}}
    found = attribute(record)
    assert found is not None and (found["party"], found["kind"]) == ("user_simulator", "own_error"), found
    crashed = play(qwen, ToyEnv(fail_in="step"), ScriptedEngine(qwen, [call]), RolloutConfig())
    other = attribute({"status": crashed.status, "error": crashed.error, "success": False, "outcome": {}})
    assert other is not None and other["kind"] == "crashed"


# ----------------------------------------- new kinds: a failed episode's tokens are no TITO drift


def test_a_failed_episode_is_a_prefix_of_its_render(qwen: ChatFormat) -> None:
    """A world whose step fails (here: a tool message of no text) ends the episode after the model's
    turn, before the turn's closing joins: the drift check compared the tokens whole with a render that
    closes the turn, and logged TITO drift at the last token of every such episode."""
    from t3rl_core.config import RolloutConfig
    from t3rl_core.types import ToolCallAction, Transition
    from tests.rollout.fakes import ScriptedEngine, ToyEnv, play

    class NoText(ToyEnv):
        async def step(self, action: Any) -> Transition:
            if isinstance(action, ToolCallAction):
                return Transition(messages=[{"role": "tool", "content": None}])
            return await super().step(action)

    call = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
    episode = play(qwen, NoText(), ScriptedEngine(qwen, [call]), RolloutConfig(tito_drift_check=True))
    assert episode.failure is not None and episode.failure.error_type == "InvalidMessage"
    assert episode.drift_at is None


# ------------------------------------------- new kinds: a ReTool answer that is no one answer's text


@pytest.mark.parametrize("label", [["1/2", "0.5"], {"answer": "3"}, True, float("nan"), None])
def test_a_reference_answer_is_text_or_a_finite_number(label: Any) -> None:
    """str() read a list of accepted answers as the text "['1/2', '0.5']" (None as "None", NaN as
    "nan"), at data preparation and in the world: every boxed answer was graded wrong against it.
    Now one reading (envs/retool/answers.answer_text) refuses it, naming the row."""
    from t3rl_core.envs.retool.config import ReToolEnvConfig
    from t3rl_core.envs.retool.data import problem_row
    from t3rl_core.envs.retool.env import ReToolEnv

    config = ReToolEnvConfig()
    record = {config.data.question_key: "What is 1/2?", config.data.answer_key: label}
    with pytest.raises(ValueError, match="problem 7") as refused:
        problem_row(config.data, record, 7, "train")
    assert "not text or a finite number" in str(refused.value)
    if label is not None:  # the world's own refusal of no label stands for None
        with pytest.raises(ValueError, match="not text or a finite number"):
            ReToolEnv({"label": label}, None, config)  # type: ignore[arg-type]
    for answer, text in (("391", "391"), (391, "391"), (0.5, "0.5")):
        record[config.data.answer_key] = answer
        assert problem_row(config.data, record, 7, "train")["label"] == text
        assert ReToolEnv({"label": answer}, None, config).ground_truth == text  # type: ignore[arg-type]


# --------------------------------------- new kinds: a reward metric named as one of t3rl's own


def test_a_reward_metric_named_as_t3rls_is_its_own() -> None:
    """A plugin reward reporting {"reward": raw} (or "truncated", or "cut_tokens") had it averaged into
    the hook's own metric of that name: rollout/average/reward was the mean of the trained values and
    the raw ones. Now such a metric is written as reward/<name>."""
    from tests.support.slime_sample import Sample

    metrics = {"reward": 10.0, "truncated": 1.0, "cut_tokens": 5.0, "acc": 1.0}
    sample = Sample(
        index=0,
        group_index=0,
        reward=1.0,
        metadata={"reward_metrics": metrics, "t3rl_metrics": {"cut_tokens": 0}},
    )
    means = hooks.category_metrics([sample], "rollout")
    assert means["rollout/average/reward"] == 1.0 and means["rollout/average/reward/reward"] == 10.0
    assert means["rollout/average/truncated"] == 0.0 and means["rollout/average/reward/truncated"] == 1.0
    assert means["rollout/average/cut_tokens"] == 0.0 and means["rollout/average/reward/cut_tokens"] == 5.0
    assert means["rollout/average/acc"] == 1.0


# ------------------------------- new kinds: a world's integer Python's JSON writer does not write


@pytest.mark.parametrize("where", ["outcome", "info", "message"])
def test_a_worlds_integer_past_pythons_digit_limit_is_named(qwen: ChatFormat, where: str) -> None:
    """An outcome, a Transition.info or a message holding an integer of 5,000 digits was JSON data to
    the episode's reading (wave six's json_outcome) and then raised ValueError out of the eval's record
    writer ("Exceeds the limit (4300 digits) for integer string conversion"): the episode had no record.
    Now the one reading names it, the world's failure; 4,300 digits are still written."""
    from t3rl_core.config import RolloutConfig
    from t3rl_core.eval.jsonl import record_line
    from t3rl_core.rollout.outcome_json import json_outcome
    from t3rl_core.types import ToolCallAction, Transition
    from tests.rollout.fakes import ScriptedEngine, ToyEnv, play

    huge = 10**5000

    class Huge(ToyEnv):
        async def step(self, action: Any) -> Transition:
            if isinstance(action, ToolCallAction) and where == "message":
                return Transition(messages=[{"role": "tool", "content": "3", "tool_call_id": huge}])
            done = await super().step(action)
            info = {"n": huge} if where == "info" else {}
            return Transition(messages=done.messages, done=done.done, info=info)

        def outcome(self) -> dict[str, Any]:
            return super().outcome() | ({"n": huge} if where == "outcome" else {})

    call = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
    episode = play(qwen, Huge(), ScriptedEngine(qwen, [call, "3", call, "7"]), RolloutConfig())
    assert episode.failure is not None and episode.failure.kind == "env", episode.error
    assert "more than 4300 digits" in episode.failure.message
    record_line({"outcome": episode.outcome, "step_info": episode.step_info, "messages": episode.messages})
    kept, problems = json_outcome({"n": 10**4299 * 9})
    assert problems == [] and record_line({"outcome": kept})


# ---------------------------- new kinds: extra_body overriding a field of the user model's request


@pytest.mark.parametrize("key", ["temperature", "seed", "messages", "model", "n", "stream"])
def test_extra_body_cannot_override_the_users_request(key: str) -> None:
    """The openai client merges extra_body into the request after t3rl's fields: {"temperature": 0.9}
    sampled a greedy user at 0.9 (its benchmark identity and `unseeded` said 0), {"seed": 3} gave
    every reply one seed, {"n": 4} sampled four replies for one read. Now refused at validation."""
    from pydantic import ValidationError

    from t3rl_core.envs.tau2.users import LLMUserConfig

    with pytest.raises(ValidationError, match=f"extra_body sets '{key}'.*~env.user.extra_body.{key}"):
        LLMUserConfig(base_url="http://127.0.0.1:1/v1", model="u", extra_body={key: 1})


def test_every_field_the_users_request_writes_is_declared() -> None:
    """The declaration (REQUEST_FIELDS) covers what `complete` writes, read from a request it sends."""
    from types import SimpleNamespace

    from t3rl_core.envs.tau2.users import REQUEST_FIELDS, LLMUser, LLMUserConfig

    sent: dict[str, Any] = {}

    class Completions:
        async def create(self, **request: Any) -> Any:
            sent.update(request)
            message = SimpleNamespace(content="Hi.", tool_calls=None)
            return SimpleNamespace(choices=[SimpleNamespace(message=message)])

    config = LLMUserConfig(
        base_url="http://127.0.0.1:1/v1", model="u", max_tokens=8, extra_body={"top_k": 20}
    )
    user = LLMUser(config)
    client = SimpleNamespace(chat=SimpleNamespace(completions=Completions()))
    user._connection = lambda: (client, asyncio.Semaphore(1))  # type: ignore[method-assign]
    tools = [{"type": "function", "function": {"name": "f"}}]
    asyncio.run(user.complete([{"role": "user", "content": "x"}], tools, seed=3))
    assert set(sent) - {"extra_body"} <= set(REQUEST_FIELDS) and sent["extra_body"] == {"top_k": 20}


def test_a_user_server_answering_no_choice_is_the_users_error() -> None:
    """`choices[0]` of a reply with none raised IndexError ("list index out of range"): an episode
    crash naming nobody, attributed to the infrastructure. Now the user simulator's own error."""
    from types import SimpleNamespace

    from t3rl_core.envs.tau2.users import LLMUser, LLMUserConfig, NoUserReply
    from t3rl_core.eval.attribution import attribute
    from t3rl_core.rollout.failures import ENV_ERROR, describe

    class Completions:
        async def create(self, **request: Any) -> Any:
            return SimpleNamespace(choices=[], id="chatcmpl-1")

    user = LLMUser(LLMUserConfig(base_url="http://127.0.0.1:1/v1", model="u"))
    client = SimpleNamespace(chat=SimpleNamespace(completions=Completions()))
    user._connection = lambda: (client, asyncio.Semaphore(1))  # type: ignore[method-assign]
    with pytest.raises(NoUserReply, match="answered no choice") as raised:
        asyncio.run(user.complete([{"role": "user", "content": "x"}], []))
    record = {"status": "failed", "error": ENV_ERROR + describe(raised.value), "success": False}
    found = attribute(record | {"outcome": {}})
    assert found is not None and (found["party"], found["kind"]) == ("user_simulator", "own_error")


def test_offline_scoring_says_which_answers_were_not_graded(monkeypatch: pytest.MonkeyPatch) -> None:
    """`t3rl score` of ReTool answers counted an answer past its grading budget as unsolved, unsaid:
    its verdict now carries why (details.ungraded) and the summary counts them (not_graded)."""
    from pathlib import Path

    from launch.cli.score import _summary
    from t3rl_core.score.single_turn import retool as score_retool

    def out_of_budget(*_: Any) -> bool:
        raise retool._OutOfBudget

    monkeypatch.setattr(retool.ReToolOutcomeReward, "is_correct", out_of_budget)
    ungraded = score_retool(FORMATTED, "391", id="a").to_json()
    assert "past its budget" in ungraded["details"]["ungraded"] and not ungraded["success"]
    monkeypatch.undo()
    graded = score_retool(FORMATTED + " and more", "391", id="b").to_json()
    assert "ungraded" not in graded["details"]
    assert _summary("retool", Path("x.jsonl"), [ungraded, graded], 0.0)["not_graded"] == 1


@pytest.mark.parametrize("stop", [None, 3])
def test_a_stop_that_is_no_text_is_not_called_empty(stop: Any) -> None:
    """A stop of None or a number was refused as "an empty stop string", which it is not."""
    with pytest.raises(ValueError, match="a stop string is text") as refused:
        hooks.to_sampling({"stop": ["a", stop]})
    assert "empty" not in str(refused.value)
    with pytest.raises(ValueError, match="SGLang finds an empty stop string"):
        hooks.to_sampling({"stop": [""]})


def test_a_user_calls_arguments_written_as_an_object_are_read(telecom: Any) -> None:
    """The openai client does not validate a server's answer: arguments written as an object (not
    the API's JSON text) reached json.loads as a dict and raised TypeError out of the episode. Now the
    object is the call's arguments; another type (a list) is a call that is no call."""
    replies = _Replies([(None, [("check_status_bar", {})]), ("It shows no signal.", [])])  # type: ignore[list-item]
    env, opening = _opening(telecom, replies)
    assert opening.messages == [{"role": "user", "content": "It shows no signal."}]
    assert env.outcome()["user_call_errors"] == 0
    assert [m for m in env._trajectory if getattr(m, "tool_calls", None)]  # made in tau2
    odd = _Replies([(None, [("check_status_bar", [1])]), ("Fine.", [])])  # type: ignore[list-item]
    env, _ = _opening(telecom, odd)
    assert env.outcome()["user_call_errors"] == 1
    assert "a list, not JSON text" in odd.heard[1][-1]["content"]
