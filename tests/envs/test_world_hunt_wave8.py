"""World hunt, wave eight: the tau2 scripted user's reading of the agent's text is linear in it
(docs/explanation/tito.md, "Hunted, wave eight")."""

from __future__ import annotations

import ast
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.envs.tau2 import users
from t3rl_core.envs.tau2.users import CALL_CHARS, requested_calls

TOOLS = {"toggle_data", "set_mode"}


class _Scanned:
    """A compiled pattern counting the characters each of its scans is handed."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern, self.chars = pattern, 0

    def finditer(self, text: str, pos: int = 0, endpos: int | None = None) -> Any:
        end = len(text) if endpos is None else endpos
        self.chars += end - pos
        return self.pattern.finditer(text, pos, end)

    def search(self, text: str, *bounds: int) -> Any:
        self.chars += len(text)
        return self.pattern.search(text, *bounds)


@pytest.mark.parametrize(
    "text",
    [
        "Please run " + "toggle_data(x=1) " * 4000,  # 4,000 calls in one sentence (68 kB)
        ("toggle_data(x=[" + ")," * 200 + " ") * 40,  # unclosed calls followed by many ')'
    ],
    ids=["one-sentence", "unclosed"],
)
def test_the_scripted_user_reads_an_agent_message_in_linear_time(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    """The scripted user read each call's sentence again from the text's start (and searched it for a
    negation), and tried every ')' after an unclosed call with ast.parse: a 68 kB message took 12 s of
    CPU, a 16 kB one of unclosed calls 2 s, on the event loop every episode shares (the model writes
    the agent's text). Counted, not timed: the sentence starts and negations are scanned once over the
    text, and no text longer than CALL_CHARS is parsed as a call."""
    starts, negations = _Scanned(users._SENTENCE_START), _Scanned(users._NEGATION)
    monkeypatch.setattr(users, "_SENTENCE_START", starts)
    monkeypatch.setattr(users, "_NEGATION", negations)
    parsed: list[int] = []
    parse = ast.parse

    def counted_parse(source: str, *args: Any, **kwargs: Any) -> Any:
        parsed.append(len(source))
        return parse(source, *args, **kwargs)

    monkeypatch.setattr(users.ast, "parse", counted_parse)
    requested_calls(text, TOOLS)
    assert starts.chars <= len(text) and negations.chars <= len(text)
    assert max(parsed) <= CALL_CHARS + 1


def _read_per_call(text: str, tools: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """The reading as declared, call by call: each call's sentence searched for a negation."""
    names = "|".join(re.escape(name) for name in sorted(tools, key=len, reverse=True))
    calls = []
    for match in re.finditer(rf"\b({names})\s*\(", text):
        arguments = users._call_arguments(text, match.start(), match.end())
        if arguments is None:
            continue
        starts = [m.end() for m in users._SENTENCE_START.finditer(text, 0, match.start() + 1)]
        if not users._NEGATION.search(text[max(starts, default=0) : match.start()]):
            calls.append((match.group(1), arguments))
    return calls


_PIECES = st.sampled_from(
    [
        "toggle_data(",
        "set_mode(",
        "x=1",
        "mode='4g'",
        ")",
        ", ",
        ". ",
        "; ",
        "\n",
        "not ",
        "never ",
        "don't ",
        "please ",
        "cannot ",
        "(",
        "[",
        "]",
        "'",
        " ",
    ]
)


@settings(max_examples=80, deadline=None)
@given(st.lists(_PIECES, max_size=40).map("".join))
def test_the_linear_reading_is_the_per_call_reading(text: str) -> None:
    assert requested_calls(text, TOOLS) == _read_per_call(text, TOOLS)
