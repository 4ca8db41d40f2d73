"""Runtime hunt, wave seven, on the shipped worlds: state carried across episodes, and reference answers
that score an empty answer correct (docs/explanation/tito.md, "Hunted, wave seven")."""

from __future__ import annotations

import pytest

from t3rl_core.types import ToolCall

pytest.importorskip("bfcl_eval")


def test_a_long_context_bfcl_world_shares_no_state_with_the_next() -> None:
    """bfcl-eval's long-context TravelAPI merges its module-level cards and bookings into the world by
    reference: cancelling a booking refunded that module's card, so every later world of the process
    (another sample of the same prompt, the checker's gold replay) read the refunded balance. Now each
    world's state is its own copy."""
    from bfcl_eval.eval_checker.multi_turn_eval.func_source_code.long_context import (
        BOOKING_RECORD_EXTENSION,
    )

    from t3rl_core.envs.bfcl.world import World

    booking, record = next(iter(BOOKING_RECORD_EXTENSION.items()))
    first = World({}, ["TravelAPI"], long_context=True)
    token = first.instances["TravelAPI"].access_token
    balance = ToolCall("get_credit_card_balance", {"access_token": token, "card_id": record["card_id"]})
    before = first.execute(balance)

    assert first.execute(ToolCall("cancel_booking", {"access_token": token, "booking_id": booking}))
    assert first.execute(balance) != before  # the refund happened in this world

    assert World({}, ["TravelAPI"], long_context=True).execute(balance) == before


@pytest.mark.parametrize("label", ["", "  ", "\n"])
def test_a_retool_task_whose_reference_answer_is_empty_is_refused(label: str) -> None:
    """A ReTool row whose label is empty text: graded against it, an empty `\\boxed{}` (the cheapest output
    a policy finds) was correct (math-verify parses neither; the texts compare equal). Now the world
    refuses the row (its episode the world's failure, removed from training), naming the label."""
    from t3rl_core.envs.retool.config import ReToolEnvConfig
    from t3rl_core.envs.retool.env import ReToolEnv
    from t3rl_core.rewards.retool import equivalent

    assert equivalent("", label, None)  # why an empty label cannot stand
    with pytest.raises(ValueError, match=r"no reference answer: an empty \\boxed\{\}"):
        ReToolEnv({"label": label}, sandbox=None, config=ReToolEnvConfig())  # type: ignore[arg-type]


def test_a_retool_reference_answer_of_zero_is_an_answer() -> None:
    """The opposite: `0` (and `0.0`) are answers, kept."""
    from t3rl_core.envs.retool.config import ReToolEnvConfig
    from t3rl_core.envs.retool.env import ReToolEnv

    for label in (0, "0", 0.0):
        assert ReToolEnv({"label": label}, sandbox=None, config=ReToolEnvConfig()).ground_truth  # type: ignore[arg-type]
