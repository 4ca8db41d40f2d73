"""Environment augmentation on real BFCL tasks: one test per hint kind, switchable kinds, determinism
per seed, the per-episode count, and eval mode byte-identical with augmentation on."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.bfcl.env import BFCLEnv, BFCLTask
from t3rl_core.rewards.base import RewardInput
from t3rl_core.rewards.progress import ProgressReward, ProgressRewardConfig
from t3rl_core.types import AnswerAction, ToolCall, ToolCallAction

ON = {"enabled": True}


def env_of(row, mode: str = "train", **augmentation) -> BFCLEnv:
    env = BFCLEnv(BFCLTask.from_row(row), BFCLEnvConfig(augmentation=augmentation), mode)
    asyncio.run(env.reset())
    return env


def results(env: BFCLEnv, *calls: ToolCall) -> list[str]:
    transition = asyncio.run(env.step(ToolCallAction(calls=calls, text="")))
    return [m["content"] for m in transition.messages if m["role"] == "tool"]


def hint(text: str) -> str:
    assert "\n[hint] " in text, text
    return text.split("\n[hint] ", 1)[1]


def test_unknown_function_names_the_offered_functions(row_by_id):
    row = row_by_id["multi_turn_base_55"]
    (text,) = results(env_of(row, **ON), ToolCall("book_flight_now", {"to": "SFO"}))
    assert text.startswith("Error during execution: name 'book_flight_now' is not defined")
    offered = {tool["function"]["name"] for tool in row["metadata"]["tools"]}
    named = set(hint(text).split("Available: ")[1].rstrip(".").split(", "))
    assert named == offered


def test_unknown_function_never_reveals_a_held_out_function_early(row_by_id):
    row = row_by_id["multi_turn_miss_func_0"]
    held_out = {d["name"] for docs in row["metadata"]["bfcl_task"]["missed_function"].values() for d in docs}
    (text,) = results(env_of(row, **ON), ToolCall("no_such_function", {}))
    assert not held_out & set(hint(text).split("Available: ")[1].rstrip(".").split(", "))


def test_missing_parameter_names_it_with_its_type(row_by_id):
    (text,) = results(
        env_of(row_by_id["multi_turn_base_55"], **ON), ToolCall("ticket_login", {"username": "x"})
    )
    assert hint(text) == (
        "missing required parameter 'password' (str). Call it as ticket_login(username: str, password: str)."
    )


def test_wrong_type_shows_the_signature(row_by_id):
    env = env_of(row_by_id["multi_turn_base_55"], **ON)
    (text,) = results(env, ToolCall("fillFuelTank", {"fuelAmount": "ten"}))
    assert (
        hint(text)
        == "argument 'fuelAmount' must be float, got str 'ten'. Signature: fillFuelTank(fuelAmount: float)."
    )
    (extra,) = results(env, ToolCall("displayCarStatus", {"option": "fuel", "units": "l"}))
    assert "takes no argument 'units'" in hint(extra) and "displayCarStatus(option: str)" in hint(extra)


def test_missing_path_lists_the_current_directory(row_by_id):
    env = env_of(row_by_id["multi_turn_base_0"], **ON)
    cat, cd = results(env, ToolCall("cat", {"file_name": "nope.txt"}), ToolCall("cd", {"folder": "nowhere"}))
    assert "No such file or directory" in cat.split("\n")[0]
    assert (
        hint(cat)
        == hint(cd)
        == "that path does not exist here. The current directory 'workspace' holds: archive, document."
    )
    assert env.outcome()["hints"] == {
        "unknown_function": 0,
        "missing_parameter": 0,
        "wrong_type": 0,
        "missing_path": 2,
    }


def test_successful_calls_and_disabled_kinds_get_no_hint(row_by_id):
    env = env_of(row_by_id["multi_turn_base_55"], enabled=True, kinds=["missing_path"])
    plain, ok = results(
        env, ToolCall("ticket_login", {"username": "x"}), ToolCall("displayCarStatus", {"option": "fuel"})
    )
    assert "[hint]" not in plain and "[hint]" not in ok
    off = env_of(row_by_id["multi_turn_base_55"])
    assert "[hint]" not in results(off, ToolCall("ticket_login", {"username": "x"}))[0]
    assert off.outcome()["hints"] == {}


def _hinted(row, seed: int) -> list[bool]:
    env = env_of(row, enabled=True, probability=0.5, seed=seed)
    texts = results(env, *[ToolCall("ticket_login", {"username": f"u{i}"}) for i in range(24)])
    return ["[hint]" in text for text in texts]


def test_probability_is_deterministic_per_seed(row_by_id):
    row = row_by_id["multi_turn_base_55"]
    first = _hinted(row, seed=1)
    assert first == _hinted(row, seed=1)
    assert 0 < sum(first) < len(first)
    assert any(_hinted(row, seed=s) != first for s in (2, 3))


def test_hints_are_a_per_episode_metric(row_by_id):
    env = env_of(row_by_id["multi_turn_base_55"], **ON)
    results(env, ToolCall("ticket_login", {"username": "x"}), ToolCall("nope", {}))
    metrics = ProgressReward(ProgressRewardConfig())(RewardInput(outcome=env.outcome())).metrics
    assert metrics["hints"] == 2.0


@pytest.mark.parametrize("task_id", ["multi_turn_base_0", "multi_turn_base_55", "multi_turn_miss_param_10"])
def test_eval_mode_is_byte_identical_with_augmentation_on(row_by_id, task_id):
    """The same actions (failing calls, then the gold calls of every turn) in eval mode give the same
    observations and outcome whether augmentation is configured on or off."""

    def play(**augmentation) -> tuple[list, dict]:
        env = env_of(row_by_id[task_id], "eval", **augmentation)
        seen = []
        while not env.done:
            bad = (
                ToolCall("cat", {"file_name": "nope.txt"}),
                ToolCall("ticket_login", {}),
                ToolCall("zzz", {}),
            )
            seen.append(asyncio.run(env.step(ToolCallAction(calls=bad, text=""))).messages)
            action = env.oracle()
            while action is not None and not isinstance(action, AnswerAction):
                seen.append(asyncio.run(env.step(action)).messages)
                action = env.oracle()
            if action is not None:
                seen.append(asyncio.run(env.step(action)).messages)
        return seen, env.outcome()

    assert play(**ON) == play()


def test_validating_the_env_config_loads_none_of_the_env() -> None:
    """`t3rl plan`/`validate` read the augmentation settings without the worlds and runtime types."""
    probe = (
        "import sys\n"
        "from t3rl_core.envs.bfcl.config import BFCLEnvConfig\n"
        "BFCLEnvConfig.model_validate({'augmentation': {'enabled': True, 'kinds': ['wrong_type']}})\n"
        "print(sorted(m for m in ('t3rl_core.envs.bfcl.world', 't3rl_core.envs.bfcl.augment',"
        " 't3rl_core.types') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
