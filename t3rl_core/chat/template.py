"""Chat templates compiled and rendered without transformers (which costs ~1 s to import, torch included).

The environment matches the one transformers renders chat templates in (sandboxed Jinja with
`trim_blocks`/`lstrip_blocks`, loop controls, a `tojson` that keeps non-ASCII text, `raise_exception`,
`strftime_now`); the inputs are prepared the same way (None-valued message keys dropped, reasoning
copied under `reasoning_content` and `thinking`). tests/chat/test_template.py checks both render the
same text for every shipped family.
"""

from __future__ import annotations

import copy
import json
import marshal
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

# What `getattr` finds on a plain dict (its methods): a template's `x.name` on a dict reads these
# before the key of that name.
_DICT_ATTRIBUTES = frozenset(dir(dict))
# Names a message's reasoning may be given under; templates read the first (gpt-oss reads `thinking`).
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


class RenderedJSON(dict):  # type: ignore[type-arg]
    """A dict (a tool of a run's tool list) that keeps its `tojson` texts, one per argument set: the
    same tool lists are rendered into prompt after prompt (BFCL: ~20 tools, ~0.1 ms of JSON a prompt).
    Built from a deep copy, so the texts always describe its contents."""

    __slots__ = ("texts",)

    def __init__(self, value: Mapping[str, Any]) -> None:
        super().__init__(_deep_copy(dict(value)))
        self.texts: dict[tuple[Any, ...], str] = {}


def _deep_copy(value: dict[str, Any]) -> dict[str, Any]:
    """`copy.deepcopy(value)`; for plain data through a `marshal` round trip, the same copy made in C
    (~4x faster on a BFCL tool list, whose copies a new tool list's first prompt waits for). marshal
    writes only exact dicts, lists, tuples, sets, strings, bytes, numbers, bools and None, keeping
    shared references shared as deepcopy does, and refuses anything else, which deepcopy then copies."""
    try:
        copied: dict[str, Any] = marshal.loads(marshal.dumps(value))
    except ValueError:
        return copy.deepcopy(value)
    return copied


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: Any = None,
    sort_keys: bool = False,
) -> str:
    # Jinja's own filter escapes HTML characters, which no chat format wants.
    if type(value) is RenderedJSON:
        args = (ensure_ascii, indent, None if separators is None else tuple(separators), sort_keys)
        text = value.texts.get(args)
        if text is None:
            text = value.texts[args] = json.dumps(
                value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
            )
        return text
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _raise_exception(message: str) -> None:
    from jinja2.exceptions import TemplateError  # lazy: jinja2, only when a template is rendered

    raise TemplateError(message)


def _strftime_now(format: str) -> str:
    return datetime.now().strftime(format)


@lru_cache(maxsize=16)
def compile_template(source: str) -> Any:
    """The compiled template (cached per source text)."""
    from jinja2 import ext, nodes  # lazy: jinja2, only when a template is rendered
    from jinja2.sandbox import ImmutableSandboxedEnvironment  # lazy: jinja2, only when a template is rendered

    class _Generation(ext.Extension):
        """`{% generation %}…{% endgeneration %}` marks assistant text for masks; here it only renders."""

        tags = frozenset({"generation"})

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

        def _body(self, caller: Any) -> str:
            return caller()

    class _Environment(ImmutableSandboxedEnvironment):
        def getattr(self, obj: Any, attribute: str) -> Any:
            # `message.role` on a plain dict: Jinja tries the attribute first and, on the
            # AttributeError, the key; only dict's own names are attributes of a dict, so any other
            # name is the key at once (the same value or undefined), without the raised exception
            # (a fifth of a turn delta's render).
            if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:
                try:
                    return obj[attribute]
                except KeyError:
                    return self.undefined(obj=obj, name=attribute)
            return super().getattr(obj, attribute)

    environment = _Environment(
        trim_blocks=True, lstrip_blocks=True, extensions=[_Generation, ext.loopcontrols]
    )
    environment.filters["tojson"] = _tojson
    environment.globals["raise_exception"] = _raise_exception
    environment.globals["strftime_now"] = _strftime_now
    return environment.from_string(source)


def plain_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages as templates receive them: None-valued keys dropped, reasoning under every name read."""
    plain = []
    for message in messages:
        item = {key: value for key, value in message.items() if value is not None}
        reasoning = next((item[key] for key in _REASONING_FIELDS if key in item), None)
        if reasoning is not None:
            item = {"thinking": reasoning, **item, "reasoning_content": reasoning}
        plain.append(item)
    return plain


def render_template(
    compiled: Any,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    *,
    add_generation_prompt: bool,
    variables: Mapping[str, Any],
) -> str:
    """The conversation's text; `variables` are the tokenizer's named special tokens and template kwargs."""
    return compiled.render(
        messages=plain_messages(messages),
        tools=list(tools) if tools else None,
        documents=None,
        add_generation_prompt=add_generation_prompt,
        **variables,
    )
