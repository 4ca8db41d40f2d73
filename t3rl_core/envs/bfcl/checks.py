"""Per-turn checks with bfcl-eval's own sub-checkers; failures are named by bfcl-eval's error types."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from t3rl_core.envs.bfcl.world import World
from t3rl_core.finite import MissingScore, shown, verdict_flag

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
    task_id: str = "",
) -> str | None:
    """The checks of a non-empty ground-truth turn, after its calls ran on both worlds.

    `model_results` are all the model's call results so far (every turn): a result obtained in an
    earlier turn need not be repeated. Returns None when the turn passes, else the error type.
    """
    # lazy: bfcl_eval, only when an episode is checked
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import response_checker, state_checker

    state = state_checker(model.instances, ground_truth.instances)
    where = f"task {task_id!r}, turn {turn_index}" if task_id else f"turn {turn_index}"
    failed = _verdict(state, "state_checker", where)
    if failed is not None:
        return failed
    response = response_checker(list(model_results), list(ground_truth_results), turn_index)
    return _verdict(response, "response_checker", where)


def _verdict(answer: Any, checker: str, where: str) -> str | None:
    """A checker's answer read strictly: None when `valid` is true, its error type (text) when false.
    Anything else is MissingScore naming the checker and turn: `not answer["valid"]` read a NaN as a
    pass and a None as a failure, and a failure without its error type passed the turn."""
    source = f"bfcl-eval's {checker} ({where})"
    if not isinstance(answer, Mapping):
        raise MissingScore(f"{source} answered {shown(answer)}, not its verdict mapping")
    if verdict_flag(answer, "valid", source):
        return None
    error = answer.get("error_type")
    if not isinstance(error, str) or not error:
        raise MissingScore(f"{source}: a failed check without its error type (got {shown(error)})")
    return error
