"""Model text → action, with SGLang's own reasoning and tool-call parsers chosen by name.

SGLang's detectors drop what they cannot parse (a call with bad JSON or an unknown function simply
vanishes). Here every call the text attempts is accounted for: anything dropped, unbalanced or unknown
becomes an `InvalidAction` whose error tells the model what to fix. Parsing never raises.
"""

from __future__ import annotations

import json
import math
import re
import sys
import unicodedata
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from t3rl_core.chat.keys import json_key
from t3rl_core.chat.scalar_text import scalar_text
from t3rl_core.config import ParsersConfig
from t3rl_core.counts import counted
from t3rl_core.parsers.layout import layout_problem
from t3rl_core.parsers.nesting import nesting_problem
from t3rl_core.parsers.render import FORMATS, CallFormat, render_calls
from t3rl_core.parsers.sglang_loader import load
from t3rl_core.types import Action, AnswerAction, InvalidAction, ToolCall, ToolCallAction

# The longest error a malformed turn is answered with: the error goes back to the model as an
# observation, so a name or key the model wrote (60,000 characters of it, say) must never come back
# whole. Every text of the model's an error quotes is cut to QUOTED_CHARS (`quoted`); MAX_ERROR_CHARS
# bounds the whole message whatever builds it (`bounded`). tests/rollout/test_model_output_hunt.py.
QUOTED_CHARS = 80
MAX_ERROR_CHARS = 2000


def quoted(text: object) -> str:
    """`text` (the model's) as an error quotes it: its repr, cut to QUOTED_CHARS with the length said."""
    text = str(text)
    if len(text) <= QUOTED_CHARS:
        return repr(text)
    return f"{text[:QUOTED_CHARS]!r}… ({counted(len(text), 'character')})"


def bounded(error: str) -> str:
    """`error` cut to MAX_ERROR_CHARS, saying so."""
    if len(error) <= MAX_ERROR_CHARS:
        return error
    tail = f"… ({counted(len(error), 'character')})"
    return error[: MAX_ERROR_CHARS - len(tail)] + tail


# A JSON string literal (its escapes included), read left to right: alternatives that cannot overlap,
# so a scan is linear in the text.
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


class UnwritableTool(ValueError):
    """A tool the row offers whose name the run's call format cannot write (the message says how)."""


# (format, tool name) → why a call naming it cannot be written (None: it can); the oldest go first.
_WRITABLE: dict[tuple[str, str], str | None] = {}


class InvalidOutput(ValueError):
    """The model's text breaks the format; the message is shown to the model."""


class AmbiguousJSON(ValueError):
    """JSON that readers disagree on: a key twice in one object, NaN or Infinity (not JSON at all)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    read = dict(pairs)
    if len(read) == len(pairs):  # no key twice
        return read
    keys = [key for key, _ in pairs]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    raise AmbiguousJSON(f"the key {', '.join(map(quoted, twice[:3]))} appears twice in one object")


def _no_constant(name: str) -> Any:
    # (also what a raw value past a float's range, GLM's `<arg_value>1e400`, reads as: SGLang's inf)
    raise AmbiguousJSON(f"{name} is not a JSON value: write a finite number")


def _finite_float(text: str) -> float:
    """A JSON number with a fraction or an exponent, refused past a float's range: Python reads 1e400 as
    inf, which the tool then got, the template wrote back as `Infinity` (no JSON) and the error called
    'Infinity', a word the model never wrote."""
    value = float(text)
    if not math.isfinite(value):
        raise AmbiguousJSON(f"the number {quoted(text)} is past a float's range (about 1.8e308)")
    return value


def _readable_int(text: str) -> int:
    """A JSON integer; one of more digits than Python converts (sys.get_int_max_str_digits) is the
    model's format error, not a parser bug telling it to call sys.set_int_max_str_digits."""
    try:
        return int(text)
    except ValueError:
        raise AmbiguousJSON(
            f"an integer of {counted(len(text.lstrip('-')), 'digit')} is more than t3rl reads "
            f"({sys.get_int_max_str_digits()}): write it as a string"
        ) from None


# One reading of every JSON the model writes in a call: a key written twice is one value to Python
# (the last) and another to other readers (SGLang's detectors read the raw text too), so it is refused,
# as are NaN and Infinity, which JSON does not have and the chat template would write back as is, and
# numbers Python cannot read as what they say (past a float's range, more digits than it converts).
STRICT_JSON = json.JSONDecoder(
    object_pairs_hook=_unique_keys,
    parse_constant=_no_constant,
    parse_float=_finite_float,
    parse_int=_readable_int,
)


def strict_json(text: str) -> Any:
    """`text` as one JSON value read strictly (STRICT_JSON); JSONDecodeError or AmbiguousJSON."""
    return STRICT_JSON.decode(text)


@dataclass(frozen=True)
class _Attempt:
    """One call the text tries to make, as far as it can be read."""

    name: str | None
    error: str | None = None
    # A JSON call's arguments as read (an object; {} when none are written), for `_read_directly`.
    arguments: dict[str, Any] | None = None


def _tool_name(tool: Mapping[str, Any]) -> str:
    return str(tool["function"]["name"] if "function" in tool else tool["name"])


