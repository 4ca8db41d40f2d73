"""Every plugin component the run will build is built once at pre-flight, so a constructor that raises
fails `t3rl validate` and `t3rl plan`, not a stage hours in.

Envs, rewards, sandboxes and user simulators are built with their config exactly as the stages build
them, then closed. Engines are left out: they are built with a chat format (a tokenizer loaded from the
model), which is no cheap probe; the eval stage's own start-up reports theirs.
"""

from __future__ import annotations

import inspect
import sys
import threading
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from pydantic import BaseModel

from launch.checks.context import Context
from launch.config.errors import Problem
from t3rl_core.plugins import UsedPlugin, registry_for, used_plugins
from t3rl_core.registry import NOT_A_DAEMON, import_effects, loaded_since, process_state

_BUILT_HERE = ("env", "reward", "sandbox", "user simulator")
# How long a thread a component's close asked to stop may take to end before it is named as left running.
_SETTLE_S = 1.0
# Seconds a plugin's construction, or its close, may take here: a constructor waiting on a server that is
# not up (a hub world's), a lock or input hung `t3rl validate` and `t3rl plan` for good, unbounded.
BUILD_TIMEOUT_S = 60.0


class _NoReturn(Exception):
    """A plugin's constructor or close that did not return within BUILD_TIMEOUT_S."""


