"""Hostile tool calls derived from a world's own tool declarations (OpenAI function schemas), and the
checks every world's answer to them must pass (tests/envs/test_tool_call_hunt.py).

Every case is built from the schema the model is given, so a tool or a parameter a world adds is hunted
without an edit here: a call missing each required argument, with an unknown extra argument, and with
each argument replaced by a value of every other JSON type, an empty or 10,000-character text, the
numbers JSON cannot write (NaN, infinities) and the extreme ones it can (1e308, -0.0), a bool where a
number goes, an array nested as deep as the action parser lets through (deeper, 200 levels, is the
parser's refusal, tests/envs/test_tool_call_hunt.py), and text with unicode, NUL and control
characters; then unknown and near-miss tool names.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from t3rl_core.parsers.nesting import MAX_NESTING
from t3rl_core.types import Message, ToolCall

LONG_TEXT = "x" * 10_000
HOSTILE_TEXT = "é語🙂\x00\x01\x1b[31m\u202e\ud800\n\t\\\"'"
DEPTH = 200
# The deepest arguments the action parser lets through (parsers.nesting.MAX_NESTING counts the call's own
# object and its arguments' object): a world is given no deeper, and deeper text is the parser's refusal.
DEEPEST_PASSED = MAX_NESTING - 2
# What an observation may grow to per character of the call the model wrote: a tool may echo its
# arguments back (a posted message, a written file) and name them in an error, never more than a
# few times over, plus a fixed allowance for the tool's own text.
ECHO_FACTOR, OWN_TEXT = 4, 16_384


@dataclass(frozen=True)
class Declared:
    """One tool as the model is shown it."""

    name: str
    properties: Mapping[str, Mapping[str, Any]]
    required: tuple[str, ...]


def declared(tools: Sequence[Mapping[str, Any]]) -> list[Declared]:
    """The tools of an OpenAI-style `tools` list (`{"type": "function", "function": {...}}` or the bare
    function), in their order."""
    out = []
    for tool in tools:
        function = tool.get("function", tool)
        parameters = function.get("parameters") or {}
        properties = parameters.get("properties") or {}
        required = tuple(name for name in parameters.get("required") or () if name in properties)
        out.append(Declared(str(function["name"]), dict(properties), required))
    return out


def _plain_value(schema: Mapping[str, Any]) -> Any:
    """A value of the parameter's declared type (its first enum value when it has one)."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    return {
        "string": "t3rl",
        "integer": 1,
        "int": 1,
        "number": 1.0,
        "float": 1.0,
        "boolean": False,
        "bool": False,
        "array": [],
        "list": [],
        "tuple": [],
        "object": {},
        "dict": {},
    }.get(str(kind), "t3rl")


def plain_arguments(tool: Declared) -> dict[str, Any]:
    """The required arguments, each a value of its declared type: the call each case spoils once."""
    return {name: _plain_value(tool.properties[name]) for name in tool.required}


def nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = [value]
    return value


