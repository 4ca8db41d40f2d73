"""BFCLEnv basics: observations, step limits per mode, turn scoring rules, outcome, oracle, factory."""

from __future__ import annotations

import asyncio
import json

import pytest

from t3rl_core.envs.bfcl.checks import EMPTY_RESPONSE, FORCE_TERMINATED, IRRELEVANCE
from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.bfcl.env import BFCLEnv, BFCLTask
from t3rl_core.registries import ENVS
from t3rl_core.types import AnswerAction, InvalidAction, ToolCall, ToolCallAction

ANSWER = AnswerAction(text="ok")
STATE_MISMATCH = "multi_turn:instance_state_mismatch"


def make_env(row, mode="train", **overrides) -> BFCLEnv:
    env = BFCLEnv(BFCLTask.from_row(row), BFCLEnvConfig(**overrides), mode)
    asyncio.run(env.reset())
    return env


def step(env, action):
    return asyncio.run(env.step(action))


def calls(env, *call_strings) -> ToolCallAction:
    return ToolCallAction(calls=tuple(env.parse_call(c) for c in call_strings), text="")


def gold(env, turn) -> ToolCallAction:
    return calls(env, *env.task.ground_truth[turn])


def play_gold_turn(env, turn):
    step(env, gold(env, turn))
    return step(env, ANSWER)


def test_tool_results_and_failures_are_observations(row_by_id):
    env = make_env(row_by_id["multi_turn_base_55"])
    action = ToolCallAction(
        calls=(
            ToolCall("get_user_tickets", {}),  # raises KeyError inside TicketAPI on this scenario
            ToolCall("no_such_function", {"x": 1}),
            ToolCall("ticket_login", {"username": "x"}),  # missing argument → TypeError
            ToolCall("displayCarStatus", {"option": "fuel"}),
        ),
        text="",
    )
    transition = step(env, action)
    assert [m["role"] for m in transition.messages] == ["tool"] * 4
    assert [m["name"] for m in transition.messages] == [c.name for c in action.calls]
    contents = [m["content"] for m in transition.messages]
    assert contents[0] == "Error during execution: 'created_by'"
    assert contents[1] == "Error during execution: name 'no_such_function' is not defined"
    assert contents[2].startswith("Error during execution:") and "password" in contents[2]
    assert json.loads(contents[3]) == {"fuelLevel": 7.5}  # dict results are JSON text
    assert not transition.done
    outcome = env.outcome()
    assert (outcome["tool_calls"], outcome["tool_call_errors"], outcome["interactions"]) == (4, 3, 1)


def test_invalid_action_is_fed_back_as_a_user_message_in_train(row_by_id):
    env = make_env(row_by_id["multi_turn_base_0"])
    transition = step(env, InvalidAction(error="bad tool call JSON", text="<tool_call>{"))
    assert transition.messages == [{"role": "user", "content": "bad tool call JSON"}]
    assert env.turn == 0 and env.outcome()["format_errors"] == 1


def test_train_step_limit_forces_the_turn_on_and_the_episode_continues(row_by_id):
    env = make_env(row_by_id["multi_turn_base_0"], max_step_limit=2)
    step(env, calls(env, "pwd()"))
    step(env, InvalidAction(error="bad", text=""))  # format errors count as attempts
    forced = step(env, calls(env, "pwd()"))
    assert [m["role"] for m in forced.messages] == ["tool", "user"]
    assert forced.messages[1]["content"] == env.task.follow_ups[0]
    assert forced.info["turn_error"] == FORCE_TERMINATED and not forced.done
    # Turn 1 redoes turn 0's gold calls too: the ground-truth world ran turn 0 although it failed.
    step(env, calls(env, *env.task.ground_truth[0], *env.task.ground_truth[1]))
    step(env, ANSWER)
    play_gold_turn(env, 2)
    last = play_gold_turn(env, 3)
    assert last.done and not last.truncated
    outcome = env.outcome()
    assert outcome["turn_scores"] == [0.0, 1.0, 1.0, 1.0]
    assert (outcome["progress"], outcome["accuracy"], outcome["failure"]) == (0.75, 0.0, FORCE_TERMINATED)
    assert not outcome["force_terminated"]


