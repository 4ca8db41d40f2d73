"""The type functions slime and Megatron declare for their options, re-implemented to check values.

The option table (`launch.plan.slime_option_table`, generated) names each option's type function; this
module maps every name t3rl can meet to a function with the same accept/reject behaviour, so a value
that would make Megatron's argparse exit (e.g. `--moe-layer-freq "[0, 1]"`: its pattern types allow
only `,0-9[]()+*`) is a config error at plan time instead of a crash on the cluster. The pattern types
are evaluated over a tiny AST subset (list/tuple displays, ints, `+`, `*`) instead of `eval`.
`tests/launch/test_option_types.py` checks these against Megatron's own functions.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from typing import Any

from launch.config.server_options import human_int

# _PATTERN_CHARS is a string, compiled by `re` (and cached) when first used, not on import: a cold `t3rl
# validate +experiment=stage2_bfcl` never uses it.
_PATTERN_CHARS = r"[^,\d\[\]\(\)\+\*]"


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.List):
        return [_evaluate(item) for item in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_evaluate(item) for item in node.elts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult):
        left, right = _evaluate(node.left), _evaluate(node.right)
        return left + right if isinstance(node.op, ast.Add) else left * right
    raise ValueError(f"unsupported expression {ast.unparse(node)!r}")


def layer_pattern(value: str) -> int | list[int]:
    """Megatron's moe_freq_type / no_rope_freq_type / la_freq_type: an int, or a list expression."""
    if "[" not in value:
        return int(value)
    if re.search(_PATTERN_CHARS, value):
        raise ValueError(f"Invalid pattern: {value} (only the characters ,0-9[]()+* are allowed)")
    try:
        result = _evaluate(ast.parse(value, mode="eval"))
    except SyntaxError as err:
        raise ValueError(f"Invalid pattern: {value}") from err
    return result  # type: ignore[no-any-return]


def int_tuple(value: str) -> tuple[int, ...]:
    """Megatron's tuple_type: "1,2" or "(1,2)" → (1, 2)."""
    return tuple(int(item) for item in value.strip("()").split(","))


def _bool(value: str) -> bool:
    # argparse's type=bool: any string converts (even "False" is True); t3rl never emits such flags.
    return bool(value)


TYPE_FUNCTIONS: dict[str, Callable[[str], Any]] = {
    "int": int,
    "float": float,
    "str": str,
    "bool": _bool,
    "json.loads": json.loads,
    "moe_freq_type": layer_pattern,
    "no_rope_freq_type": layer_pattern,
    "la_freq_type": layer_pattern,
    "tuple_type": int_tuple,
    "enum": str,  # the member name; checked against the choices
    "human_readable_int": human_int,  # SGLang's sizes (32768, 32k, 32Ki), as slime's --sglang-* take them
}


def value_problem(kind: str | None, choices: tuple[Any, ...] | None, value: str) -> str | None:
    """Why argparse would reject `value` for an option of this type and choices, or None."""
    convert = TYPE_FUNCTIONS.get(kind or "str")
    if convert is None:
        if choices is None:
            return f"its type function {kind} is not known to t3rl (add it to launch/plan/option_types.py)"
        convert = str
    try:
        converted = convert(value)
    except (ValueError, TypeError, json.JSONDecodeError) as err:
        return f"invalid {kind} value {value!r} ({err})"
    if choices is not None and converted not in choices:
        return f"invalid choice {value!r} (choose from {', '.join(map(str, choices))})"
    return None
