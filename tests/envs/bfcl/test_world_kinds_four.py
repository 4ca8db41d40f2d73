"""The BFCL world's executor against bfcl-eval's own on hostile calls: whatever a model passes (unknown
functions, unknown or missing arguments, values of the wrong type, unicode, results no text conversion
accepts), a call's result is the same text bfcl-eval's executor gives, and never an exception that would
end the episode as an infrastructure failure."""

from __future__ import annotations

import inspect
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.envs.bfcl.world import ERROR_PREFIX, World, render_call
from t3rl_core.types import ToolCall

_CLASSES = [
    "GorillaFileSystem", "MathAPI", "MessageAPI", "TwitterAPI", "TicketAPI", "TradingBot", "TravelAPI",
    "VehicleControlAPI",
]  # fmt: skip
_names = (f"t3rl_world_kinds_{i}" for i in itertools.count())
_METHODS = sorted(World({}, _CLASSES, False).methods.items())


def _official(calls: list[ToolCall]) -> list[str]:
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

    results, _ = execute_multi_turn_func_call(
        [render_call(call) for call in calls], {}, _CLASSES, next(_names), "entry"
    )
    return results


# Values a model may write where another type is expected. No "(" in texts: bfcl-eval rewrites
# `name(` inside string arguments (a documented difference, t3rl_core.envs.bfcl.world), and no NaN
# or infinity, which a call string cannot write.
_TEXT = st.text(st.characters(blacklist_characters="("), max_size=12)
_ATOM = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.floats(-1e6, 1e6), _TEXT,
    st.sampled_from(["", "é語🙂", "\ud800", "..", "/", "-1", "1e309"]),
)  # fmt: skip
_VALUE = st.recursive(
    _ATOM, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=2)
)


@st.composite
def _call(draw: st.DrawFn) -> ToolCall:
    name, method = draw(st.sampled_from([*_METHODS, ("no_such_function", None), ("run", None)]))
    known = list(inspect.signature(method).parameters) if method is not None else []
    keys = draw(st.lists(st.sampled_from([*known, "extra_argument"]), unique=True, max_size=4))
    return ToolCall(name, {key: draw(_VALUE) for key in keys})


@settings(max_examples=40, deadline=None)
@given(calls=st.lists(_call(), min_size=1, max_size=4))
def test_hostile_calls_give_bfcl_evals_results(calls: list[ToolCall]) -> None:
    world = World({}, _CLASSES, False)
    assert [world.execute(call) for call in calls] == _official(calls)


def test_a_result_no_text_conversion_accepts_is_the_calls_error() -> None:
    """10**5000 exceeds Python's digit limit of int → str: bfcl-eval reports the call's error; the world
    raised out of the env's step (the episode ended `failed`, removed from training as the
    infrastructure's fault, and counted toward the failure rate that stops the run)."""
    call = ToolCall("power", {"base": 10, "exponent": 5000})
    result = World({}, ["MathAPI"], False).execute(call)
    assert result.startswith(ERROR_PREFIX) and "4300" in result
    assert [result] == _official([call])
