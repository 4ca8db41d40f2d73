"""Contracts declared by a base class's own methods: a subclass (a plugin's world, reward) overriding
one of them keeps whether it is awaited and the arguments it is called with. Checked when the subclass
is defined (`Env.__init_subclass__`, `Reward.__init_subclass__`), so a plugin breaking one is refused
when its module is imported (`t3rl validate`), and for a built object (a world's factory) by pre-flight;
before, each such plugin failed every episode in Python's words ("object Transition can't be used in
'await' expression", "takes 1 positional argument but 2 were given")."""

from __future__ import annotations

import inspect
from typing import Any


def override_problem(cls: type, name: str, method: Any, contract: type) -> str | None:
    """Why `cls.<name>` (`method`), overriding a method of `contract`, breaks it: t3rl awaits the
    contract's async methods and calls the others plainly, with the arguments the contract's own method
    takes; None when it keeps it, or `contract` declares no such method."""
    declared = contract.__dict__.get(name)
    if not inspect.isfunction(declared) or not inspect.isfunction(method):
        return None
    awaited = inspect.iscoroutinefunction(declared)
    shown = f"{cls.__name__}.{name}"
    wanted = f"{'async ' if awaited else ''}def {name}({', '.join(inspect.signature(declared).parameters)})"
    if awaited and inspect.isasyncgenfunction(method):
        return f"{shown} is an async generator (it yields): t3rl awaits one answer; write {wanted}"
    if awaited != inspect.iscoroutinefunction(inspect.unwrap(method)):
        how = "awaits it: make it async" if awaited else "calls it without awaiting: make it a plain def"
        return f"{shown} does not keep {contract.__name__}'s contract: t3rl {how} ({wanted})"
    given = len(inspect.signature(declared).parameters) - 1
    try:
        inspect.signature(method).bind(None, *range(given))
    except TypeError:
        return (
            f"{shown}{inspect.signature(method)} cannot be called as t3rl calls it, with {given} "
            f"argument(s) after self: write {wanted}"
        )
    return None


def unawaited(value: Any, called: str, wanted: str) -> str | None:
    """Why `value`, which `called` returned where t3rl takes `wanted` (a Transition, an Env, a
    RewardResult), is no such value but an awaitable: an `await` left out inside it, or an async
    function where t3rl calls without awaiting (what the definition check cannot see: a plain def
    returning an async helper's result). A coroutine is closed unrun, so Python's "never awaited"
    warning does not follow the error. None for any other value."""
    if not inspect.isawaitable(value):
        return None
    if inspect.iscoroutine(value):
        value.close()
    return (
        f"{called} returned a {type(value).__name__}, not {wanted}: an await is missing where it returns "
        f"an async call's result (return await ...), or it is async where t3rl does not await it (make "
        "it a plain def)"
    )
