"""One count, several limits: an RL episode's tokens are limited per model call
(`rollout_max_response_len`), after the prompt (`max_response_len`: model output and observations),
in all (`max_context_len`: the prompt too) and by the model's context. Each limit is declared below as
the one inside the next (`LIMITS`, innermost first), so each must act before the next: a limit at or
above an outer one never acts, since the outer one ends every call or episode first, and a value set
there does nothing. Pairs refused elsewhere, where the inner limit leaves no room for a prompt
(`values.lengths_consistent`, `lengths.calls_fit_the_context`), are not judged here again.

A response cap at or below one call's tokens is the likely mistake (an episode's budget typed for a
call's): the first long call ends the episode, however many calls its task needs.
"""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context, Scope, per_scope
from launch.config.errors import Problem
from t3rl_core.records import Record

CONTEXT = "model.context_length"


class Limit(Record):
    field: str
    # What it limits, completing "<field> limits …".
    what: str


# Innermost first; each limit is meant to act before every limit after it.
LIMITS = (
    Limit("rollout_max_response_len", "one model call's tokens"),
    Limit("max_response_len", "an episode's tokens after its prompt"),
    Limit("max_context_len", "an episode's tokens, prompt included"),
    Limit(CONTEXT, "every request's tokens, prompt included"),
)
# (inner, outer) pairs other rules refuse: the inner limit leaves no room for a prompt in the outer.
JUDGED_ELSEWHERE = frozenset(
    {("rollout_max_response_len", "max_context_len"), ("rollout_max_response_len", CONTEXT)}
    | {("max_context_len", CONTEXT)}
)


@per_scope
def each_limit_acts(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """A limit on an episode's tokens at or above one outside it never acts (a warning)."""
    cur = scope.curriculum
    if cur is None or cur.mode != "rl":
        return
    values = {limit.field: _value(limit.field, scope, ctx) for limit in LIMITS}
    set_ = [limit for limit in LIMITS if values[limit.field] is not None]
    for position, inner in enumerate(set_):
        outer = next((o for o in set_[position + 1 :]), None)
        if outer is None or (inner.field, outer.field) in JUDGED_ELSEWHERE:
            continue
        low, high = values[inner.field], values[outer.field]
        assert low is not None and high is not None
        if low < high:
            continue
        inner_key, outer_key = _key(inner.field, scope), _key(outer.field, scope)
        blamed = ctx.latest(inner_key, outer_key)
        yield Problem(
            blamed,
            f"{inner_key} {low} (limiting {inner.what}) is at or above {outer_key} {high} (limiting "
            f"{outer.what}), which acts first: {inner.field} does nothing"
            + (
                "; the first long call ends the episode, however many calls its task needs"
                if outer.field == "max_response_len"
                else ""
            ),
            fix=_fix(blamed, inner_key, outer_key, high),
            severity="warning",
        )


def _value(field: str, scope: Scope, ctx: Context) -> int | None:
    if field == CONTEXT:
        return ctx.run.model.context_length
    return getattr(scope.curriculum, field)


def _key(field: str, scope: Scope) -> str:
    return field if field == CONTEXT else scope.cur(field)


def _fix(blamed: str, inner_key: str, outer_key: str, high: int) -> str:
    """A per-call limit typed last goes back below the response cap; else the response cap (in every
    judged pair) is dropped, which leaves the other limits to act."""
    if blamed == inner_key and inner_key.endswith(".rollout_max_response_len"):
        return f"set {inner_key}={high // 2}"
    response = inner_key if inner_key.endswith(".max_response_len") else outer_key
    return f"set {response}=null"


RULES = (each_limit_acts,)
