"""One BFCL world: bfcl-eval's API class instances of an entry and a safe executor over their methods.

bfcl-eval's own engine rewrites call strings and `eval`s them; here a call is resolved by name in a
registry of the instances' public methods and invoked with its keyword arguments, so no model text is
ever evaluated. Results are converted to text exactly as bfcl-eval does, so the checkers compare the
same strings. One deliberate difference: bfcl-eval's regex also rewrites `name(` inside string
arguments when `name` is an API method (so a message text "try ls(" reaches the API altered); here
arguments reach the API exactly as the model wrote them.
"""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from functools import cache, lru_cache
from operator import is_
from types import FunctionType, MethodType
from typing import Any

from t3rl_core.parsers.nesting import result_nesting_problem
from t3rl_core.types import ToolCall

ERROR_PREFIX = "Error during execution: "
# Names bfcl-eval's executor refuses to run whatever class defines them.
_REFUSED_NAMES = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})


def is_long_context(task_id: str) -> bool:
    """bfcl-eval loads the long-context variant of the scenario for these categories."""
    return "long_context" in task_id or "composite" in task_id


class World:
    """Fresh instances of the entry's classes, loaded with its initial configuration."""

    def __init__(
        self, initial_config: Mapping[str, Any], involved_classes: Sequence[str], long_context: bool
    ) -> None:
        # lazy: bfcl_eval, only when a world is built
        from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING, STATELESS_CLASSES

        self.instances: dict[str, Any] = {}
        self.methods: dict[str, Callable[..., Any]] = {}
        # Method name → its class, when that class keeps no state (its calls may run anywhere).
        self.stateless: dict[str, str] = {}
        for class_name in involved_classes:
            cls = getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name]), class_name)
            instance = cls()
            if class_name not in STATELESS_CLASSES:
                scenario = _fresh(initial_config.get(class_name, {}))
                instance._load_scenario(scenario, long_context=long_context)
                if long_context:
                    # A world's state is its own: bfcl-eval's long-context loads merge its module-level
                    # extensions by reference (TravelAPI's CREDIT_CARD_EXTENSION cards), so a booking or
                    # a cancellation changed that module's card, and every later world of the process
                    # (another sample of the prompt, the checker's gold replay) started from its
                    # balance. The other loads copy their defaults themselves (tests/envs/
                    # test_world_hunt_wave7.py walks both); copying those too cost ~0.4 ms a world.
                    vars(instance).update(copy.deepcopy(vars(instance)))
            self.instances[class_name] = instance
            # A later class wins a shared method name, as in bfcl-eval's name → instance mapping.
            methods = _public_methods(instance)
            self.methods.update(methods)
            for name in methods:
                if class_name in STATELESS_CLASSES:
                    self.stateless[name] = class_name
                else:
                    self.stateless.pop(name, None)

    def execute(self, call: ToolCall) -> str:
        """Run one call; every failure becomes an "Error during execution: …" text, never an exception."""
        if call.name in _REFUSED_NAMES:
            return f"{ERROR_PREFIX}Function call {call.name} is not allowed."
        method = self.methods.get(call.name)
        if method is None:
            return f"{ERROR_PREFIX}name '{call.name}' is not defined"
        return _call_text(method, call.arguments)

    def pure_call(self, call: ToolCall) -> tuple[str, list[Any]] | None:
        """`call` as a call of `run_stateless` (function path, arguments) when it is a stateless class's
        method with JSON arguments (what a worker process receives unchanged); None otherwise."""
        class_name = self.stateless.get(call.name)
        if class_name is None or call.name in _REFUSED_NAMES:
            return None
        try:
            if json.loads(json.dumps(call.arguments)) != call.arguments:
                return None
        except (TypeError, ValueError):
            return None
        return f"{__name__}:run_stateless", [class_name, call.name, call.arguments]

    def execute_all(self, calls: Sequence[ToolCall]) -> list[str]:
        return [self.execute(call) for call in calls]

    def parse(self, call_string: str) -> ToolCall:
        """A bfcl call string such as `sort('a.txt')` or `cd(folder='x')` → ToolCall with named arguments."""
        name, args, kwargs = _read_call(call_string)
        kwargs = _fresh(kwargs)
        if args:
            kwargs = {**self._name_positional(name, _fresh(list(args)), call_string), **kwargs}
        return ToolCall(name=name, arguments=kwargs)

    def _name_positional(self, name: str, args: list[Any], call_string: str) -> dict[str, Any]:
        """Positional values under their parameter names; other argument errors surface when executed."""
        method = self.methods.get(name)
        if method is None:
            raise ValueError(f"positional arguments of an unknown function: {call_string!r}")
        names = _positional_names(method.__func__)  # a bound method: its first parameter is bound
        if len(args) > len(names):
            raise ValueError(f"too many positional arguments for {name}: {call_string!r}")
        return dict(zip(names, args, strict=False))