def test_a_failed_turn_without_its_gold_calls_leaves_the_model_world_behind(row_by_id):
    env = make_env(row_by_id["multi_turn_base_0"])
    assert step(env, ANSWER).info["turn_error"] == EMPTY_RESPONSE
    play_gold_turn(env, 1)
    assert env.outcome()["turn_scores"][:2] == [0.0, 0.0]


def test_eval_step_limit_force_terminates_the_entry(row_by_id):
    env = make_env(row_by_id["multi_turn_base_0"], mode="eval", eval_max_step_limit=2)
    step(env, gold(env, 0))
    step(env, calls(env, "pwd()"))
    last = step(env, calls(env, "pwd()"))
    assert last.done and last.truncated and last.messages[0]["role"] == "tool"
    outcome = env.outcome()
    assert outcome["force_terminated"] and outcome["accuracy"] == 0.0
    assert outcome["failure"] == FORCE_TERMINATED
    assert outcome["turn_scores"] == [0.0, 0.0, 0.0, 0.0] and outcome["turns_completed"] == 1
    with pytest.raises(RuntimeError):
        step(env, ANSWER)


def test_eval_force_quit_on_the_last_turn_is_checked_like_the_official_runner(row_by_id):
    env = make_env(row_by_id["multi_turn_base_0"], mode="eval", eval_max_step_limit=2)
    for turn in range(3):
        play_gold_turn(env, turn)
    step(env, gold(env, 3))
    step(env, calls(env, "pwd()"))
    assert step(env, calls(env, "pwd()")).done  # read-only extra steps: the state still matches
    outcome = env.outcome()
    assert outcome["force_terminated"] and outcome["accuracy"] == 1.0 and outcome["failure"] is None


def test_eval_unparsable_output_ends_the_turn_unless_configured_otherwise(row_by_id):
    env = make_env(row_by_id["multi_turn_base_0"], mode="eval")
    transition = step(env, InvalidAction(error="bad", text=""))
    assert transition.messages == [{"role": "user", "content": env.task.follow_ups[0]}]
    assert transition.info["turn_error"] == EMPTY_RESPONSE
    env = make_env(row_by_id["multi_turn_base_0"], mode="eval", eval_invalid_action_ends_turn=False)
    assert step(env, InvalidAction(error="bad", text="")).messages == [{"role": "user", "content": "bad"}]
    assert env.turn == 0


def _empty_turn(row) -> int:
    return row["metadata"]["bfcl_task"]["ground_truth"].index([])


@pytest.mark.parametrize(
    ("strict", "extra_call", "score", "error", "total"),
    [
        (True, False, 1.0, None, 5),
        (True, True, 0.0, IRRELEVANCE, 5),
        (False, True, None, None, 4),
    ],
)
def test_train_empty_ground_truth_turn(row_by_id, strict, extra_call, score, error, total):
    row = row_by_id["multi_turn_miss_param_0"]
    empty = _empty_turn(row)
    env = make_env(row, strict_irrelevance=strict)
    for turn in range(empty):
        play_gold_turn(env, turn)
    if extra_call:
        step(env, calls(env, "pwd()"))
    step(env, ANSWER)
    play_gold_turn(env, empty + 1)
    outcome = env.outcome()
    assert outcome["turn_scores"][empty] == score and outcome["turn_errors"][empty] == error
    assert outcome["turns_total"] == total
    assert outcome["accuracy"] == float(error is None)


