"""Actionable environment augmentation (Environment Tuning, arXiv 2510.10197): in train mode, a failed
call's vague error gains a corrective hint, written by the environment from what it knows.

Kinds (each switchable):
- unknown_function: a call to a function the model was not offered → which functions exist (only the
  offered ones: a miss_func task's held-out function is named only once its turn has offered it);
- missing_parameter: a required parameter is absent → its name, expected type and the signature;
- wrong_type: an argument of the wrong type, or an argument the function does not take → the
  signature and what was wrong;
- missing_path: a file-system call names a file or folder that does not exist → what the current
  directory holds.

A hint is appended to the call's own result text (`<error>\n[hint] …`), so the turn structure and the
token accounting are those of the unaugmented episode. It is drawn with `probability` from a generator
seeded by (seed, task id): the same actions give the same hints. Eval mode never augments.

Limits: hints cover errors the environment can explain from the call and the API's signatures and
state; an API that fails with its own domain message (e.g. "brake pedal needs to be pressed") gets
none, and a wrong value of the right type (a wrong but existing path is a missing_path only when the
API reports it) is not detected.
"""

from __future__ import annotations

import inspect
import random
import typing
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from t3rl_core.envs.bfcl.augment_config import AugmentationConfig, HintKind
from t3rl_core.envs.bfcl.world import ERROR_PREFIX, World
from t3rl_core.types import ToolCall

_PATH_ERRORS = ("No such file or directory", "No such directory", "No such file")


@dataclass(frozen=True)
class Hint:
    kind: HintKind
    text: str


class Augmenter:
    """The hints of one episode (its own generator: deterministic per seed and task)."""

    def __init__(self, config: AugmentationConfig, task_id: str) -> None:
        self.config = config
        self._rng = random.Random(f"{config.seed}:{task_id}")
        self.counts: dict[str, int] = dict.fromkeys(config.kinds, 0)

    def augment(self, world: World, call: ToolCall, result: str, offered: Collection[str] | None) -> str:
        """`result`, with a hint appended when one applies and is drawn."""
        hint = explain(world, call, result, offered)
        if hint is None or hint.kind not in self.config.kinds:
            return result
        if self._rng.random() >= self.config.probability:
            return result
        self.counts[hint.kind] += 1
        return f"{result}\n[hint] {hint.text}"


def explain(world: World, call: ToolCall, result: str, offered: Collection[str] | None) -> Hint | None:
    """The corrective hint for a failed call, or None when the call did not fail or nothing explains it."""
    method = world.methods.get(call.name)
    known = sorted(name for name in world.methods if offered is None or name in offered)
    if method is None or (offered is not None and call.name not in offered):
        if not result.startswith(ERROR_PREFIX):
            return None
        return Hint(
            "unknown_function",
            f"'{call.name}' is not a function you can call. Available: {', '.join(known)}.",
        )
    signature = f"{call.name}{_signature(method)}"
    if result.startswith(ERROR_PREFIX):
        parameters = inspect.signature(method).parameters
        required = [
            p for p in parameters.values()
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]  # fmt: skip
        missing = [p.name for p in required if p.name not in call.arguments]
        if missing:
            types = _annotations(method)
            named = ", ".join(f"'{name}' ({_type_name(types.get(name))})" for name in missing)
            return Hint("missing_parameter", f"missing required parameter {named}. Call it as {signature}.")
        unexpected = [name for name in call.arguments if name not in parameters]
        if unexpected:
            return Hint(
                "wrong_type",
                f"{call.name} takes no argument {', '.join(map(repr, unexpected))}. Signature: {signature}.",
            )
        wrong = _wrong_types(method, call.arguments)
        if wrong:
            return Hint("wrong_type", f"{'; '.join(wrong)}. Signature: {signature}.")
    if any(marker in result for marker in _PATH_ERRORS):
        listing = _current_directory(world)
        if listing is not None:
            where, names = listing
            held = ", ".join(names) if names else "nothing"
            return Hint(
                "missing_path",
                f"that path does not exist here. The current directory '{where}' holds: {held}.",
            )
    return None


def _signature(method: Callable[..., Any]) -> str:
    return str(inspect.signature(method)).split(" -> ")[0]


def _annotations(method: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(method)
    except Exception:  # unresolvable forward references: no types rather than no hint
        return {}


def _type_name(annotation: Any) -> str:
    if annotation is None:
        return "any type"
    return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")


def _accepts(annotation: Any, value: Any) -> bool:
    """Whether `value` fits a simple annotation (unknown or complex annotations accept anything)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        return any(_accepts(arm, value) for arm in typing.get_args(annotation))
    if annotation is type(None):
        return value is None
    target = origin or annotation
    if target is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if target is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(target, type) and target in (str, bool, list, dict, tuple):
        return isinstance(value, target)
    return True


def _wrong_types(method: Callable[..., Any], arguments: Mapping[str, Any]) -> list[str]:
    types = _annotations(method)
    return [
        f"argument '{name}' must be {_type_name(types[name])}, got {type(value).__name__} {value!r}"
        for name, value in arguments.items()
        if name in types and not _accepts(types[name], value)
    ]


def _current_directory(world: World) -> tuple[str, list[str]] | None:
    """(name, contents) of the file system's current directory, if the world has a file system."""
    for instance in world.instances.values():
        current = getattr(instance, "_current_dir", None)
        if current is not None and hasattr(current, "_list_contents"):
            return str(getattr(current, "name", "")), sorted(current._list_contents())
    return None
