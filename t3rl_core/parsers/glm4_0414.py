"""GLM-4-0414's native tool calls (GLM-4-9B-0414, GLM-4-32B-0414, GLM-Z1-*-0414), which no parser of
SGLang 0.5.23 reads.

The 0414 chat template renders a call as an assistant turn whose `metadata` is the function name and
whose content is the JSON arguments: `<|assistant|>NAME\\nARGS`, with no tags; the model then ends its
turn with `<|observation|>` and the result comes back as `<|observation|>\\nRESULT`. A text answer starts
with the newline instead (`<|assistant|>\\nTEXT`). Several calls in one turn are separate assistant
segments: `NAME\\nARGS<|assistant|>NAME\\nARGS`.

Parsing the text a model writes after `<|assistant|>` (without its final `<|observation|>`): every
`<|assistant|>`-separated segment whose first line is a function name (no spaces or braces) followed by
a line starting with `{` is a call; its parameters are the rest of the segment as written (t3rl reports
invalid JSON to the model instead of dropping the call); other segments are text.

`detector_class()` builds an SGLang `BaseFormatDetector` subclass, registered under `glm4_0414` in
SGLang's parser table when t3rl loads SGLang's parsers (`t3rl_core.parsers.sglang_loader`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

NAME = "glm4_0414"
SEPARATOR = "<|assistant|>"
TURN_END = "<|observation|>"
_CALL = re.compile(r"(?P<name>[^\s{}<>\"]+)[ \t]*\n[ \t]*(?P<arguments>\{.*)", re.DOTALL)


@dataclass(frozen=True)
class Segment:
    """One `<|assistant|>`-separated piece of a turn: a call (name and raw arguments) or text."""

    text: str
    name: str | None = None
    arguments: str = ""


def segments(text: str) -> list[Segment]:
    """The turn's segments in order; a call keeps its arguments text as written (stripped)."""
    out: list[Segment] = []
    for piece in text.removesuffix(TURN_END).split(SEPARATOR):
        match = _CALL.fullmatch(piece.strip())
        if match:
            out.append(Segment(piece, match.group("name"), match.group("arguments").strip()))
        elif piece.strip():
            out.append(Segment(piece))
    return out


@cache
def detector_class() -> type:
    """SGLang's detector interface over `segments` (SGLang is imported here, on first use)."""
    from sglang.srt.function_call.base_format_detector import BaseFormatDetector
    from sglang.srt.function_call.core_types import StreamingParseResult, StructureInfo, ToolCallItem

    class Glm40414Detector(BaseFormatDetector):  # type: ignore[misc, valid-type]
        """GLM-4-0414: `NAME\\n{json}` per assistant segment, no tags."""

        def __init__(self) -> None:
            super().__init__()
            self.bot_token = ""
            self.eot_token = TURN_END
            self.tool_call_separator = SEPARATOR

        def has_tool_call(self, text: str) -> bool:
            return any(segment.name is not None for segment in segments(text))

        def detect_and_parse(self, text: str, tools: list[Any]) -> Any:
            indices = self._get_tool_indices(tools)
            found = segments(text)
            calls = [
                ToolCallItem(tool_index=indices.get(s.name, -1), name=s.name, parameters=s.arguments)
                for s in found
                if s.name is not None
            ]
            normal = "".join(s.text for s in found if s.name is None).strip()
            return StreamingParseResult(normal_text=normal, calls=calls)

        def structure_info(self) -> Any:
            return lambda name: StructureInfo(begin=f"{name}\n", end=TURN_END, trigger="")

    return Glm40414Detector
