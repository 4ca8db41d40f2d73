"""Per-turn checks with bfcl-eval's own sub-checkers; failures are named by bfcl-eval's error types."""

from __future__ import annotations

from collections.abc import Sequence

from t3rl_core.envs.bfcl.world import World

EMPTY_RESPONSE = "multi_turn:empty_turn_model_response"
FORCE_TERMINATED = "multi_turn:force_terminated"
# The error type of bfcl-eval's (unused) irrelevance checker; train mode's strict_irrelevance applies it.
IRRELEVANCE = "multi_turn:irrelevance_error:decoder_success"


def check_turn(
    model: World,
    ground_truth: World,
    model_results: Sequence[str],
    ground_truth_results: Sequence[str],
    turn_index: int,
) -> str | None:
    """The checks of a non-empty ground-truth turn, after its calls ran on both worlds.

    `model_results` are all the model's call results so far (every turn): a result obtained in an
    earlier turn need not be repeated. Returns None when the turn passes, else the error type.
    """
    # lazy: bfcl_eval, only when an episode is checked
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import response_checker, state_checker

    state = state_checker(model.instances, ground_truth.instances)
    if not state["valid"]:
        return state["error_type"]
    response = response_checker(list(model_results), list(ground_truth_results), turn_index)
    if not response["valid"]:
        return response["error_type"]
    return None
