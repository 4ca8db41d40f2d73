"""A config field in words: its type, default, declared domain and the comment above it in its model's
source. `t3rl show --explain KEY` and the generated configuration reference (docs/reference/config/,
scripts/gen_config_reference.py) both print this text, so the two never say different things.

The domain is read from the field's declarations (pydantic bounds, the `Domain` and `StrKind` markers
of t3rl_core.fields, orders with other fields, Literal choices); the comment is the block of `#` lines
right above the field in its class (found with ast and tokenize, so a `#` inside a string is not one).
"""

from __future__ import annotations

import ast
import inspect
import io
import json
import re
import textwrap
import tokenize
import types
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml
from annotated_types import Ge, Gt, Le, Lt, MaxLen, MinLen
from pydantic import BaseModel, BeforeValidator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from launch.config.schema_walk import model_at
from t3rl_core.fields import Domain, Ordered, StrKind
from t3rl_core.registry import Registry

REQUIRED = "required"
_BOUND_TEXT = {Ge: ("≥", "ge"), Gt: (">", "gt"), Le: ("≤", "le"), Lt: ("<", "lt")}


@dataclass(frozen=True)
class FieldDoc:
    """What the schema declares about one field of one model."""

    model: type[BaseModel]
    name: str
    # The value's type as a user writes it in YAML terms (`int | null`, `list[str]`, a section's model).
    type: str
    # The default as YAML would show it, or "required".
    default: str
    # What values the type accepts beyond its type: bounds, a named domain, a string kind, choices.
    domain: str
    # The comment above the field in the model's source ("" when it has none), else the docstring of
    # the section's model.
    comment: str

    def summary(self) -> str:
        """One line: type, domain and default (what `t3rl show --explain` prints under the value)."""
        parts = [self.type, self.domain, f"default {self.default}" if self.default != REQUIRED else REQUIRED]
        return " · ".join(p for p in parts if p)


def field_doc(model: type[BaseModel], name: str) -> FieldDoc:
    field = model.model_fields[name]
    annotation = _with_metadata(field)
    return FieldDoc(
        model=model,
        name=name,
        type=type_text(annotation),
        default=default_text(field),
        domain=domain_text(annotation),
        comment=source_comment(model, name) or _section_docstring(annotation),
    )


def doc_at(key: str, data: Mapping[str, Any]) -> FieldDoc | None:
    """The FieldDoc of a dotted key of a config tree (its parent's model narrowed by `data`'s own
    `kind`/`name` values, plugins included); None for free-form or unknown keys."""
    parent, _, leaf = key.rpartition(".")
    model = model_at(parent, data)
    if model is None or leaf not in model.model_fields:
        return None
    return field_doc(model, leaf)


# -------------------------------------------------------------------------------------------- types


def _with_metadata(field: FieldInfo) -> Any:
    """The field's annotation with its Field() constraints attached, as one Annotated type."""
    metadata = list(field.metadata)
    return Annotated[(field.annotation, *metadata)] if metadata else field.annotation


def _split(tp: Any) -> tuple[Any, list[Any]]:
    """(the bare type, every metadata item wrapped around it), FieldInfo items flattened."""
    metadata: list[Any] = []
    while get_origin(tp) is Annotated:
        tp, *extra = get_args(tp)
        metadata = _flat(extra) + metadata
    return tp, metadata