def _as_openai_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    return dict(tool) if "function" in tool else {"type": "function", "function": dict(tool)}


# SGLang's validated `Tool` of each distinct tool (by its JSON), shared by the parsers of every tool
# list that holds it: BFCL's 81 tool lists of a split are combinations of ~130 tools, and validating
# a list's ~28 tools was ~0.8 ms of each new list's first episode on the event loop (its detectors
# only read them). The oldest go first.
_TOOLS: OrderedDict[str, Any] = OrderedDict()
_TOOLS_KEPT = 4096


def _sglang_tool(model: Any, tool: Mapping[str, Any]) -> Any:
    """`model.model_validate` of the tool as an OpenAI tool, made once per distinct tool."""
    openai_tool = _as_openai_tool(tool)
    key = json_key(openai_tool)
    validated = _TOOLS.get(key)
    if validated is None or type(validated) is not model:
        validated = _TOOLS[key] = model.model_validate(openai_tool)
        if len(_TOOLS) > _TOOLS_KEPT:
            _TOOLS.popitem(last=False)
    return validated


class ReasoningSplitter:
    """Validates and strips one reasoning block (SGLang's ReasoningParser, or plain think tags).

    With both a parser and think tags, the parser's rules apply to the given tags (T3RL's recipe:
    `qwen3-thinking`, i.e. reasoning forced open, with `<thinking>` instead of `<think>`)."""

    def __init__(self, parsers: ParsersConfig) -> None:
        self.parser_name = parsers.reasoning_parser
        self.tags = parsers.think_tags
        if self.parser_name:
            reasoning_parser = load().ReasoningParser
            if self.parser_name not in reasoning_parser.DetectorMap:
                raise ValueError(
                    f"unknown reasoning_parser '{self.parser_name}'; SGLang knows: "
                    f"{', '.join(sorted(reasoning_parser.DetectorMap))}"
                )
            detector = self._parser().detector
            self.start, self.end = detector.think_start_token, detector.think_end_token
            self.forced = bool(getattr(detector, "force_reasoning", False))
        elif parsers.think_tags:
            self.start, self.end = parsers.think_tags
            self.forced = False
        else:
            self.start = self.end = ""
            self.forced = False

    def _parser(self) -> Any:
        """A fresh SGLang ReasoningParser (it keeps state between calls), with the tags overridden."""
        parser = load().ReasoningParser(self.parser_name, stream_reasoning=False)
        if self.tags:
            parser.detector.think_start_token, parser.detector.think_end_token = self.tags
        return parser

    def split(self, text: str) -> tuple[str | None, str]:
        """(reasoning, the rest); raises InvalidOutput on malformed reasoning tags."""
        if not self.start:
            return None, text
        starts, ends = text.count(self.start), text.count(self.end)
        if starts > 1 or ends > 1:
            raise InvalidOutput(f"write at most one reasoning block {self.start}…{self.end}")
        if starts and not ends:
            raise InvalidOutput(
                f"the reasoning block opened with {self.start} is never closed with {self.end}"
            )
        if self.forced and not ends:
            raise InvalidOutput(f"the reasoning never ends: close it with {self.end} before answering")
        if ends and not starts and not self.forced:
            raise InvalidOutput(
                f"{self.end} closes a reasoning block that was never opened with {self.start}"
            )
        if starts and text.index(self.end) < text.index(self.start):
            raise InvalidOutput(f"{self.end} comes before {self.start}")
        # A block the model opens itself opens its turn (whitespace before it aside: GLM writes its role's
        # newline first). SGLang's reasoning parsers read all text before the end tag as reasoning, so a
        # call or an answer before `<think>` vanished into it: the world saw an empty answer, unsaid.
        if starts and not self.forced and text[: text.index(self.start)].strip():
            before = text[: text.index(self.start)].strip()
            raise InvalidOutput(
                f"the reasoning block {self.start}…{self.end} must open the turn, but "
                f"{quoted(before)} comes before it: write the reasoning first, then the answer or "
                "the tool calls"
            )
        if not ends:
            return None, text
        if self.parser_name:
            # SGLang expects the block at the very start; GLM models write their role's newline first
            reasoning, normal = self._parser().parse_non_stream(text.lstrip())
            return (reasoning or "").strip(), normal or ""
        before, _, rest = text.partition(self.start) if starts else ("", "", text)
        reasoning, _, after = rest.partition(self.end)
        return reasoning.strip(), before + after


