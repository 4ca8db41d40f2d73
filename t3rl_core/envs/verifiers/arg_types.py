"""An `env.args` value against its `load_environment` parameter's annotation, as written in the source
(`ast`, nothing imported): a text where the loader takes an int reaches `range()` or `Dataset.select()`
deep inside the environment. Only annotations of plain data are checked (int, float, bool, str, list,
dict, their unions, Optional and Literal); any other annotation accepts every value."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

_Check = Callable[[Any], bool]

_PLAIN: dict[str, _Check] = {
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "list": lambda v: isinstance(v, list | tuple),
    "dict": lambda v: isinstance(v, dict),
}
_ALIASES = {
    "List": "list", "Sequence": "list", "tuple": "list", "Tuple": "list", "set": "list",
    "Dict": "dict", "Mapping": "dict",
}  # fmt: skip


def type_problem(name: str, annotation: ast.expr | None, value: Any) -> str | None:
    """Why `value` does not fit parameter `name` annotated `annotation` (None = it fits, or the
    annotation is not plain data). None itself is left to the loader: `x: int = None` is common."""
    if annotation is None or value is None:
        return None
    checks = _checks(annotation)
    if checks is None or any(check(value) for check in checks):
        return None
    quoted = isinstance(annotation, ast.Constant) and isinstance(annotation.value, str)
    written = annotation.value if quoted else ast.unparse(annotation)
    return (
        f"load_environment() takes {name}: {written}, got {type(value).__name__} "
        f"{value!r}: set env.args.{name} to a value of that type"
    )


def _checks(node: ast.expr) -> list[_Check] | None:
    """The checks any of which a value must pass; None when some part is not plain data."""
    if isinstance(node, ast.Constant):
        if node.value is None:
            return [lambda v: v is None]
        if isinstance(node.value, str):  # a quoted annotation
            try:
                return _checks(ast.parse(node.value, mode="eval").body)
            except SyntaxError:
                return None
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = _checks(node.left), _checks(node.right)
        return None if left is None or right is None else [*left, *right]
    head = _name(node.value if isinstance(node, ast.Subscript) else node)
    if isinstance(node, ast.Subscript):
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head == "Literal":
            if not all(isinstance(item, ast.Constant) for item in items):
                return None
            allowed = [item.value for item in items if isinstance(item, ast.Constant)]
            return [lambda v: any(v == a and type(v) is type(a) for a in allowed)]
        if head in ("Optional", "Union"):
            parts = [_checks(item) for item in items]
            if any(part is None for part in parts):
                return None
            none_too = [lambda v: v is None] if head == "Optional" else []
            return [check for part in parts if part for check in part] + none_too
    plain = _PLAIN.get(_ALIASES.get(head, head)) if head else None
    return None if plain is None else [plain]


def _name(node: ast.expr) -> str | None:
    """`int`, `typing.List`, `t.Optional` → the last name."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None