def _flat(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        out.extend(_flat(list(item.metadata)) if isinstance(item, FieldInfo) else [item])
    return out


def _arms(tp: Any) -> list[Any]:
    return list(get_args(tp)) if get_origin(tp) in (Union, types.UnionType) else [tp]


def type_text(tp: Any) -> str:
    bare, metadata = _split(tp)
    if (registry := _registry(metadata)) is not None:
        return f"{registry.kind} section"
    origin = get_origin(bare)
    if origin in (Union, types.UnionType):
        arms = [type_text(arm) for arm in get_args(bare) if arm is not type(None)]
        return " | ".join(dict.fromkeys(arms)) + (" | null" if type(None) in get_args(bare) else "")
    if origin is Literal:
        return " | ".join(dict.fromkeys(type(v).__name__ for v in get_args(bare)))
    if origin in (list, set, frozenset):
        return f"list[{type_text(get_args(bare)[0])}]"
    if origin is tuple:
        return f"[{', '.join(type_text(a) for a in get_args(bare) if a is not Ellipsis)}]"
    if origin is dict:
        key, value = get_args(bare)
        return f"dict[{type_text(key)}, {type_text(value)}]"
    if bare is Any:
        return "any"
    if bare is type(None):
        return "null"
    return getattr(bare, "__name__", str(bare))


def _registry(metadata: list[Any]) -> Registry | None:
    """The registry a registry-typed section (env, reward, engine, …) validates its `name` with."""
    for item in metadata:
        owner = getattr(getattr(item, "func", None), "__self__", None)
        if isinstance(item, BeforeValidator) and isinstance(owner, Registry):
            return owner
    return None


def domain_text(tp: Any) -> str:
    """What the type declares beyond itself, e.g. `≥ 1`, `port: a TCP port in [1, 65535]`, `one of: a, b`."""
    bare, metadata = _split(tp)
    if (registry := _registry(metadata)) is not None:
        return f"`name`: a built-in {registry.kind}, an entry point of {registry.group} or an import path"
    parts = _own_domain(metadata)
    origin = get_origin(bare)
    if origin in (Union, types.UnionType):
        arms = [domain_text(arm) for arm in get_args(bare) if arm is not type(None)]
        parts.extend(a for a in dict.fromkeys(arms) if a)
    elif origin is Literal:
        parts.append("one of: " + ", ".join(_yaml(v) for v in get_args(bare)))
    elif origin in (list, set, frozenset, tuple):
        items = [domain_text(a) for a in get_args(bare) if a is not Ellipsis]
        parts.extend(f"items: {d}" for d in dict.fromkeys(items) if d)
    elif origin is dict:
        key, value = (domain_text(a) for a in get_args(bare))
        parts.extend(p for p in (f"keys: {key}" if key else "", f"values: {value}" if value else "") if p)
    elif isinstance(bare, type) and not issubclass(bare, BaseModel) and bare.__module__.startswith("t3rl"):
        parts.append(_first_sentence(bare.__doc__ or ""))
    return "; ".join(parts)


def _own_domain(metadata: list[Any]) -> list[str]:
    named = [m for m in metadata if isinstance(m, Domain | StrKind)]
    parts = [f"{m.name}: {m.description}" for m in named]
    if not any(isinstance(m, Domain) for m in named):  # a named domain states its bounds itself
        bounds = [
            f"{_BOUND_TEXT[type(m)][0]} {_number(getattr(m, _BOUND_TEXT[type(m)][1]))}"
            for m in metadata
            if type(m) in _BOUND_TEXT
        ]
        if bounds:
            parts.append(" and ".join(bounds))
    for m in metadata:
        if isinstance(m, Ordered):
            parts.append(f"{m.relation} {m.other}")
        elif isinstance(m, MinLen) and m.min_length:
            parts.append(f"at least {m.min_length} item(s)")
        elif isinstance(m, MaxLen):
            parts.append(f"at most {m.max_length} item(s)")
    return parts


def _number(value: Any) -> str:
    """A bound as a number reads: a whole float as its integer (typing caches `Annotated[float, Gt(0)]`
    by equality, so whether a field's bound is 0 or 0.0 depends on which was written first in the
    process), a large power of two as 2**n."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        value = int(value)
    if isinstance(value, int) and value > 2**20 and not value & (value - 1):
        return f"2**{value.bit_length() - 1}"
    return str(value)


# ----------------------------------------------------------------------------------------- defaults


def schema_default(field: FieldInfo) -> tuple[bool, Any]:
    """(whether the field has a default, the default): its factory's value for a default factory."""
    if field.default_factory is not None:
        return True, field.default_factory()  # type: ignore[call-arg]
    return field.default is not PydanticUndefined, field.default


def default_text(field: FieldInfo) -> str:
    found, value = schema_default(field)
    if not found:
        return REQUIRED
    if isinstance(value, BaseModel):
        return "(its fields' defaults)"
    return _yaml(value)


def _yaml(value: Any) -> str:
    """A value as it is written in a config file."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value) if value == "" or value.strip() != value else value
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, default=str)
    reference = getattr(value, "reference", None)  # a Secret default serialises as its reference
    return reference if isinstance(reference, str) else str(value)


# ----------------------------------------------------------------------------------------- comments


def source_comment(model: type[BaseModel], name: str) -> str:
    """The `#` lines right above the field's definition in the class that defines it, as one text."""
    for cls in model.__mro__:
        if name in inspect.get_annotations(cls):
            return _class_comments(cls).get(name, "")
    return ""


@cache
def _class_comments(cls: type) -> dict[str, str]:
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):  # defined where no source is kept (a REPL, a frozen module)
        return {}
    comments = _comment_lines(source)
    found: dict[str, str] = {}
    body = ast.parse(source).body[0]
    for node in body.body if isinstance(body, ast.ClassDef) else []:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            block: list[str] = []
            line = node.lineno - 1
            while line in comments:
                block.insert(0, comments[line])
                line -= 1
            found[node.target.id] = " ".join(block)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            break  # fields come first in every model
    return found


