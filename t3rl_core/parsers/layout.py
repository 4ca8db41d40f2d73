"""The line breaks and indentation a call format's detector reads exactly, declared once per format.

SGLang's Qwen, GLM-4.5 and DeepSeek detectors read a call only when the whitespace around the format's
tags is the template's own (Qwen: `<tool_call>` then one `\\n`; DeepSeek-V3: `` ```json `` on its own
line): a call written with `\\r\\n`, a tab or no line break there is dropped, and the model was told "1
of 1 tool call(s) could not be parsed" beside an example whose difference it could not see. The
layout is read from the format's own rendering of a call (`render_calls`), not written down again: the
whitespace on each side of each of the format's marks inside a call. A dropped call whose marks sit in
other whitespace is written again with the format's, and only when the detector reads that text are
the differences named (so what is named is what made the detector drop it, and the fix validates).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

from t3rl_core.parsers.render import FORMATS
from t3rl_core.types import ToolCall

# The marks inside a call whose surrounding whitespace a format's detector reads, besides its call and
# block tags (`CallFormat`): GLM's argument tags, DeepSeek's separator and code fence.
_INNER_MARKS: dict[str, tuple[str, ...]] = {
    "glm": ("<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"),
    "glm45": ("<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"),
    "deepseekv3": ("<｜tool▁sep｜>", "```json", "```"),
    "deepseekv31": ("<｜tool▁sep｜>",),
}
# A difference named only when either side holds a line break or a tab: spaces next to a raw GLM value
# are the value's own text, never layout.
_LAYOUT_CHARACTERS = frozenset("\r\n\t")
_SPACE = " \t\r\n\f\v"


def _runs(pattern: re.Pattern[str], text: str) -> list[tuple[str, str, int, int]]:
    """Each mark's whitespace on each side in `text`: (mark, side, start, end) of the run. The run
    between two marks is both the first's 'after' and the second's 'before'."""
    runs = []
    for match in pattern.finditer(text):
        start = match.start()
        while start > 0 and text[start - 1] in _SPACE:
            start -= 1
        end = match.end()
        while end < len(text) and text[end] in _SPACE:
            end += 1
        # The text's own edges are outside the call: what goes before its first mark or after its last
        # is the turn's, not the format's.
        if start > 0:
            runs.append((match.group(), "before", start, match.start()))
        if end < len(text):
            runs.append((match.group(), "after", match.end(), end))
    return runs


@cache
def _layout(parser_name: str) -> tuple[re.Pattern[str], dict[tuple[str, str], str]] | None:
    """The pattern of the format's marks, and the whitespace its own call writes on each side of each
    mark ((mark, 'before'|'after') → text) where every occurrence writes the same; None for a format
    with no marks (Llama-3's, Mistral's)."""
    fmt = FORMATS.get(parser_name)
    if fmt is None:
        return None
    tags = (fmt.block_open, fmt.call_open, fmt.call_close, fmt.block_close)
    marks = sorted({*filter(None, tags), *_INNER_MARKS.get(parser_name, ())}, key=len, reverse=True)
    if not marks:
        return None
    pattern = re.compile("|".join(map(re.escape, marks)))
    rendered = fmt.render([ToolCall("f", {"a": 1, "b": "x"})])
    seen: dict[tuple[str, str], set[str]] = {}
    for mark, side, start, end in _runs(pattern, rendered):
        seen.setdefault((mark, side), set()).add(rendered[start:end])
    return pattern, {key: runs.pop() for key, runs in seen.items() if len(runs) == 1}


def layout_problem(parser_name: str, text: str, reads: Callable[[str], bool]) -> str | None:
    """What in `text`'s whitespace around the format's marks differs from the format's own layout, when
    `reads` (the detector reading every call) accepts the text written with the format's layout and
    not `text`; None otherwise."""
    layout = _layout(parser_name)
    if layout is None:
        return None
    pattern, required = layout
    edits: dict[tuple[int, int], str] = {}
    differences: list[str] = []
    for mark, side, start, end in _runs(pattern, text):
        wanted, written = required.get((mark, side)), text[start:end]
        if wanted is None or written == wanted or not _LAYOUT_CHARACTERS & set(written + wanted):
            continue
        edits.setdefault((start, end), wanted)
        differences.append(f"{written!r} {side} {mark} (the format writes {wanted!r})")
    if not differences:
        return None
    pieces, at = [], 0
    for (start, end), wanted in sorted(edits.items()):
        pieces += [text[at:start], wanted]
        at = end
    if not reads("".join(pieces) + text[at:]):
        return None
    named = list(dict.fromkeys(differences))
    more = f" and {len(named) - 3} more" if len(named) > 3 else ""
    return (
        "the line breaks around the format's tags are not the format's: "
        + "; ".join(named[:3])
        + more
        + ". The call is read when they are written as the example writes them"
    )