class ToolCallActionParser:
    """The `tool_calls` action format: reasoning first, then SGLang's tool-call parser by name."""

    def __init__(
        self,
        parsers: ParsersConfig,
        tools: Sequence[Mapping[str, Any]],
        *,
        late_tools: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        """`tools` are offered in the prompt; `late_tools` are offered later by the env (BFCL miss_func):
        calls to them parse, but errors never name them, so that nothing reveals them early."""
        sglang = load()
        self.tool_call_parser = parsers.tool_call_parser
        if self.tool_call_parser not in sglang.FunctionCallParser.ToolCallParserEnum:
            raise ValueError(
                f"unknown tool_call_parser '{self.tool_call_parser}'; SGLang knows: "
                f"{', '.join(sorted(sglang.FunctionCallParser.ToolCallParserEnum))}"
            )
        self.tool_names = [_tool_name(tool) for tool in tools]
        # Each tool's declared argument names (`_check_keys`), for the tools whose schema lists them.
        self._properties = {
            _tool_name(tool): frozenset(properties)
            for tool in (*tools, *late_tools)
            if isinstance(properties := _schema_properties(tool), Mapping)
        }
        self._known = set(self.tool_names) | {_tool_name(tool) for tool in late_tools}
        sglang_tools = [_sglang_tool(sglang.Tool, tool) for tool in (*tools, *late_tools)]
        self._calls = sglang.FunctionCallParser(sglang_tools, self.tool_call_parser)
        _index_tools_once(self._calls.detector, sglang_tools)
        self._format: CallFormat | None = FORMATS.get(self.tool_call_parser)
        self._direct_names = _direct_names(sglang, self._calls, self._format, sglang_tools)
        self._reasoning = ReasoningSplitter(parsers)
        # The format's tag patterns, compiled once rather than escaped and looked up on every parse.
        fmt = self._format
        self._call_blocks: re.Pattern[str] | None = None
        self._tagged_spans: list[re.Pattern[str]] = []
        self._tag_orders: list[re.Pattern[str]] = []
        if fmt is not None and fmt.call_open and fmt.call_close:
            call = re.escape(fmt.call_open) + "(.*?)" + re.escape(fmt.call_close)
            self._call_blocks = re.compile(call, re.DOTALL)
            pairs = [
                (o, c)
                for o, c in ((fmt.block_open, fmt.block_close), (fmt.call_open, fmt.call_close))
                if o and c
            ]
            self._tagged_spans = [
                re.compile(re.escape(o) + ".*?" + re.escape(c), re.DOTALL) for o, c in pairs
            ]
            # Each pair's tags in text order (an opener captured): its lazy spans above scan from every
            # opener to the end when no closer follows, quadratic in a text of closers then openers.
            self._tag_orders = [re.compile(f"({re.escape(o)})|{re.escape(c)}") for o, c in pairs]
        # The tags a JSON string of the model's may not hold raw (_escape_hint): the call format's and the
        # reasoning block's, each starting with '<'.
        markers = (fmt.call_open, fmt.call_close, fmt.block_open, fmt.block_close) if fmt else ()
        self._tags = [
            tag for tag in (*markers, self._reasoning.start, self._reasoning.end) if tag and tag[0] == "<"
        ]
        unwritable = next(filter(None, map(self._unwritable, sorted(self._known))), None)
        if unwritable is not None:
            raise UnwritableTool(unwritable)

    def parse(self, text: str) -> Action:
        too_deep = nesting_problem(text)  # before any reader recurses (parsers/nesting.py)
        if too_deep is not None:
            return InvalidAction(error=bounded(f"Invalid output format: {too_deep}"), text=text)
        try:
            reasoning, normal = self._reasoning.split(text)
            calls = self._parse_calls(normal.strip())
            self._check_keys(calls)
        except InvalidOutput as exc:
            return InvalidAction(
                error=bounded(f"Invalid output format: {exc}{self._escape_hint(text)}"), text=text
            )
        except Exception as exc:  # a parser bug must not end the episode: the model sees it as a format error
            return InvalidAction(
                error=bounded(f"Invalid output format: could not parse the output ({exc!r})"), text=text
            )
        if calls:
            return ToolCallAction(
                calls=tuple(calls), text=normal.strip(), reasoning=reasoning, content=self._outside(normal)
            )
        return AnswerAction(text=normal.strip(), reasoning=reasoning)

    # ------------------------------------------------------------------------------------------ calls

    def _parse_calls(self, text: str) -> list[ToolCall]:
        attempts = self._attempts(text)
        has_call = self._calls.has_tool_call(text) if self._known else bool(attempts)
        if not has_call and not attempts:
            return []
        for index, attempt in enumerate(attempts or (), start=1):
            if attempt.error:
                raise InvalidOutput(f"tool call {index}: {attempt.error}. {self._hint()}")
            if attempt.name not in self._known:
                raise InvalidOutput(f"tool call {index} uses {self._unknown(attempt.name)}")
        if attempts and self._direct_names is not None:
            direct = _read_directly(text, attempts, self._direct_names)
            if direct is not None:
                return direct
        _, items = self._calls.parse_non_stream(text) if self._known else (text, [])
        calls = [self._tool_call(item.name, item.parameters) for item in items]
        expected = len(attempts) if attempts is not None else max(len(calls), 1)
        if len(calls) != expected:
            # Calls this reader read and the detector dropped: named when the whitespace around the
            # format's tags is what made it drop them (CRLF, a tab, a missing line break).
            layout = layout_problem(self.tool_call_parser, text, lambda fixed: self._reads(fixed, expected))
            dropped = f"{expected - len(calls)} of {expected} tool call(s) could not be parsed"
            said = f"{dropped}: {layout}" if layout else dropped
            raise InvalidOutput(f"{said}. {self._hint()}")
        return calls

    def _reads(self, text: str, expected: int) -> bool:
        """Whether SGLang's detector reads `expected` calls of offered names in `text`."""
        _, items = self._calls.parse_non_stream(text)
        return len(items) == expected and all(item.name in self._known for item in items)

    def _check_keys(self, calls: list[ToolCall]) -> None:
        """Raises InvalidOutput for an argument name that is a declared one only as a reader sees it (the
        same after Unicode's compatibility normalization, without invisible characters), not as
        written: `a` + U+200B or a decomposed `café` reached the world as an unknown argument, whose
        error quoted a name that looks like the declared one (or a tool taking **kwargs dropped it)."""
        for call in calls:
            declared = self._properties.get(call.name)
            if not declared:
                continue
            for key in call.arguments:
                if key in declared or key.isascii():
                    continue
                like = next((name for name in declared if reader_form(name) == reader_form(key)), None)
                if like is not None:
                    raise InvalidOutput(
                        f"the argument {quoted(key)} of {quoted(call.name)} differs from the declared "
                        f"{quoted(like)} only in Unicode normalization or invisible characters "
                        f"({ascii(key)[:120]} against {ascii(like)[:120]}): write the name as declared"
                    )

    def _tool_call(self, name: str | None, parameters: str) -> ToolCall:
        if name not in self._known:
            raise InvalidOutput(self._unknown(name))
        try:
            arguments = strict_json(parameters) if parameters else {}
        except json.JSONDecodeError as exc:
            raise InvalidOutput(f"the arguments of '{name}' are not valid JSON ({exc.msg})") from None
        except AmbiguousJSON as exc:
            raise InvalidOutput(f"the arguments of '{name}' are ambiguous: {exc}") from None
        if not isinstance(arguments, dict):
            raise InvalidOutput(f"the arguments of '{name}': {not_an_object(arguments)}")
        return ToolCall(name=name, arguments=arguments)

    def _outside(self, text: str) -> str | None:
        """`text` without its calls (and their block or marker), stripped; None for a format whose calls
        no marker delimits (GLM-4-0414's segments)."""
        if self._call_blocks is None:
            marked = _MARKED_OUTSIDE.get(self.tool_call_parser)
            return marked(text) if marked is not None else None
        for span in self._tagged_spans:
            text = span.sub("", text)
        return text.strip()

    def _escape_hint(self, text: str) -> str:
        """How to write a tag of the format (a call's or the reasoning's) that sits inside a JSON string
        of `text` (an argument `"a</tool_call>b"`): every reader counts tags in the raw text, so the tag
        broke the call; its JSON escape (`\\u003c/tool_call>`) is the same argument and no tag. Empty
        when no tag is inside a string, or the format's arguments are no JSON."""
        if self._format is None or not self._format.json_arguments:
            return ""
        for literal in _JSON_STRING.finditer(text):
            tag = next((tag for tag in self._tags if tag in literal.group()), None)
            if tag is not None:
                escaped = "\\u003c" + tag[1:]
                return f" The tag {tag} is inside a JSON string: write its '<' there as {escaped}."
        return ""

    def _unwritable(self, name: str) -> str | None:
        """Why a call of the tool `name` cannot be written in this format (None: it can): the format's
        own call of it, read back, names another function or none. GLM-4-0414 writes a name then a
        newline, Qwen3-Coder `<function=NAME>`, DeepSeek-V3 `NAME` before a newline, and SGLang drops a
        call of an empty name: a row offering `a b` (GLM-4-0414), `a>b` (Qwen3-Coder), ` ab` (GLM,
        DeepSeek) or `` had every call to it refused as the model's format error, a punishment for the
        data it could never avoid. Judged once per format and name (`_WRITABLE`); a format t3rl cannot
        write (no renderer: SGLang's pythonic) is not judged."""
        if self._format is None:
            return None
        key = (self.tool_call_parser, name)
        if key not in _WRITABLE:
            try:
                # The name as the prompt shows it (scalar text: a lone surrogate is U+FFFD there, so no
                # model can write it, even as a JSON escape it never saw).
                shown = ToolCall(scalar_text(name), {})
                read = self._parse_calls(render_calls(self.tool_call_parser, [shown]))
                problem = None if [call.name for call in read] == [name] else f"reads back as {read!r}"
            except InvalidOutput as exc:
                problem = str(exc)
            # Scalar text: it quotes the offered names, which a log or a record must hold.
            _WRITABLE[key] = problem and scalar_text(
                f"the tool name {quoted(name)} cannot be written in the {self.tool_call_parser} call "
                f"format (its call reads back: {problem[:200]}): rename it when the data is prepared"
            )
            if len(_WRITABLE) > _TOOLS_KEPT:
                _WRITABLE.pop(next(iter(_WRITABLE)))
        return _WRITABLE[key]

    def _unknown(self, name: str | None) -> str:
        """The error of a call to `name`, no function offered. A name that folds to an offered one (case,
        Unicode normalization, compatibility forms, invisible characters) is said so, with both names'
        code points: `unknown function 'café'; available functions: café` showed the model two names
        that look the same (NFD against NFC)."""
        error = (
            f"an unknown function {quoted(name)}; available functions: {', '.join(self.tool_names) or 'none'}"
        )
        folded = _folded(name or "")
        like = next((offered for offered in self.tool_names if _folded(offered) == folded), None)
        if like is None:
            return error
        points = f"{ascii(name)[:120]} against {ascii(like)[:120]}"
        return (
            f"{error}. It differs from the offered {quoted(like)} only in case, Unicode normalization or "
            f"invisible characters ({points}): write the name as offered"
        )

    def _hint(self) -> str:
        if self._format is None:
            return f"Write tool calls in the {self.tool_call_parser} format."
        example = ToolCall(
            name=self.tool_names[0] if self.tool_names else "function_name", arguments={"argument": "value"}
        )
        return f"Write each tool call exactly like this: {render_calls(self.tool_call_parser, [example])}"

    def _attempts(self, text: str) -> list[_Attempt] | None:
        """Every call the text attempts, read independently of SGLang; None when the format has no reader."""
        fmt = self._format
        if fmt is None:
            return None
        if fmt.call_open and fmt.call_close:
            for opener, closer in ((fmt.call_open, fmt.call_close), (fmt.block_open, fmt.block_close)):
                if opener and closer and text.count(opener) != text.count(closer):
                    counts = f"{text.count(opener)} {opener} but {text.count(closer)} {closer}"
                    raise InvalidOutput(f"unbalanced tags: {counts}. {self._hint()}")
            if not all(_alternate(order, text) for order in self._tag_orders):
                raise InvalidOutput(f"tool call tags are nested or out of order. {self._hint()}")
            # A block that opens a group of calls and holds none: the model announced calls it never made.
            blocks = self._tagged_spans[0].findall(text) if len(self._tagged_spans) == 2 else []
            if any(fmt.call_open not in block for block in blocks):
                raise InvalidOutput(f"a block of tool calls holds no call. {self._hint()}")
            assert self._call_blocks is not None
            return [_read_block(self.tool_call_parser, block) for block in self._call_blocks.findall(text)]
        if self.tool_call_parser == "llama3":
            return _read_llama3(text, self._known)
        if self.tool_call_parser == "glm4_0414":
            return _read_glm4_0414(text, self._known)
        if self.tool_call_parser == "mistral":
            return _read_mistral(text)
        return None


def _schema_properties(tool: Mapping[str, Any]) -> Any:
    function = tool.get("function", tool)
    parameters = function.get("parameters") if isinstance(function, Mapping) else None
    return parameters.get("properties") if isinstance(parameters, Mapping) else None


def reader_form(name: str) -> str:
    """`name` as a reader sees it: compatibility-normalized, without format characters (case kept)."""
    return "".join(c for c in unicodedata.normalize("NFKC", name) if unicodedata.category(c) != "Cf")


def _folded(name: str) -> str:
    """`name` as a reader would see it: compatibility-normalized, case-folded, without format characters
    (zero-width spaces and joiners, direction marks)."""
    folded = unicodedata.normalize("NFKC", name).casefold()
    return "".join(c for c in folded if unicodedata.category(c) != "Cf")


def _alternate(order: re.Pattern[str], text: str) -> bool:
    """Whether a pair's tags (`order` captures the opener) alternate in `text`, an opener first: each
    tag in text order is the opener's text (a non-empty capture) at even places, "" at odd ones."""
    tags = order.findall(text)
    return all(tags[0::2]) and not any(tags[1::2])


def _index_tools_once(detector: Any, tools: list[Any]) -> None:
    """SGLang's detectors rebuild their name → position index of the tools on every parse (~20 µs for a
    BFCL tool list); this parser always hands them the same list, so the index is built here once and
    each parse gets a copy of it (a detector may keep or change what it gets). Any other list is indexed
    as SGLang does."""
    build = detector._get_tool_indices
    index = build(tools)

    def tool_indices(given: list[Any]) -> dict[str, int]:
        return dict(index) if given is tools else build(given)

    detector._get_tool_indices = tool_indices


# Qwen2.5's tags: SGLang's detector reads the JSON between "<tool_call>\n" and "\n</tool_call>".
_QWEN25_TAGS = ("<tool_call>", "</tool_call>")


def _direct_names(sglang: Any, calls: Any, fmt: CallFormat | None, tools: list[Any]) -> frozenset[str] | None:
    """The names SGLang's Qwen2.5 detector (`calls.detector`, exactly that class) keeps a call of, when
    this parser's reading of the calls gives what it gives (`_read_directly`); None for any other."""
    detector = calls.detector
    if type(detector) is not sglang.FunctionCallParser.ToolCallParserEnum.get("qwen25") or fmt is None:
        return None
    opener, closer = _QWEN25_TAGS
    if (fmt.call_open, fmt.call_close, fmt.block_open) != (opener, closer, None):
        return None
    if (detector.bot_token, detector.eot_token) != (opener + "\n", "\n" + closer):
        return None
    names = frozenset(tool.function.name for tool in tools if tool.function.name)
    return names or None


def _read_directly(text: str, attempts: list[_Attempt], names: frozenset[str]) -> list[ToolCall] | None:
    """The calls of a Qwen2.5 text from this parser's one strict reading of each block (`_attempts`,
    every block read without error), when SGLang's detector and t3rl's reading of what it hands back
    provably give the same calls; None otherwise (then both run). They do when:
    - each "<tool_call>" is followed and each "</tool_call>" preceded by a newline: the tags alternate
      (`_attempts`), so the detector's lazy "<tool_call>\n(.*?)\n</tool_call>" finds the same blocks,
      whose stripped text is the one read here;
    - every name is one the detector keeps (a tool's non-empty name);
    - no number is infinite: the strict reading refuses a literal beyond a float's range (which the
      detector would write back with json.dumps as Infinity).
    The strict reading (no key twice, no NaN) reads the block as json.loads does, and json.dumps then
    the strict reading of the arguments gives back an equal object. tests/parsers/test_direct_calls.py
    compares the two on generated texts."""
    opener, closer = _QWEN25_TAGS
    count = len(attempts)
    if text.count(opener + "\n") != count or text.count("\n" + closer) != count:
        return None
    calls = []
    for attempt in attempts:
        if attempt.name not in names or attempt.arguments is None:
            return None
        calls.append(ToolCall(name=attempt.name, arguments=attempt.arguments))
    return calls


def _read_json_call(payload: str, arguments_keys: tuple[str, ...]) -> _Attempt:
    try:
        obj = strict_json(payload)
    except json.JSONDecodeError as exc:
        return _Attempt(None, f"invalid JSON ({exc.msg} at character {exc.pos})")
    except AmbiguousJSON as exc:
        return _Attempt(None, f"ambiguous JSON: {exc}")
    return _json_call(obj, arguments_keys)


def not_an_object(arguments: Any) -> str:
    """The error of a call's arguments that are no JSON object: the arguments written as a string that
    holds an object (OpenAI's messages keep them so, and a model trained on them writes it) are said
    to be that, with the fix; any other value is named by its JSON type."""
    if isinstance(arguments, str):
        try:
            inner = strict_json(arguments)
        except (json.JSONDecodeError, AmbiguousJSON):
            inner = None
        if isinstance(inner, dict):
            return (
                f"the arguments must be a JSON object, but they are a string holding one "
                f"({quoted(arguments)}): write the object itself, without the quotes and escapes"
            )
    kind = {str: "a string", list: "a list", type(None): "null", bool: "a boolean"}.get(
        type(arguments), "a number"
    )
    return f"the arguments must be a JSON object, not {kind}"


def _call_shape(obj: Any) -> str:
    """Why the JSON value of a call is no call: what was written, against the one shape read."""
    wanted = 'expected a JSON object with a "name" string'
    if isinstance(obj, list):
        return f'{wanted}, not a list: write each call as its own {{"name": …}} object'
    if isinstance(obj, dict):
        function = obj.get("function")
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            return (
                f'{wanted}: the call is wrapped in "function" (the form of a chat message\'s '
                'tool_calls): write the inner {"name": …, "arguments": …} object itself'
            )
        if isinstance(function, str):
            return f'{wanted}: the function is named under "function" where the format reads "name"'
    return wanted


def _json_call(obj: Any, arguments_keys: tuple[str, ...]) -> _Attempt:
    """A call read as a JSON value: a name, and its arguments under exactly one of `arguments_keys`
    (SGLang takes "parameters" before "arguments" where both are written, a reader of the call's text
    the other)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return _Attempt(None, _call_shape(obj))
    written = [key for key in arguments_keys if key in obj]
    if len(written) > 1:
        return _Attempt(obj["name"], f'write the arguments once, under "{arguments_keys[0]}" only')
    arguments = obj[written[0]] if written else {}
    if not isinstance(arguments, dict):
        return _Attempt(obj["name"], not_an_object(arguments))
    return _Attempt(obj["name"], arguments=arguments)


def _read_block(parser_name: str, block: str) -> _Attempt:
    """Name and JSON validity of one tagged call block."""
    if parser_name in ("qwen25", "qwen", "hermes"):
        return _read_json_call(block.strip(), ("arguments", "parameters"))
    if parser_name in ("deepseekv3", "deepseekv31"):
        name, sep, payload = block.partition("<｜tool▁sep｜>")
        if not sep:
            return _Attempt(None, "missing <｜tool▁sep｜> before the arguments")
        if parser_name == "deepseekv3":  # function<｜tool▁sep｜>NAME\n```json\nARGS\n```
            name, newline, payload = payload.partition("\n")
            if not newline and "```" in name:
                # `add```json{…}```` on one line: the name took the fence and the arguments with it, and
                # the error said "invalid JSON" of a name the model wrote right.
                return _Attempt(
                    name.partition("```")[0].strip(),
                    "the function name must end its line: write the name, a newline, then ```json, a "
                    "newline and the arguments",
                )
            payload = payload.strip().removeprefix("```json").removesuffix("```")
        try:
            arguments = strict_json(payload)
        except json.JSONDecodeError as exc:
            return _Attempt(name.strip(), f"invalid JSON arguments ({exc.msg})")
        except AmbiguousJSON as exc:
            return _Attempt(name.strip(), f"ambiguous JSON arguments: {exc}")
        # As in every JSON format (`_json_call`): the arguments are an object. SGLang's DeepSeek
        # detectors read `null` as no arguments ({}), a call the model did not write.
        if not isinstance(arguments, dict):
            return _Attempt(name.strip(), not_an_object(arguments))
        return _Attempt(name.strip())
    if parser_name == "qwen3_coder":
        match = re.search(r"<function=([^>\n]*)>", block)
        if not match:
            return _Attempt(None, "missing <function=NAME>")
        return _named_arguments(match.group(1).strip(), re.findall(r"<parameter=([^>\n]*)>", block))
    name = block.split("<arg_key>", 1)[0].strip()  # GLM: <tool_call>NAME<arg_key>…
    if not name:
        return _Attempt(None, "missing function name")
    return _named_arguments(name, re.findall(r"<arg_key>(.*?)</arg_key>", block, re.DOTALL))


def _named_arguments(name: str, keys: list[str]) -> _Attempt:
    """A call of a tagged-arguments format: an argument named twice is refused, as in JSON."""
    keys = [key.strip() for key in keys]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        return _Attempt(name, f"the argument {', '.join(map(quoted, twice[:3]))} is written twice")
    return _Attempt(name)


def _read_mistral(text: str) -> list[_Attempt]:
    """Mistral's `[TOOL_CALLS] [{...}, …]`: each call of the list (SGLang reads the list with Python's
    JSON, where a key written twice is its last value); [] when the text has no `[TOOL_CALLS]`."""
    _, tag, after = text.partition("[TOOL_CALLS]")
    if not tag:
        return []
    # One list holds every call: SGLang reads the first, and a second `[TOOL_CALLS] [...]` was dropped
    # (its calls never ran, and nothing told the model).
    if after.count("[TOOL_CALLS]"):
        lists = after.count("[TOOL_CALLS]") + 1
        return [_Attempt(None, f"write every call in one [TOOL_CALLS] list, not {lists} [TOOL_CALLS] lists")]
    try:
        calls, _ = STRICT_JSON.raw_decode(after.lstrip())
    except json.JSONDecodeError as exc:
        return [_Attempt(None, f"invalid JSON ({exc.msg} at character {exc.pos})")]
    except AmbiguousJSON as exc:
        return [_Attempt(None, f"ambiguous JSON: {exc}")]
    if not isinstance(calls, list) or not calls:
        return [_Attempt(None, "expected a non-empty JSON list of calls after [TOOL_CALLS]")]
    return [_json_call(call, ("arguments", "parameters")) for call in calls]


def _mistral_outside(text: str) -> str:
    """The text around Mistral's one `[TOOL_CALLS] [...]` list (read whole before: the calls parsed)."""
    before, _, after = text.partition("[TOOL_CALLS]")
    rest = after.lstrip()
    _, end = STRICT_JSON.raw_decode(rest)
    return (before + rest[end:]).strip()


