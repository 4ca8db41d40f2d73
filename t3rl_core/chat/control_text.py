"""Control tokens written as text by anything but the model: encoded as text, never as control tokens.

A tokenizer parses its added tokens (`<|im_end|>`, `<|im_start|>`, `<tool_call>`, `</think>`, GLM's
`<|user|>`) wherever their text occurs in its input. A tool's output, a user simulator's reply or a
dataset's question that holds such a text would otherwise put the control token into the trajectory:
a turn boundary, a role or a tool call the chat template never wrote, which the model then reads (and
is trained next to) as the conversation's structure. Only the model's own turns (assistant messages,
the ids it sampled) may hold control tokens; every other message's content, and an env's inline text,
is encoded with each control token's text cut after its first character, so the tokenizer reads it as
ordinary text (the same characters; its ids decode to the same text).

Messages are rendered with each such text in a content replaced by `_HIDDEN` (a Unicode noncharacter,
which no template writes), so the template still writes its own control tokens around the content;
the rendered text is then encoded piece by piece, each hidden text as ordinary text in its place.
A tool list's texts (names, descriptions, parameter docs) are hidden the same way, each as a marker
naming the text (`hide_value`), since a template renders them where it likes (a system block before
or after the system message's content, a user turn), not in the order of the messages.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from t3rl_core.types import Message

# Stands in for a hidden text in a rendered conversation (U+FDD0: reserved by Unicode for internal use).
_HIDDEN = "\ufdd0"
# Delimits a hidden text of a tool list (`_MARK` + its index in `ControlText._marked` + `_MARK`): a
# noncharacter too, hidden like `_HIDDEN` wherever else it occurs, so every one in a render is a marker.
_MARK = "\ufdd1"
# The one role whose content may hold control tokens: the model's own.
_MODEL_ROLE = "assistant"
# Up to this many distinct first characters of the added tokens, a text is first scanned for each of
# them (`in`, a memchr-like scan) and searched only when it holds one: a tokenizer's added tokens start
# with one or two characters ('<', '['), which most tool outputs and questions lack, besides the two
# noncharacters.
_FIRST_CHARS = 5


class ControlText:
    """The added tokens of one tokenizer, and how text that must not hold them is encoded."""

    def __init__(
        self,
        added_tokens: Iterable[str],
        encode: Callable[[str], list[int]],
        turn_tokens: Callable[[], Iterable[str]] = tuple,
    ) -> None:
        """`turn_tokens`: the texts of the tokens that end or open a turn (the template's own, around
        messages), asked for once, when an assistant message that is not the model's holds one."""
        # One-character added tokens cannot be cut; a tokenizer with one has it parsed wherever it occurs.
        tokens = sorted({token for token in added_tokens if len(token) > 1}, key=len, reverse=True)
        self._tokens = frozenset(tokens)
        self._encode = encode
        self._turn_tokens = turn_tokens
        self._turn_find: re.Pattern[str] | None = None
        alternatives = "|".join(map(re.escape, tokens))
        # What `hide` replaces (longest first, leftmost), and where any token starts (overlaps too).
        self._find = re.compile("|".join(filter(None, (alternatives, f"[{_HIDDEN}{_MARK}]"))))
        self._starts = re.compile(f"(?=(?:{alternatives}))") if tokens else None
        firsts = {token[0] for token in tokens} | {_HIDDEN, _MARK}
        self._firsts = tuple(sorted(firsts)) if len(firsts) <= _FIRST_CHARS else None
        # A rendered placeholder: a message's hidden text (the next of `hide`'s list) or a tool's marker.
        self._placeholders = re.compile(f"{_HIDDEN}|{_MARK}([0-9]+){_MARK}")
        # Whether each token's text is written as it is inside a JSON string (orjson escapes only '"', '\\'
        # and U+0000-U+001F): then a JSON text holds a token's text wherever one of its strings does.
        self._json_verbatim = all(orjson.dumps(token)[1:-1] == token.encode() for token in tokens)
        # The texts tools' markers name (added tokens' texts and the noncharacters: a bounded set).
        self._marked: list[str] = []
        self._marks: dict[str, str] = {}

    def hide(
        self,
        messages: Sequence[Message],
        env_spans: Mapping[int, Sequence[tuple[int, int]]] | None = None,
        model_turns: Collection[int] | None = None,
    ) -> tuple[list[Message], list[str]]:
        """`messages` with every control token's text (and any `_HIDDEN`) in a content other than the
        model's replaced by `_HIDDEN`, and the texts replaced, in order. In the model's contents, each
        `_HIDDEN` it wrote is replaced too (so that the placeholders of a render are exactly the hidden
        texts), and so is each of `env_spans` (message index → [start, end) character spans of an
        env's inline text the episode spliced into the model's turn), whole: the episode encoded each
        on its own, as text. `model_turns`: the indices of the model's own (sampled) assistant messages,
        None when every assistant message is. An assistant message that is not the model's (a row's
        few-shot turn, a world's message) keeps the tags a model writes inside its turn (a few-shot
        `<tool_call>`, as the model writes it) but not a token that ends or opens a turn: its
        `<|im_end|><|im_start|>user` forged a turn boundary no template writes inside a message, and is
        encoded as text. A message's other texts that are not the model's (a few-shot call's name and
        arguments, its reasoning_content, a tool message's name), which a template renders where it
        likes, have each control token's text as a marker naming it (`hide_value`): a few-shot call's
        arguments holding `<|im_end|>` forged a turn as its content did. Messages without any of these
        are the same objects."""
        hidden: list[str] = []
        masked: list[Message] = []
        for index, message in enumerate(messages):
            own = model_turns is None or index in model_turns
            if (
                isinstance(message, Mapping)
                and len(message) > 2
                and not (own and message.get("role") == _MODEL_ROLE)
            ):
                message = self._hide_fields(message)
            content = message.get("content") if isinstance(message, Mapping) else None
            if not isinstance(content, str):
                masked.append(message)
            elif message.get("role") == _MODEL_ROLE and not own:
                turns = self._turns()
                if self._may_hold(content) and turns.search(content) is not None:
                    hidden.extend(turns.findall(content))
                    masked.append({**message, "content": turns.sub(_HIDDEN, content)})
                else:
                    masked.append(message)
            elif message.get("role") == _MODEL_ROLE:
                spans = (env_spans or {}).get(index, ())
                if not spans and _HIDDEN not in content and _MARK not in content:
                    masked.append(message)
                    continue
                masked.append({**message, "content": _hide_spans(content, spans, hidden)})
            elif self.holds_control_text(content):
                hidden.extend(self._find.findall(content))
                masked.append({**message, "content": self._find.sub(_HIDDEN, content)})
            else:
                masked.append(message)
        return masked, hidden

    def _hide_fields(self, message: Message) -> Message:
        """`message` with its texts besides its role and content hidden by `hide_value`; itself when
        they hold no control token's text."""
        fields = {key: value for key, value in message.items() if key not in ("role", "content")}
        shown = self.hide_value(fields)
        return message if shown is fields else {**message, **shown}

    def _turns(self) -> re.Pattern[str]:
        """What an assistant message that is not the model's may not hold: a turn's tokens, the
        noncharacters (probed once)."""
        if self._turn_find is None:
            turn = sorted(self._tokens.intersection(self._turn_tokens()), key=len, reverse=True)
            self._turn_find = re.compile("|".join((*map(re.escape, turn), f"[{_HIDDEN}{_MARK}]")))
        return self._turn_find

    def hide_value(self, value: Any) -> Any:
        """`value` (a tool: dicts, lists, strings) with every control token's text in its keys and
        strings replaced by a marker naming it; `value` itself when it holds none."""
        if isinstance(value, str):
            return self._find.sub(self._mark, value) if self.holds_control_text(value) else value
        if isinstance(value, Mapping):
            items = [(self.hide_value(key), self.hide_value(item)) for key, item in value.items()]
            if all(a is key and b is item for (a, b), (key, item) in zip(items, value.items(), strict=True)):
                return value
            return dict(items)
        if isinstance(value, list | tuple):
            hidden = [self.hide_value(item) for item in value]
            return value if all(a is b for a, b in zip(hidden, value, strict=True)) else hidden
        return value

    def json_shows_none(self, text: str) -> bool:
        """Whether `text`, orjson's JSON of a value, proves that `hide_value` leaves that value as it is:
        no string in it holds a control token's text or a noncharacter (searched in the whole text at
        C speed; a match across two strings only sends the value to `hide_value`). False whenever a
        token's text holds a character JSON escapes, which a string's JSON would then not show."""
        return self._json_verbatim and not self.holds_control_text(text)

    def _mark(self, match: re.Match[str]) -> str:
        text = match.group()
        mark = self._marks.get(text)
        if mark is None:
            self._marked.append(text)
            mark = self._marks[text] = f"{_MARK}{len(self._marked) - 1}{_MARK}"
        return mark

    def marked(self, text: str) -> bool:
        """Whether a render holds a tool's hidden text (`hide_value`)."""
        return _MARK in text

    def encode_rendered(self, text: str, hidden: Sequence[str]) -> list[int]:
        """The ids of `text`, a render of `hide`'s messages (and `hide_value`'s tools): the template's
        text as the tokenizer reads it, each hidden text as ordinary text in its place."""
        ids: list[int] = []
        at = used = 0
        for match in self._placeholders.finditer(text):
            ids += self._encode(text[at : match.start()])
            if match.group(1) is not None:
                ids += self.encode_text(self._marked[int(match.group(1))])
            elif used < len(hidden):
                ids += self.encode_text(hidden[used])
                used += 1
            else:
                used += 1
            at = match.end()
        if used != len(hidden):
            raise ValueError(
                f"the chat template rendered {used} of {len(hidden)} control-token texts of the "
                "messages' contents: it must render each non-assistant content once, in order"
            )
        return ids + self._encode(text[at:])

    def encode_text(self, text: str) -> list[int]:
        """The ids of `text` with every control token's text in it encoded as ordinary text."""
        if self._starts is None or not self._may_hold(text):
            return self._encode(text)
        cuts = [match.start() + 1 for match in self._starts.finditer(text)]
        if not cuts:
            return self._encode(text)
        ids: list[int] = []
        for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True):
            ids += self._encode(text[start:end])
        return ids

    def holds_control_text(self, text: str) -> bool:
        return self._may_hold(text) and self._find.search(text) is not None

    def _may_hold(self, text: str) -> bool:
        """False only when `text` lacks every added token's first character (then it holds none)."""
        return self._firsts is None or any(first in text for first in self._firsts)


_NONCHARACTERS = re.compile(f"[{_HIDDEN}{_MARK}]")


def _hide_spans(content: str, spans: Sequence[tuple[int, int]], hidden: list[str]) -> str:
    """A model's `content` with each of `spans` and each `_HIDDEN` or `_MARK` elsewhere replaced by
    `_HIDDEN`; the replaced texts are appended to `hidden` in order."""
    pieces: list[str] = []
    at = 0
    for start, end in [*sorted(spans), (len(content), len(content))]:
        own = content[at:start]
        hidden.extend(_NONCHARACTERS.findall(own))
        pieces.append(_NONCHARACTERS.sub(_HIDDEN, own))
        if start < end:
            hidden.append(content[start:end])
            pieces.append(_HIDDEN)
        at = max(at, end)
    return "".join(pieces)


def added_tokens(tokenizer: Any) -> list[str]:
    """Every added token's text of a tokenizer (special or not: `<tool_call>` as well as `<|im_end|>`)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        return [token.content for token in backend.get_added_tokens_decoder().values()]
    return list(tokenizer.get_added_vocab())
