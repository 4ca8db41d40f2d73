"""What t3rl knows about each chat-format family: its control tokens, how a turn ends, its parsers."""

from __future__ import annotations

from t3rl_core.records import Record


# A Record, not a frozen dataclass: a cold plan/validate imports this module, and a frozen dataclass's
# methods are compiled from text when its class is created (~3 M instructions; a Record ~0.15 M).
class Family(Record):
    """One model family's chat format (the template itself is `templates/<name>.jinja`)."""

    name: str
    # Control tokens of the format (role markers, turn ends): special tokens of the tokenizer.
    special_tokens: tuple[str, ...]
    # Format tags the model writes as text (tool-call and reasoning tags): added, non-special tokens.
    tag_tokens: tuple[str, ...]
    # Tokens that end an assistant turn: sampling stops on them.
    stop_tokens: tuple[str, ...]
    bos_token: str | None
    eos_token: str
    pad_token: str
    # SGLang parser names that read this family's output.
    tool_call_parser: str
    reasoning_parser: str | None
    # Text a model of the family writes first in each of its turns (GLM writes the role's newline).
    turn_prefix: str = ""
    # The token ending a turn that calls tools, when it differs from stop_tokens[0] (GLM: <|observation|>).
    tool_turn_stop: str | None = None
    # Text a model writes first in a turn that calls tools, when it differs from turn_prefix (GLM-4-0414
    # writes the function name right after <|assistant|>, an answer after a newline).
    call_turn_prefix: str | None = None


_QWEN_TAGS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")
_THINK_TAGS = ("<think>", "</think>")
# GLM-4's control tokens, shared by its GLM-4.5-style and native (0414) call formats.
_GLM_SPECIAL = (
    "<|endoftext|>", "[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>"
)  # fmt: skip

FAMILIES: dict[str, Family] = {
    family.name: family
    for family in (
        Family(
            name="qwen3",
            special_tokens=("<|endoftext|>", "<|im_start|>", "<|im_end|>"),
            tag_tokens=_QWEN_TAGS + _THINK_TAGS,
            stop_tokens=("<|im_end|>", "<|endoftext|>"),
            bos_token=None,
            eos_token="<|im_end|>",
            pad_token="<|endoftext|>",
            tool_call_parser="qwen25",
            reasoning_parser="qwen3",
        ),
        Family(
            name="qwen2_5",
            special_tokens=("<|endoftext|>", "<|im_start|>", "<|im_end|>"),
            tag_tokens=_QWEN_TAGS,
            stop_tokens=("<|im_end|>", "<|endoftext|>"),
            bos_token=None,
            eos_token="<|im_end|>",
            pad_token="<|endoftext|>",
            tool_call_parser="qwen25",
            reasoning_parser=None,
        ),
        Family(
            name="llama3",
            special_tokens=(
                "<|begin_of_text|>",
                "<|end_of_text|>",
                "<|start_header_id|>",
                "<|end_header_id|>",
                "<|eot_id|>",
                "<|eom_id|>",
                "<|python_tag|>",
            ),
            tag_tokens=(),
            stop_tokens=("<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"),
            bos_token="<|begin_of_text|>",
            eos_token="<|eot_id|>",
            pad_token="<|end_of_text|>",
            tool_call_parser="llama3",
            reasoning_parser=None,
        ),
        Family(
            name="glm4",
            special_tokens=_GLM_SPECIAL,
            tag_tokens=(*_QWEN_TAGS, *_THINK_TAGS, "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"),
            stop_tokens=("<|user|>", "<|observation|>", "<|endoftext|>"),
            bos_token=None,
            eos_token="<|endoftext|>",
            pad_token="<|endoftext|>",
            tool_call_parser="glm45",
            reasoning_parser="glm45",
            turn_prefix="\n",
            tool_turn_stop="<|observation|>",
        ),
        Family(
            # GLM-4-0414's native format (GLM-4-9B-0414): calls as `NAME\n{json}` assistant segments.
            name="glm4_0414",
            special_tokens=_GLM_SPECIAL,
            tag_tokens=(),
            stop_tokens=("<|user|>", "<|observation|>", "<|endoftext|>"),
            bos_token=None,
            eos_token="<|endoftext|>",
            pad_token="<|endoftext|>",
            tool_call_parser="glm4_0414",
            reasoning_parser=None,
            turn_prefix="\n",
            tool_turn_stop="<|observation|>",
            call_turn_prefix="",
        ),
        Family(
            name="deepseek_v3",
            special_tokens=(
                "<｜begin▁of▁sentence｜>",
                "<｜end▁of▁sentence｜>",
                "<｜User｜>",
                "<｜Assistant｜>",
                "<｜tool▁calls▁begin｜>",
                "<｜tool▁calls▁end｜>",
                "<｜tool▁call▁begin｜>",
                "<｜tool▁call▁end｜>",
                "<｜tool▁sep｜>",
                "<｜tool▁outputs▁begin｜>",
                "<｜tool▁outputs▁end｜>",
                "<｜tool▁output▁begin｜>",
                "<｜tool▁output▁end｜>",
            ),
            tag_tokens=_THINK_TAGS,
            stop_tokens=("<｜end▁of▁sentence｜>",),
            bos_token="<｜begin▁of▁sentence｜>",
            eos_token="<｜end▁of▁sentence｜>",
            pad_token="<｜end▁of▁sentence｜>",
            tool_call_parser="deepseekv3",
            reasoning_parser=None,
        ),
    )
}


def family(name: str) -> Family:
    """The family named `name`, with a clear error listing the known ones."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(f"unknown chat family '{name}'; known: {', '.join(sorted(FAMILIES))}") from None


def detect_family(vocab: dict[str, int]) -> Family | None:
    """The family whose turn-ending tokens a tokenizer's vocabulary holds (for its own template)."""
    for candidate in FAMILIES.values():
        if all(token in vocab for token in candidate.stop_tokens):
            return candidate
    return None