@cache
def _positional_names(function: Callable[..., Any]) -> tuple[str, ...]:
    """The names a bound method of `function` takes positionally (its first parameter is the bound one):
    `inspect.signature` once per API method, not at each gold call with positional values (~170 an
    eval of the 300 test tasks, on the event loop)."""
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return tuple(p.name for p in inspect.signature(function).parameters.values() if p.kind in kinds)[1:]


@lru_cache(maxsize=4096)
def _read_call(call_string: str) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    """(name, positional values, keyword values) of a call string; cached, since every episode parses
    its task's gold calls again (callers take `_fresh` copies of the values)."""
    node = ast.parse(call_string.strip(), mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a plain function call: {call_string!r}")
    args = tuple(ast.literal_eval(arg) for arg in node.args)
    kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg is not None}
    if len(kwargs) != len(node.keywords):
        raise ValueError(f"**kwargs are not supported: {call_string!r}")
    return node.func.id, args, kwargs


_ATOMS = frozenset({str, int, float, bool, type(None)})


def _fresh(value: Any) -> Any:
    """A deep copy of JSON-like data (a scenario, call arguments, a parsed call's values), ~3x faster
    than `copy.deepcopy` on it; anything else is handed to `copy.deepcopy`."""
    kind = type(value)
    if kind is dict:
        return {key: _fresh(item) for key, item in value.items()}
    if kind is list:
        return [_fresh(item) for item in value]
    if kind in _ATOMS:
        return value
    return copy.deepcopy(value)


@cache
def _method_names(cls: type) -> tuple[str, ...]:
    """Public names whose class attribute binds to a method on an instance (functions, classmethods)."""
    return tuple(
        name
        for name, value in inspect.getmembers_static(cls)
        if not name.startswith("_") and isinstance(value, FunctionType | classmethod)
    )


def _public_methods(instance: Any) -> dict[str, Callable[..., Any]]:
    """The instance's public bound methods, as `inspect.getmembers(instance, inspect.ismethod)` finds
    them, without reading every attribute (getmembers evaluates each property and sorts them all: it
    was most of an episode's env construction)."""
    own = vars(instance) if hasattr(instance, "__dict__") else {}
    # `type(…) is MethodType` is inspect.ismethod (a bound method's type has no subclasses), inline.
    methods = {}
    for name in _method_names(type(instance)):  # sorted by name (getmembers_static sorts them)
        value = getattr(instance, name, None)
        if type(value) is MethodType:
            methods[name] = value
    # An instance attribute holding a bound method is one too (rare: then the table is sorted again).
    bound = [
        (name, value)
        for name in own
        if not name.startswith("_") and type(value := getattr(instance, name, None)) is MethodType
    ]
    if not bound:
        return methods
    methods.update(bound)
    return dict(sorted(methods.items()))