def _wrong_values(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Each hostile value for one parameter, by case name; a value of the parameter's own type is left
    out (it is no wrong type)."""
    kind = str(schema.get("type"))
    values: dict[str, Any] = {
        "string": "seven",
        "integer": 7,
        "list": ["t3rl"],
        "null": None,
        "object": {"t3rl": 1},
        "bool": True,
        "empty_string": "",
        "long_string": LONG_TEXT,
        "nan": math.nan,
        "inf": math.inf,
        "minus_inf": -math.inf,
        "huge": 1e308,
        "minus_zero": -0.0,
        "nested_deepest": nested(DEEPEST_PASSED),
        "control_chars": HOSTILE_TEXT,
    }
    own = {"string": "string", "integer": "integer", "int": "integer", "array": "list", "list": "list"}
    values.pop(own.get(kind, ""), None)
    if kind in ("object", "dict"):
        values.pop("object")
    if kind in ("boolean", "bool"):
        values.pop("bool")
    return values


def hostile_arguments(tool: Declared) -> list[tuple[str, dict[str, Any]]]:
    """(case id, arguments) of every argument-level case of `tool`."""
    plain = plain_arguments(tool)
    cases: list[tuple[str, dict[str, Any]]] = []
    for name in tool.required:
        cases.append((f"missing:{name}", {k: v for k, v in plain.items() if k != name}))
    cases.append(("extra:t3rl_unknown_argument", {**plain, "t3rl_unknown_argument": 1}))
    for name, schema in tool.properties.items():
        for case, value in _wrong_values(schema).items():
            cases.append((f"{case}:{name}", {**plain, name: value}))
    return cases


def near_miss(name: str) -> str:
    """A name one edit away from `name` (its last letter doubled), the model's likeliest typo."""
    return name + name[-1] if name else "x"


def hostile_calls(tools: Sequence[Declared]) -> Iterator[tuple[str, ToolCall]]:
    """Every argument-level case of every tool, then an unknown and a near-miss name per tool."""
    for tool in tools:
        for case, arguments in hostile_arguments(tool):
            yield f"{tool.name}/{case}", ToolCall(tool.name, arguments)
        yield f"{tool.name}/near_miss_name", ToolCall(near_miss(tool.name), plain_arguments(tool))
    yield "t3rl_no_such_tool", ToolCall("t3rl_no_such_tool", {})


def _size(value: Any) -> int:
    return len(repr(value))


def observation_problem(call: ToolCall, messages: Sequence[Message]) -> str | None:
    """Why the world's answer to `call` breaks the contract: each message's content is a text, and all
    of them together stay within ECHO_FACTOR times the call's size plus OWN_TEXT."""
    total = 0
    for message in messages:
        content = message.get("content")
        if not isinstance(content, str):
            return f"an observation's content is {type(content).__name__}, not a text: {message!r:.200}"
        total += len(content)
    bound = ECHO_FACTOR * (_size(call.arguments) + len(call.name)) + OWN_TEXT
    if total > bound:
        return f"observations of {total} characters for a call of {_size(call.arguments)} (bound {bound})"
    return None


def names_the_tool(call: ToolCall, messages: Sequence[Message]) -> bool:
    """Whether the answer says which call it is about: a tool message under the call's name, or a text
    naming it."""
    return any(m.get("name") == call.name or call.name in str(m.get("content")) for m in messages)


def finite_numbers(value: Any, where: str = "outcome") -> list[str]:
    """Paths of the floats in `value` that are no finite numbers (an outcome must hold none)."""
    if isinstance(value, float):
        return [] if math.isfinite(value) else [where]
    if isinstance(value, Mapping):
        return [p for k, v in value.items() for p in finite_numbers(v, f"{where}[{k!r}]")]
    if isinstance(value, list | tuple):
        return [p for i, v in enumerate(value) for p in finite_numbers(v, f"{where}[{i}]")]
    return []


# --------------------------------------------------------------------------- writes outside tmp

_WATCH: list[tuple[tuple[Path, ...], list[str]]] = []
_WRITE_EVENTS = frozenset({"os.mkdir", "os.rename", "os.remove", "os.rmdir", "shutil.rmtree", "os.truncate"})


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _WATCH:
        return
    if event == "open":
        path, mode, flags = args
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
        )
        if not writes or not isinstance(path, str | bytes | os.PathLike):
            return
    elif event in _WRITE_EVENTS:
        path = args[0]
        if not isinstance(path, str | bytes | os.PathLike):
            return
    else:
        return
    resolved = Path(os.fsdecode(path)).resolve()
    if _bytecode(resolved):
        return
    for roots, seen in _WATCH:
        if resolved != Path(os.devnull) and not any(resolved.is_relative_to(root) for root in roots):
            seen.append(f"{event} {resolved}")


# The import system's own writes: a module first imported inside the block is compiled and cached (a
# `.pyc`, written to a temporary `.pyc.<n>` and renamed; its `__pycache__` directory made).
_BYTECODE = re.compile(r"\.pyc(\.\d+)?$")


def _bytecode(path: Path) -> bool:
    prefix = sys.pycache_prefix
    return (
        _BYTECODE.search(path.name) is not None
        or path.name == "__pycache__"
        or (prefix is not None and path.is_relative_to(Path(prefix).resolve()))
    )


_hooked = False


@contextlib.contextmanager
def writes_outside(*roots: Path) -> Iterator[list[str]]:
    """The files this process opens for writing (or makes, moves, removes) outside `roots` while the
    block runs (an audit hook: it sees the world's own code and every library it calls)."""
    global _hooked
    if not _hooked:
        sys.addaudithook(_audit)
        _hooked = True
    seen: list[str] = []
    _WATCH.append((tuple(root.resolve() for root in roots), seen))
    try:
        yield seen
    finally:
        _WATCH.pop()
