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
