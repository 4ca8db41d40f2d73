"""World hunt, wave nine: ReTool's grading has three outcomes under a CPU budget, and tau2's scripted
user declares its own budget of calls (docs/explanation/tito.md, "Hunted, wave nine")."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import pytest

from t3rl_core.envs.bfcl.env import BFCLEnv
from t3rl_core.envs.bfcl.world import ERROR_PREFIX
from t3rl_core.envs.bounded_calls import CallKilled, CallWorkers, WorkerLost
from t3rl_core.envs.tau2.users import (
    LLMUser,
    LLMUserConfig,
    ScriptedUser,
    ScriptedUserConfig,
    UserTask,
    UserTurn,
    too_many_calls_reply,
)
from t3rl_core.eval.attribution import attribute
from t3rl_core.eval.runner import world_failed
from t3rl_core.hooks.slime import category_metrics
from t3rl_core.rewards import retool
from t3rl_core.rewards.base import RewardInput, RewardResult
from t3rl_core.types import ToolCall

ANSWER = RewardInput(outcome={"response": "<answer>\\boxed{391}</answer>", "ground_truth": "391"})


def _in_worker(fn: str, args: list[Any], budget_s: float) -> str | None:
    async def run() -> str | None:
        workers = CallWorkers(["tests.support.slow_calls"], size=1)
        try:
            return await workers.run(fn, args, budget_s)
        finally:
            workers.close()

    return asyncio.run(run())


def test_a_cpu_budget_is_not_spent_by_waiting() -> None:
    """A worker waiting (for a core on a loaded machine; here asleep) past its budget of wall time still
    answers: with a budget of CPU time the machine's load does not decide. Before: killed at 1 s."""
    assert _in_worker("tests.support.slow_calls:sleeping", [1.5], 1.0) == "slept"


def test_a_cpu_budget_stops_a_call_that_computes() -> None:
    assert _in_worker("tests.support.slow_calls:spinning", [60.0], 0.3) is None