def _bounded(call: Callable[[], Any], name: str) -> Any:
    """`call()` in a daemon thread, waited for BUILD_TIMEOUT_S: its result, or what it raised; _NoReturn
    past the bound (the thread is left to itself: nothing can stop it, and a daemon keeps no process
    from exiting)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as error:  # the plugin's own code: re-raised in the caller's thread
            outcome["error"] = error

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    thread.join(BUILD_TIMEOUT_S)
    if thread.is_alive():
        raise _NoReturn(f"did not return within {BUILD_TIMEOUT_S:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def plugins_construct(ctx: Context) -> Iterator[Problem]:
    """Each plugin env, reward, sandbox and user simulator constructs from its config; a plugin whose
    import or construction loads a heavy module (torch, …) is named, as it makes every plan and
    validate of its config pay for that import, and so is one whose import changes the process (its
    working directory, environment, threads, files: `registry.import_effects`)."""
    for used in used_plugins(ctx.run):
        config = _at(ctx.run, used.key)
        registry = registry_for(config) if isinstance(config, BaseModel) else None
        if registry is None:
            continue
        heavy = set(registry.entry(used.name).heavy)
        effects = registry.entry(used.name).effects
        if effects:
            yield _effects(used, effects)
        missing = registry.entry(used.name).missing
        if missing:
            yield _missing(used, missing)
        if used.kind in _BUILT_HERE:
            before, state = list(sys.modules), process_state()
            try:
                built = _bounded(partial(registry.build, config), f"t3rl pre-flight: build {used.name}")
                broken = _factory_problem(built) if used.kind == "env" else None
            except _NoReturn as stuck:
                import_effects(state)  # ends the watch: the thread still building it is not the finding
                yield _no_return(used, "building it from its config", stuck)
                continue
            except Exception as error:  # the plugin's own code: whatever it raises is the finding
                import_effects(state)  # ends the watch; what a failed build left is not the finding
                yield Problem(
                    f"{used.key}.name",
                    f"{used.kind} plugin {used.name}: building it from its config raised "
                    f"{type(error).__name__}: {error}",
                    fix=f"fix the constructor in {used.module} (every stage that uses it builds it the "
                    f"same way), or the {used.key} settings it rejects",
                )
            else:
                if used.kind == "env":
                    yield from _module_state_shared(used, built)
                if broken is not None:
                    yield Problem(
                        f"{used.key}.name",
                        f"env plugin {used.name}: {broken}",
                        fix=f"change that method in {used.module} (every episode calls it so)",
                    )
                # Closed apart from its build: a close that raised was told as its constructor's.
                try:
                    _bounded(partial(_close, built), f"t3rl pre-flight: close {used.name}")
                except _NoReturn as stuck:
                    import_effects(state)
                    yield _no_return(used, "closing it (as every stage does after its last episode)", stuck)
                    continue
                except Exception as error:  # the plugin's own code, as above
                    yield Problem(
                        f"{used.key}.name",
                        f"{used.kind} plugin {used.name}: closing it (as every stage does after its last "
                        f"episode) raised {type(error).__name__}: {error}",
                        fix=f"fix its aclose() in {used.module}",
                        severity="warning",
                    )
                left = import_effects(state, settle_s=_SETTLE_S)
                if left:
                    yield _left_behind(used, left)
            heavy |= loaded_since(before)
        if heavy:
            yield _heavy(used, sorted(heavy))


def _no_return(used: UsedPlugin, doing: str, stuck: _NoReturn) -> Problem:
    """A constructor or close that never returned: every stage building or closing it would hang."""
    return Problem(
        f"{used.key}.name",
        f"{used.kind} plugin {used.name}: {doing} {stuck} (waiting on a server that is not up, a lock or "
        "input?): every stage that uses it would hang there the same way",
        fix=f"in {used.module}, connect lazily (in reset or the first step, with a timeout) and bound what "
        "the constructor and aclose() wait for; or start the server it waits on first",
    )


def _module_state_shared(used: UsedPlugin, factory: Any) -> Iterator[Problem]:
    """Each world (Env subclass) of the factory's module whose methods change state every episode of the
    process shares: what its module holds (a global rebound, or changed in place through any alias:
    launch.checks.rules.module_state), or a mutable default of a method. Episodes run concurrently in
    one process, each on its own Env, so such state is one for all of them: an episode read another's.
    Declared on the class, `SHARED_STATE = ("N",)` (a ClassVar), the module's N is shared on purpose."""
    from launch.checks.rules.module_state import world_changes  # lazy: only for a plugin env
    from t3rl_core.envs.base import Env  # lazy: only for a plugin env, built here

    module = sys.modules.get(type(factory).__module__)
    names = vars(module) if module is not None else {}
    worlds = [
        v
        for v in names.values()
        if isinstance(v, type) and issubclass(v, Env) and v.__module__ == module.__name__
    ]
    for world in worlds:
        declared = tuple(getattr(world, "SHARED_STATE", ()) or ())
        told: set[str] = set()
        for change in world_changes(world):
            name = change.declared_as  # an item of TOOLS (TOOLS[…], TOOLS.get(…)) is declared as TOOLS
            if change.method in told or (not change.default and _declared(name, declared)):
                continue
            told.add(change.method)
            where = f"{world.__name__}.{change.method}"
            if change.unread:
                yield Problem(
                    f"{used.key}.name",
                    f"env plugin {used.name}: {where} runs code through {change.label}, which pre-flight "
                    "cannot read: what it changes of the module's state (one object for every episode of "
                    "the process, concurrent ones included) cannot be told",
                    fix=f"write that code in {where} itself (it is then read); or, if what it changes is "
                    f"shared on purpose, declare it on {world.__name__}: SHARED_STATE: ClassVar = "
                    f"('{name}',)",
                )
                continue
            through = f" (through {change.label})" if change.label != name else ""
            if change.default:
                yield Problem(
                    f"{used.key}.name",
                    f"env plugin {used.name}: {where} changes its own default {name}, made once when the "
                    "def ran: one object for every call, every episode's, concurrent ones included",
                    fix=f"default {name} to None and make a fresh one in the body ({name} = [] if {name} "
                    f"is None else {name}); or keep it on the Env (self.…, set in __init__)",
                )
                continue
            yield Problem(
                f"{used.key}.name",
                f"env plugin {used.name}: {where} changes the module's {name}{through} "
                f"({type(factory).__module__}), "
                "one object for every episode of the process, concurrent ones included: an episode reads "
                "another's",
                fix=f"keep per-episode state on the Env (self.…, set in __init__) and what episodes share on "
                f"purpose on the factory; or declare it on {world.__name__}: SHARED_STATE: ClassVar = "
                f"('{name}',) (guarded by a lock where it must be)",
            )