def _llama3_outside(text: str) -> str:
    """The text before Llama-3's `<|python_tag|>` (its reader refuses any after the last call); a turn
    of calls without the tag is calls only."""
    before, tag, _ = text.partition("<|python_tag|>")
    return before.strip() if tag else ""


# The text outside the calls of a format whose calls follow a marker: before, the text around them was
# no content (None), so a world's check of the text beside a call (tau2's strict format: "Text outside
# the tool call.") passed `Sure. [TOOL_CALLS] [...]` and `[TOOL_CALLS] [...] The answer is 3.` under
# Mistral, and `Sure.<|python_tag|>{...}` under Llama-3, while every tagged format refused them.
_MARKED_OUTSIDE = {"mistral": _mistral_outside, "llama3": _llama3_outside}


def _read_glm4_0414(text: str, known: set[str]) -> list[_Attempt]:
    """GLM-4-0414's segments (t3rl_core.parsers.glm4_0414): each call, and each segment that is an
    offered function's name then one JSON value other than an object (`add\\n[1, 2]`, `add\\nnull`):
    a call whose arguments are no object, which the detector would read as text (an answer) and every
    other JSON format refuses (`_json_call`), or an object after another line break than one newline
    (`add\\r\\n{…}`, a blank line), which the detector does not read either. A segment of any other
    text is text."""
    from t3rl_core.parsers.glm4_0414 import segments  # lazy: only GLM-4-0414's parsers read them

    attempts = []
    for segment in segments(text):
        if segment.name is not None:
            attempts.append(_Attempt(segment.name))
            continue
        glued = _GLM4_0414_GLUED.fullmatch(segment.text.strip())
        if glued is not None and glued.group(1) in known and _json_object(glued.group(3)):
            # `add{"a": 1}`: no line break at all, which the detector reads as text (an answer).
            attempts.append(_Attempt(glued.group(1), _separated(glued.group(1), glued.group(2))))
            continue
        name, newline, rest = segment.text.strip().partition("\n")
        if not newline or name.strip() not in known:
            called = _trailing_calls(segment.text.strip(), _GLM4_0414_LINE_CALL, _glm4_0414_call, known)
            if called is not None:
                problem = (
                    "a call written after text: GLM-4-0414 writes each call as its own segment, the "
                    "function name on its first line; drop the text before it, or write <|assistant|> "
                    "between the text and the call"
                )
                attempts.append(_Attempt(called, problem))
            continue
        try:
            value = strict_json(rest.strip())
        except (json.JSONDecodeError, AmbiguousJSON):
            continue
        if isinstance(value, dict):
            # An object the detector did not read: the line between the name and it is not one "\n"
            # (a "\r\n", a blank line). The error said "must be a JSON object" of an object.
            between = name[len(name.rstrip()) :] + newline + rest[: len(rest) - len(rest.lstrip())]
            attempts.append(_Attempt(name.strip(), _separated(name.strip(), between)))
            continue
        attempts.append(_Attempt(name.strip(), "the arguments must be a JSON object"))
    return attempts