def test_an_answer_not_graded_is_no_wrong_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The three outcomes: right, wrong, not graded. Not graded keeps the reference's value (0 with the
    format) but reports `graded` 0 and no `acc`, so the batch's accuracy is the graded episodes'."""
    reward = retool.ReToolOutcomeReward(retool.ReToolRewardConfig())
    answers = {"391": "1", "390": "0", "392": None}

    class Workers:
        async def run(self, fn: str, args: list[Any], budget_s: float) -> str | None:
            assert budget_s == 3 * reward.config.grading_timeout_s
            if args[0] == "393":
                raise WorkerLost("the call's worker process exited")
            return answers[args[0]]

    reward._workers = Workers()  # type: ignore[assignment]

    def scored(boxed: str) -> RewardResult:
        text = f"<answer>\\boxed{{{boxed}}}</answer>"
        return asyncio.run(reward.score_async(RewardInput(outcome={"response": text, "ground_truth": "391"})))

    right, wrong, ungraded = scored("391"), scored("390"), scored("392")
    assert right.metrics == {"score": 1.0, "format": 1.0, "graded": 1.0, "acc": 1.0}
    assert wrong.metrics == {"score": 0.0, "format": 1.0, "graded": 1.0, "acc": 0.0}
    assert (ungraded.value, ungraded.metrics) == (0.0, {"score": 0.0, "format": 1.0, "graded": 0.0})
    assert ungraded.ungraded is not None  # wave ten: declared no grade (slime's hook drops the sample)
    # A worker that died grading (out of memory on the model's expression) has not graded it either:
    # raised, the episode failed as the reward's and counted toward rollout.max_failure_rate.
    died = scored("393")
    assert (died.value, died.metrics) == (ungraded.value, ungraded.metrics) and died.ungraded
    samples = [
        SimpleNamespace(reward=r.value, metadata={"reward_metrics": r.metrics}, status="completed")
        for r in (right, ungraded)
    ]
    means = category_metrics(samples, "rollout")
    assert means["rollout/average/acc"] == 1.0 and means["rollout/average/graded"] == 0.5


def test_the_worker_grades_without_wall_timeouts(monkeypatch: pytest.MonkeyPatch) -> None:
    """math-verify's timeouts count wall time, and a parse they cut is compared as text: a right answer
    graded wrong under load. The worker grades without them (its CPU budget bounds it)."""
    seen: list[int | None] = []
    monkeypatch.setattr(retool, "equivalent", lambda p, g, timeout_s: seen.append(timeout_s) or p == g)
    assert retool.grade("391", "391") == "1" and seen == [None]


def test_a_grading_that_raised_is_not_graded(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*_: object) -> bool:
        raise RuntimeError("sympy blew up")

    monkeypatch.setattr(retool.ReToolOutcomeReward, "equivalent", explode)
    result = retool.ReToolOutcomeReward(retool.ReToolRewardConfig())(ANSWER)
    assert (result.value, result.metrics) == (-1.0, {"score": -1.0, "format": 1.0, "graded": 0.0})


def test_the_eval_attributes_an_ungraded_answer_to_the_infrastructure() -> None:
    record = {"success": False, "status": "completed", "reward": 0.0, "outcome": {}}
    ungraded = attribute(record | {"reward_metrics": {"score": 0.0, "format": 1.0, "graded": 0.0}})
    assert ungraded is not None and (ungraded["party"], ungraded["kind"]) == ("infrastructure", "not_graded")
    # A format the protocol could not read stays the agent's, whatever the grading did.
    unread = attribute(record | {"reward_metrics": {"score": -1.0, "format": 0.0, "graded": 0.0}})
    assert unread is not None and (unread["party"], unread["kind"]) == ("agent", "parse")


TASK = UserTask(
    system_prompt="",
    instructions={"reason_for_call": "My data is off."},
    tools=[{"type": "function", "function": {"name": "toggle_data", "parameters": {}}}],
)


async def _asked(calls: int, config: ScriptedUserConfig) -> Any:
    user = ScriptedUser(config).session(TASK)
    await user.reply("Hello, how can I help?")
    return await user.reply("Please run " + "toggle_data(on=True) " * calls)


def test_the_scripted_user_declares_its_calls_per_message() -> None:
    """Before: it made every call asked for (4,000 above, each one tau2's tool run, in one step)."""
    config = ScriptedUserConfig(max_calls_per_turn=3)
    made = asyncio.run(_asked(3, config))
    assert len(made.tool_calls) == 3
    refused = asyncio.run(_asked(4, config))
    assert refused.tool_calls == () and refused.text == too_many_calls_reply(4, 3)
    assert not refused.stops  # the agent reads why and the episode goes on
    assert len(asyncio.run(_asked(16, ScriptedUserConfig())).tool_calls) == 16


# ------------------------------------------------ a hub world's message content of another form


@pytest.fixture(scope="module")
def qwen() -> Any:
    from t3rl_core.chat.format import ChatFormat
    from t3rl_core.chat.tiny import shared_tokenizer_dir

    return ChatFormat.from_pretrained(shared_tokenizer_dir("qwen3"), "qwen3")


def _hub_result(qwen: Any, content: Any) -> Any:
    """An episode whose world answers the model's call with verifiers' tool message of `content`."""
    from t3rl_core.config import RolloutConfig
    from t3rl_core.envs.verifiers.convert import to_chat
    from t3rl_core.types import ToolCallAction, Transition
    from tests.rollout.fakes import ScriptedEngine, ToyEnv, play

    class HubWorld(ToyEnv):
        async def step(self, action: Any) -> Transition:
            if isinstance(action, ToolCallAction):
                message = {"role": "tool", "content": content, "tool_call_id": "c1"}
                return Transition(messages=[to_chat(message)])
            return await super().step(action)

    call = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
    return play(qwen, HubWorld(), ScriptedEngine(qwen, [call, "3"]), RolloutConfig())


def test_a_hub_worlds_content_is_read_once(qwen: Any) -> None:
    """verifiers' converter read contents its own way: a tool's dict result (or bytes, a number) failed
    the episode with Python's words ("'str' object has no attribute 'model_dump'"). Now the episode's one
    reading of a world's message decides, naming the type and the fix; text parts stay their text."""
    from verifiers.types import ImageUrlContentPart, TextContentPart

    for content, named in (({"sum": 3}, "dict"), (b"3", "bytes"), (3, "int")):
        episode = _hub_result(qwen, content)
        assert episode.failure is not None and episode.failure.error_type == "InvalidMessage", episode.error
        assert f"content is a {named}, not text" in episode.failure.message
    parts = [TextContentPart(type="text", text="3"), TextContentPart(type="text", text="!")]
    played = _hub_result(qwen, parts)
    assert (
        played.failure is None and {"role": "tool", "content": "3!", "tool_call_id": "c1"} in played.messages
    )
    image = _hub_result(qwen, [ImageUrlContentPart(type="image_url", image_url={"url": "http://x"})])
    assert (
        image.failure is not None
        and "content part 0 is of type 'image_url', not text" in image.failure.message
    )


def test_offline_grading_has_the_same_cpu_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """`t3rl score` grades on its main thread: math-verify's SIGALRM timeouts counted wall time there,
    and a parse they cut read as no parse, compared as text: a wrong grade. Now the grading runs under a
    budget of the process's CPU time whose end math-verify cannot read as an answer (its `except
    Exception` around each parse and comparison, mimicked here), and past it the answer is not graded."""

    def swallowing_spin() -> bool:
        try:
            end = time.process_time() + 60
            while time.process_time() < end:
                pass
        except Exception:
            return False  # math-verify's reading of any error: not equal
        return True

    with pytest.raises(retool._OutOfBudget):
        retool._within_cpu(0.2, swallowing_spin)

    def out_of_budget(*_: Any) -> bool:
        raise retool._OutOfBudget

    monkeypatch.setattr(retool.ReToolOutcomeReward, "is_correct", out_of_budget)
    result = retool.ReToolOutcomeReward(retool.ReToolRewardConfig())(ANSWER)
    assert (result.value, result.metrics) == (0.0, {"score": 0.0, "format": 1.0, "graded": 0.0})


# ------------------------------------------------------ the user's draws follow the episode's seed


class _SeedRecorder(LLMUser):
    """A model-played user whose completions record the seed each request is sent with."""

    def __init__(self) -> None:
        super().__init__(LLMUserConfig(base_url="http://127.0.0.1:1/v1", model="user"))
        self.seeds: list[int | None] = []

    async def complete(self, messages: Any, tools: Any, seed: int | None = None) -> UserTurn:
        self.seeds.append(seed)
        return UserTurn(text="My data is off.")


def _user_seeds(seed: int | None) -> list[int | None]:
    user = _SeedRecorder()
    session = user.session(TASK)
    session.seed = seed

    async def talk() -> None:
        await session.reply("Hello, how can I help?")
        await session.reply("Could you check your settings?")

    asyncio.run(talk())
    return user.seeds


def test_a_model_played_users_draws_follow_the_episodes_seed() -> None:
    """The same eval seed played other trajectories: the policy's sampling was seeded, the LLM user's
    (temperature 0.7) was not. Now each request carries a seed drawn from the episode's (one per reply);
    an unseeded episode sends none, as before."""
    first = _user_seeds(7)
    assert first == _user_seeds(7) and None not in first and len(set(first)) == 2
    assert first != _user_seeds(8)
    assert _user_seeds(None) == [None, None]


# ------------------------------------------------- a worker killed mid-call is the call's error


def test_a_worker_killed_mid_call_is_the_calls_error() -> None:
    """A worker the kernel kills mid-call (out of memory on the model's arguments) raised WorkerLost out
    of the world: the episode failed as the world's, counted toward rollout.max_failure_rate, so the
    model's arguments could stop a run. Now a worker killed by a signal is `CallKilled`, which BFCL and
    tau2 answer as the call's error (ReTool: not graded); a function that raised stays WorkerLost."""
    with pytest.raises(CallKilled, match="killed by SIGKILL"):
        _in_worker("tests.support.slow_calls:killed", [], 10.0)
    with pytest.raises(WorkerLost) as raised:
        _in_worker("tests.support.slow_calls:raising", [], 10.0)
    assert not isinstance(raised.value, CallKilled)

    class Killing:
        async def run(self, fn: str, args: list[Any], budget_s: float) -> str | None:
            raise CallKilled(9)

    world = SimpleNamespace(config=SimpleNamespace(PURE_CALL_BUDGET_S=10.0), _workers=Killing())
    model = SimpleNamespace(pure_call=lambda call: ("m:f", []))
    text = asyncio.run(BFCLEnv._execute(world, model, ToolCall("power", {"base": 10, "exponent": 10**9})))  # type: ignore[arg-type]
    assert (
        text.startswith(ERROR_PREFIX)
        and "power was stopped: its worker process was killed by SIGKILL" in text
    )


def test_the_eval_says_when_the_policy_never_played() -> None:
    """An eval whose prompts are all over rollout.max_context_len was complete with accuracy 0, every
    record the agent's wrong answer ("cut off by the episode's step or token budget"). Now a record cut
    before the policy's first call is infrastructure/unplayed with the episode's reason, so such an eval
    ends incomplete naming it (world_failed); a record cut after the model played stays the agent's."""
    no_room = "the prompt of 396 tokens leaves no response token under rollout.max_context_len=20 (…)"
    unplayed = {"success": False, "status": "truncated", "num_model_calls": 0, "error": no_room}
    found = attribute(unplayed)
    assert found is not None and (found["party"], found["kind"]) == ("infrastructure", "unplayed")
    records = [unplayed | {"attribution": found}] * 2
    assert no_room in str(world_failed(records, "bfcl_multi_turn"))
    played = attribute({"success": False, "status": "truncated", "num_model_calls": 3, "outcome": {}})
    assert played is not None and (played["party"], played["kind"]) == ("agent", "wrong")