def test_eval_skips_empty_turns_but_their_calls_change_the_model_world(row_by_id):
    row = row_by_id["multi_turn_miss_func_0"]
    empty = _empty_turn(row)
    for extra, accuracy in (("pwd()", 1.0), ("mkdir(dir_name='extra')", 0.0)):
        env = make_env(row, mode="eval")
        for turn in range(empty):
            play_gold_turn(env, turn)
        step(env, calls(env, extra))
        step(env, ANSWER)
        for turn in range(empty + 1, len(env.task.ground_truth)):
            play_gold_turn(env, turn)
        outcome = env.outcome()
        assert outcome["turn_scores"][empty] is None and outcome["turns_total"] == 4
        assert outcome["accuracy"] == accuracy
        assert outcome["failure"] == (None if accuracy else STATE_MISMATCH)


def test_unreached_turns_count_as_zero(row_by_id):
    env = make_env(row_by_id["multi_turn_base_0"])
    play_gold_turn(env, 0)
    play_gold_turn(env, 1)
    outcome = env.outcome()
    assert outcome["turn_scores"] == [1.0, 1.0, 0.0, 0.0]
    assert (outcome["turns_correct"], outcome["turns_total"], outcome["turns_completed"]) == (2, 4, 2)
    assert (outcome["progress"], outcome["accuracy"], outcome["failure"]) == (0.5, 0.0, FORCE_TERMINATED)


def test_oracle_names_positional_arguments_and_answers_after_the_calls(row_by_id):
    env = make_env(row_by_id["multi_turn_miss_param_0"])
    play_gold_turn(env, 0)
    play_gold_turn(env, 1)
    action = env.oracle()
    assert action.calls == (ToolCall("sort", {"file_name": "final_report.pdf"}),)
    step(env, action)
    assert isinstance(env.oracle(), AnswerAction)
    step(env, env.oracle())
    assert "missing" in env.oracle().text  # the empty-ground-truth turn: ask


def test_positional_values_are_named_as_the_bound_methods_signature_names_them(bfcl_rows):
    # Every API method of every class the rows involve: the names a call's positional values take are
    # those inspect.signature gives the bound method (its first parameter bound, *args not named).
    import inspect

    from t3rl_core.envs.bfcl.world import World, _positional_names

    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    classes = sorted({name for row in bfcl_rows for name in BFCLTask.from_row(row).involved_classes})
    world = World({}, classes, long_context=False)
    assert len(world.methods) > 100
    for method in world.methods.values():
        named = tuple(p.name for p in inspect.signature(method).parameters.values() if p.kind in kinds)
        assert _positional_names(method.__func__) == named


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_following_the_oracle_solves_all_800_entries(bfcl_rows, mode):
    async def solve(row):
        env = BFCLEnv(BFCLTask.from_row(row), BFCLEnvConfig(), mode)
        assert env.oracle() is None  # nothing to offer before reset
        await env.reset()
        while (action := env.oracle()) is not None:
            await env.step(action)
        return env.outcome()

    async def solve_all():
        return [await solve(row) for row in bfcl_rows]

    outcomes = asyncio.run(solve_all())
    assert all(o["accuracy"] == 1.0 and o["progress"] == 1.0 for o in outcomes)
    assert sum(o["tool_call_errors"] for o in outcomes) == 0


def test_long_context_entries_load_the_long_context_scenario(row_by_id):
    listings = {}
    for category in ("base", "long_context"):
        env = make_env(row_by_id[f"multi_turn_{category}_0"])
        step(env, calls(env, "cd(folder='archive')"))
        listings[category] = json.loads(step(env, calls(env, "ls()")).messages[0]["content"])
    assert listings["base"]["current_directory_content"] == []
    assert len(listings["long_context"]["current_directory_content"]) > 10


def test_factory_from_the_registry(row_by_id):
    factory = ENVS.build(BFCLEnvConfig())
    env = factory(row_by_id["multi_turn_base_0"], "eval")
    assert isinstance(env, BFCLEnv) and env.mode == "eval"
    with pytest.raises(RuntimeError, match="reset"):
        asyncio.run(env.step(ANSWER))
    with pytest.raises(ValueError, match="mode"):
        factory(row_by_id["multi_turn_base_0"], "test")
    with pytest.raises(ValueError, match="bfcl_task"):
        factory({"prompt": [], "metadata": {}}, "train")
    asyncio.run(factory.aclose())