# GLM-4-0414's name and JSON object on one line (no line break between them).
_GLM4_0414_GLUED = re.compile(r"([^\s{}<>\"]+)([ \t]*)(\{.*)", re.DOTALL)


def _separated(name: str, between: str) -> str:
    """The error of a GLM-4-0414 call whose name and object are separated by `between`, not one newline."""
    return (
        f"the name {quoted(name)} and its JSON object are separated by {between!r}: "
        "write the name, one newline ('\\n') and the object, nothing else between them"
    )


def _json_object(text: str) -> bool:
    try:
        return isinstance(strict_json(text.strip()), dict)
    except (json.JSONDecodeError, AmbiguousJSON):
        return False


# What counts as a call inside an answer, in the formats whose call is the whole turn (Llama-3 without
# its tag, a GLM-4-0414 segment): the turn's text ends, from the start of a line, with calls of offered
# functions that the format's reader reads without error. The detector reads such a turn as an answer
# holding the call's text, the world ended the turn on it, and nothing told the model why its call never
# ran. Text that quotes JSON (no offered name, or more text after it) stays an answer. Only the last
# few line starts are tried: each try reads the rest of the turn.
_TRIED_LINE_STARTS = 8
_LLAMA3_LINE_CALL = re.compile(r"\n[ \t]*(?=\{)")
_GLM4_0414_LINE_CALL = re.compile(r"\n[ \t]*(?=[^\s{}<>\"]+[ \t]*\n[ \t]*\{)")