def _comment_lines(source: str) -> dict[int, str]:
    """Line number → text of every line that holds nothing but a comment."""
    lines: dict[int, str] = {}
    code_lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            lines[token.start[0]] = token.string.lstrip("#").strip()
        elif token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            code_lines.update(range(token.start[0], token.end[0] + 1))
    return {n: text for n, text in lines.items() if n not in code_lines}


def _section_docstring(annotation: Any) -> str:
    """The docstring of the model a section field holds (e.g. `recompute: RecomputeConfig | None`); none
    for a registry-typed section, whose base model's docstring speaks to plugin authors."""
    bare, metadata = _split(annotation)
    if _registry(metadata) is not None:
        return ""
    models = [a for a in _arms(bare) if isinstance(a, type) and issubclass(a, BaseModel)]
    return _first_sentence(models[0].__doc__ or "") if len(models) == 1 else ""


def _first_sentence(doc: str) -> str:
    text = " ".join(doc.split())
    match = re.search(r"(?<!e\.g)(?<!i\.e)\.(\s|$)", text)
    return text[: match.start() + 1] if match else text


# ------------------------------------------------------------------------------------ config files


def yaml_comments(text: str) -> dict[str, str]:
    """Dotted key (relative to the file's package) → the comment at the end of its line, for every
    mapping key of a config file (list items are not keys)."""
    lines = text.splitlines()
    found: dict[str, str] = {}

    def walk(node: yaml.Node, prefix: str) -> None:
        if not isinstance(node, yaml.MappingNode):
            return
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                continue
            dotted = f"{prefix}{key.value}"
            comment = line_comment(lines[key.start_mark.line], key.end_mark.column)
            if comment:
                found[dotted] = comment
            walk(value, dotted + ".")

    walk(yaml.compose(text, Loader=yaml.SafeLoader), "")
    return found


def line_comment(line: str, start: int) -> str:
    """The comment of a YAML line after column `start`: a `#` after white space, outside quotes."""
    quote = ""
    for i in range(start, len(line)):
        char = line[i]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and line[i - 1].isspace():
            return line[i + 1 :].strip()
    return ""


def comment_in_file(key: str, comments: Mapping[str, str]) -> str:
    """The comment a config file gives the dotted key `key` of the whole config: the file's keys are
    relative to its package, so the longest key of the file that ends `key` is it."""
    matches = [k for k in comments if key == k or key.endswith("." + k)]
    return comments[max(matches, key=len)] if matches else ""