def test_world_finds_the_methods_getmembers_finds() -> None:
    """Every bfcl-eval API class: the world's method table equals inspect.getmembers' public methods."""
    import importlib
    import inspect

    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

    from t3rl_core.envs.bfcl.world import _public_methods

    checked = 0
    for class_name, module in CLASS_FILE_PATH_MAPPING.items():
        try:
            instance = getattr(importlib.import_module(module), class_name)()
        except ImportError:  # web search needs extras the multi-turn categories never use
            continue
        checked += 1
        instance.shadowing = instance.__repr__  # an instance attribute holding a bound method
        expected = {
            name: method
            for name, method in inspect.getmembers(instance, inspect.ismethod)
            if not name.startswith("_")
        }
        assert _public_methods(instance) == expected, class_name
    assert checked >= 8


def test_parsed_calls_never_share_values_with_later_parses(row_by_id):
    """Call strings are parsed once per process; each parse still hands out values of its own."""
    env = make_env(row_by_id["multi_turn_base_0"])
    call_string = "mv(source='a.txt', destination={'dir': ['x', 'y']})"
    first = env.parse_call(call_string)
    first.arguments["destination"]["dir"].append("changed")
    first.arguments["source"] = "b.txt"
    assert env.parse_call(call_string).arguments == {"source": "a.txt", "destination": {"dir": ["x", "y"]}}
    assert env.parse_call("sort('final_report.pdf')").arguments == {"file_name": "final_report.pdf"}
    with pytest.raises(ValueError, match="plain function call"):
        env.parse_call("a.b()")


def test_worlds_copy_the_scenario_and_the_arguments(row_by_id):
    """A world's API calls change neither the row's initial config nor the caller's arguments."""
    import copy

    from t3rl_core.envs.bfcl.world import World, _fresh

    row = row_by_id["multi_turn_base_0"]
    config = row["metadata"]["bfcl_task"]["initial_config"]
    before = copy.deepcopy(config)
    env = make_env(row)
    step(env, calls(env, "cd(folder='document')", "mkdir(dir_name='new_dir')", "touch(file_name='a.txt')"))
    assert config == before
    world = World(config, row["metadata"]["bfcl_task"]["involved_classes"], False)
    call = ToolCall("echo", {"content": "hi", "file_name": "b.txt"})
    world.execute(call)
    assert call.arguments == {"content": "hi", "file_name": "b.txt"}
    odd = {"when": {1, 2}, "items": [[1], {"k": "v"}]}
    copied = _fresh(odd)
    assert copied == odd and copied["when"] is not odd["when"] and copied["items"][0] is not odd["items"][0]


def test_worlds_are_built_on_first_use_after_reset(row_by_id, monkeypatch):
    """reset() builds no world (an episode's first model call need not wait for them); the model world
    comes with the first call parsed or stepped, the ground truth's with the first turn scored, and
    both equal the worlds a reset used to build."""
    from t3rl_core.envs.bfcl import env as env_module

    built: list[int] = []
    world_class = env_module.World

    def counted(*args, **kwargs):
        built.append(1)
        return world_class(*args, **kwargs)

    monkeypatch.setattr(env_module, "World", counted)
    env = make_env(row_by_id["multi_turn_base_0"], mode="eval")
    assert built == [] and env.oracle() is not None and len(built) == 1  # the oracle parses with it
    step(env, gold(env, 0))
    assert len(built) == 1
    step(env, ANSWER)  # the turn is scored on the ground truth's world
    assert len(built) == 2 and env.outcome()["turn_scores"][0] == 1.0
    fresh = BFCLEnv(BFCLTask.from_row(row_by_id["multi_turn_base_0"]), BFCLEnvConfig(), "eval")
    with pytest.raises(RuntimeError, match=r"parse_call\(\) before reset"):
        fresh.parse_call("ls()")
    assert fresh.oracle() is None and built == [1, 1]