def _trailing_calls(text: str, line_starts: re.Pattern[str], read: Any, known: set[str]) -> str | None:
    """The name of the first call that ends `text` after text of its own (`read` gives the attempts
    of the text from a line start), or None."""
    for start in [match.end() for match in line_starts.finditer(text)][-_TRIED_LINE_STARTS:]:
        if not text[:start].strip():
            continue
        attempts = read(text[start:].strip())
        if attempts and all(attempt.error is None and attempt.name in known for attempt in attempts):
            return attempts[0].name
    return None


def _glm4_0414_call(text: str) -> list[_Attempt]:
    """The one call a GLM-4-0414 segment of `text` is (its name, one newline, a JSON object), or []."""
    from t3rl_core.parsers.glm4_0414 import segments  # lazy: only GLM-4-0414's parsers read them

    found = segments(text)
    if len(found) != 1 or found[0].name is None:
        return []
    try:
        arguments = strict_json(found[0].arguments)
    except (json.JSONDecodeError, AmbiguousJSON):
        return []
    return [_Attempt(found[0].name)] if isinstance(arguments, dict) else []


def _read_llama3(text: str, known: set[str]) -> list[_Attempt]:
    """Llama-3 JSON calls: `{...}; {...}`, optionally after <|python_tag|>; [] when the text is an
    answer, a call after text of its own refused (`_trailing_calls`)."""
    _, tag, after = text.partition("<|python_tag|>")
    payload = (after if tag else text).strip()
    if not tag and not payload.startswith("{"):
        name = _trailing_calls(payload, _LLAMA3_LINE_CALL, _llama3_calls, known)
        if name is None:
            return []
        problem = (
            "a call written after text: Llama-3's call is the whole turn; write the call alone, or "
            "write <|python_tag|> between the text and the call"
        )
        return [_Attempt(name, problem)]
    if not payload:
        return [_Attempt(None, "no call after <|python_tag|>")]
    return _llama3_calls(payload)


def _llama3_calls(payload: str) -> list[_Attempt]:
    """The calls of Llama-3's `{...}; {...}` (`payload` stripped, not empty)."""
    attempts: list[_Attempt] = []
    position = 0
    while position < len(payload):
        try:
            obj, end = STRICT_JSON.raw_decode(payload, position)
        except json.JSONDecodeError as exc:
            attempts.append(_Attempt(None, f"invalid JSON ({exc.msg} at character {exc.pos})"))
            return attempts
        except AmbiguousJSON as exc:
            attempts.append(_Attempt(None, f"ambiguous JSON: {exc}"))
            return attempts
        attempt = _json_call(obj, ("parameters", "arguments"))
        attempts.append(attempt)
        rest = payload[end:].lstrip()
        if rest and not rest.startswith(";"):
            attempts.append(_Attempt(None, 'separate calls with ";" and write nothing after the last call'))
            return attempts
        position = len(payload) - len(rest.removeprefix(";").lstrip())
    return attempts