def _declared(name: str, declared: tuple[str, ...]) -> bool:
    """Whether SHARED_STATE declares `name` (`m.x`, `TOOLS`): itself, or what holds it (`m`)."""
    return any(name == d or name.startswith(f"{d}.") for d in declared)


def _factory_problem(factory: Any) -> str | None:
    from t3rl_core.envs.base import factory_problem  # lazy: only for a plugin env, built here

    return factory_problem(factory)


def _heavy(used: UsedPlugin, heavy: list[str]) -> Problem:
    names = ", ".join(heavy)
    return Problem(
        f"{used.key}.name",
        f"{used.kind} plugin {used.name}: importing or building it loaded {names}, which `t3rl plan` "
        "and `t3rl validate` never load otherwise: each of them pays that import (seconds of CPU)",
        fix=f"import {heavy[0]} inside the function that uses it in {used.module}, not at the top of a "
        "module its config or constructor imports",
        severity="warning",
    )


def _effects(used: UsedPlugin, effects: tuple[str, ...]) -> Problem:
    """A plugin whose module does work when imported: every process that imports it (validate, each
    stage, slime's rollout workers) does it again, before any of its code is called."""
    return Problem(
        f"{used.key}.name",
        f"{used.kind} plugin {used.name}: importing {used.module} {'; '.join(effects)}",
        fix=f"move that work out of the top of {used.module} into the function or constructor that needs "
        "it (what a run needs set belongs in the config or the stage's environment)",
        severity="warning",
    )


def _left_behind(used: UsedPlugin, left: tuple[str, ...]) -> Problem:
    """A component that, built and closed as each stage builds and closes it, left work in the process:
    a thread its close does not end runs on after the stage's last episode (one that is no daemon
    keeps the stage's process from exiting: the stage never ends), a directory or variable changed."""
    hangs = any(NOT_A_DAEMON in effect for effect in left)
    return Problem(
        f"{used.key}.name",
        f"{used.kind} plugin {used.name}: built and closed as each stage does, it left this process "
        f"changed: {'; '.join(left)}" + (": a stage using it would never exit" if hangs else ""),
        fix=f"in {used.module}, end what the component starts in its aclose() (stop and join its threads: "
        "what episodes share is the factory's, and released with it)",
        severity="error" if hangs else "warning",
    )


def _missing(used: UsedPlugin, missing: tuple[str, ...]) -> Problem:
    """A plugin whose distribution requires what is not installed here: it imports, and the code that
    needs it raises ImportError where it first runs (an episode, a stage hours in). A warning: the stage
    may run elsewhere (a Ray cluster) where it is installed."""
    quoted = " ".join(f"'{requirement}'" for requirement in missing)
    return Problem(
        f"{used.key}.name",
        f"{used.kind} plugin {used.name}: its distribution requires {', '.join(missing)}, which is not "
        "installed here: the plugin imports, and its code that needs it fails with an ImportError where "
        "it first runs (an episode)",
        fix=f"pip install {quoted} (in the environment of every stage that runs it)",
        severity="warning",
    )


def _at(node: Any, key: str) -> Any:
    for part in key.split("."):
        node = node[part] if isinstance(node, dict) else getattr(node, part, None)
    return node


def _close(component: Any) -> None:
    """Release what a probe build opened (a sandbox's processes, an env's worlds)."""
    closing = getattr(component, "aclose", None) or getattr(component, "close", None)
    if closing is None:
        return
    result = closing()
    if inspect.isawaitable(result):
        import asyncio  # lazy: asyncio, only when a plugin closes asynchronously

        asyncio.run(result)  # type: ignore[arg-type]


RULES = (plugins_construct,)