def _call_text(method: Callable[..., Any], arguments: Mapping[str, Any]) -> str:
    try:
        # The API classes may keep or mutate argument objects; the caller's action stays intact.
        # The text conversion is inside too, as in bfcl-eval: a result str() refuses (an integer of
        # more than 4300 digits from power(10, 5000)) is the call's error, not the episode's.
        return result_text(method(**_fresh(arguments)))
    except Exception as exc:
        return f"{ERROR_PREFIX}{exc}"


def run_stateless(class_name: str, method: str, arguments: Mapping[str, Any]) -> str:
    """A stateless class's call as `World.execute` runs it, in a tool-call worker process."""
    return _call_text(getattr(_stateless_instance(class_name), method), arguments)


@cache
def _stateless_instance(class_name: str) -> Any:
    # lazy: bfcl_eval, only in a tool-call worker
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

    return getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name]), class_name)()


def stateless_modules() -> list[str]:
    """This module and those of bfcl-eval's stateless classes: what a tool-call worker preloads."""
    # lazy: bfcl_eval, only when an episode's worker starts
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING, STATELESS_CLASSES

    return [__name__, *(CLASS_FILE_PATH_MAPPING[name] for name in STATELESS_CLASSES)]


def result_text(result: Any) -> str:
    """bfcl-eval's conversion: str as is, dict as JSON (str() if not serialisable), anything else str().
    A result nested past t3rl's limit raises ValueError with the limit named (the call's error, which the
    model reads): json and str() stopped at Python's recursion limit and the model read its message."""
    if type(result) is str:
        return result
    problem = result_nesting_problem(result)
    if problem is not None:
        raise ValueError(problem)
    if type(result) is dict:
        text = _with_kept_lists(result)
        if text is not None:
            return text
        try:
            return json.dumps(result)
        except Exception:
            return str(result)
    return str(result)


# A list of at least this many atoms in a dict result has its JSON text kept: bfcl-eval's long-context
# results hand out the same module-level listings call after call (get_stock_info's two lists of 2,000
# floats: ~2.7 ms of float formatting per call, twice a turn with the gold world's replay).
KEPT_LIST_MIN = 256
_KEPT_LISTS_MAX = 64
# (length, id of the first item, id of the last) → (the items, their JSON text). The items are held,
# so their ids stay theirs; a list matches only when it holds these very objects, in this order.
_kept_lists: dict[tuple[int, int, int], tuple[tuple[Any, ...], str]] = {}


def _with_kept_lists(result: dict[Any, Any]) -> str | None:
    """`json.dumps(result)` with each long list of atoms written from kept text; None when `result`
    has no such list or a key that is not exactly a str (then `json.dumps` itself decides)."""
    if not any(type(value) is list and len(value) >= KEPT_LIST_MIN for value in result.values()):
        return None
    if not all(type(key) is str for key in result):
        return None
    # json.dumps's default separators and escaping, member by member.
    members = [f"{json.dumps(key)}: {_value_text(value)}" for key, value in result.items()]
    return "{" + ", ".join(members) + "}"


def _value_text(value: Any) -> str:
    if type(value) is not list or len(value) < KEPT_LIST_MIN:
        return json.dumps(value)
    key = (len(value), id(value[0]), id(value[-1]))
    kept = _kept_lists.get(key)
    if kept is not None and all(map(is_, value, kept[0])):
        return kept[1]
    text = json.dumps(value)
    # Only atoms: the same objects then give the same text (a container could have changed inside).
    if all(type(item) in _ATOMS for item in value):
        if len(_kept_lists) >= _KEPT_LISTS_MAX:
            _kept_lists.clear()
        _kept_lists[key] = (tuple(value), text)
    return text


def render_call(call: ToolCall) -> str:
    """The call string bfcl-eval's function-calling decoder produces: `name(k=repr(v),…)`."""
    return f"{call.name}({','.join(f'{key}={value!r}' for key, value in call.arguments.items())})"
