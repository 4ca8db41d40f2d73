"""SGLang's parser names (sglang 0.5.23), known without importing SGLang, and which fit each family.

Importing SGLang's parser registries takes seconds (it loads torch through xgrammar), too slow for
`t3rl validate`. These static lists are checked against the real registries by
tests/launch/test_sglang_names.py, so an SGLang upgrade that renames a parser fails CI, not a run.
"""

from __future__ import annotations

from t3rl_core.fields import SAMPLING_DOMAINS as SAMPLING_DOMAINS
from t3rl_core.parsers.own import OWN_TOOL_CALL_PARSERS

# sglang.srt.function_call.function_call_parser.FunctionCallParser.ToolCallParserEnum as t3rl loads it:
# SGLang's own parsers, then t3rl's (t3rl_core.parsers.own: native formats no SGLang parser reads).
TOOL_CALL_PARSERS = (
    "apertus2509", "beam", "cohere_command4", "deepseekv3", "deepseekv31", "deepseekv32",
    "deepseekv4", "deepseekv41", "dots", "gemma4", "gigachat3", "gigachat35", "glm", "glm45",
    "glm47", "gpt-oss", "hermes", "hunyuan", "inkling", "interns1", "iquest_q1", "k2_horizon",
    "kimi_k2", "kimi_k3", "lfm2", "ling3", "llama3", "mimo", "minicpm5", "minimax-m2", "minimax-m3",
    "mistral", "muse", "nanbeige", "poolside_v1", "pythonic", "qwen", "qwen25", "qwen3_coder",
    "response_template", "spark25", "step3", "step3p5", "trinity",
    *OWN_TOOL_CALL_PARSERS,
)  # fmt: skip

# sglang.srt.parser.reasoning_parser.ReasoningParser.DetectorMap
REASONING_PARSERS = (
    "apertus2509", "beam", "cohere_command4", "deepseek-r1", "deepseek-v3", "deepseek-v4",
    "deepseek-v41", "dots", "gemma4", "gigachat35", "glm45", "gpt-oss", "granite_thinking_parser",
    "hunyuan", "inkling", "interns1", "iquest_q1", "k2_horizon", "kimi", "kimi_k2", "kimi_k3",
    "ling3", "mimo", "minimax", "minimax-append-think", "minimax-m3", "mistral", "muse", "nanbeige",
    "nemotron_3", "poolside_v1", "qwen3", "qwen3-thinking", "response_template", "step3", "step3p5",
)  # fmt: skip

# The reasoning parsers that read a reply's text up to their end tag as reasoning whether or not it opened
# with the start tag (SGLang's `force_reasoning`: the detector's default, or ReasoningParser's own list).
# A reply without the end tag is all reasoning: t3rl's episode loop refuses it as a format error.
FORCED_REASONING_PARSERS = (
    "cohere_command4", "deepseek-r1", "gigachat35", "gpt-oss", "iquest_q1", "k2_horizon", "kimi_k3",
    "minimax", "qwen3-thinking", "step3", "step3p5",
)  # fmt: skip

# Chat-template family → tool-call parsers that read the calls its template writes. Qwen's
# `<tool_call>\n{json}\n</tool_call>` is read by qwen25/qwen (same detector) and by hermes (which also
# takes the one-line form); "glm" is SGLang's alias of glm45 (GLM-4.5's <arg_key>/<arg_value> calls).
FAMILY_TOOL_CALL_PARSERS: dict[str, tuple[str, ...]] = {
    "qwen3": ("hermes", "qwen25", "qwen"),
    "qwen2_5": ("hermes", "qwen25", "qwen"),
    "llama3": ("llama3",),
    "glm4": ("glm45", "glm"),
    "glm4_0414": ("glm4_0414",),
    "deepseek_v3": ("deepseekv3",),
}

# Family → reasoning parsers for its thinking tags; a family without any writes no reasoning tags.
FAMILY_REASONING_PARSERS: dict[str, tuple[str, ...]] = {
    "qwen3": ("qwen3", "qwen3-thinking"),
    "qwen2_5": (),
    "llama3": (),
    "glm4": ("glm45",),
    "glm4_0414": (),
    "deepseek_v3": ("deepseek-r1", "deepseek-v3"),
}

# SamplingParams.normalize: a temperature below this (1e-6 typed for 1e-1, a 0 nudged to look like
# sampling) decodes greedily, exactly as 0 does (SGLang sets top_k 1). Read by every greedy check.
GREEDY_BELOW = 1e-6


def greedy(temperature: float) -> bool:
    """SGLang decodes at `temperature` greedily (one answer per prompt, whatever the samples)."""
    return temperature < GREEDY_BELOW


# SGLang's sampling domains are declared with the runtime's fields (t3rl_core.fields), which t3rl's
# own SamplingParams reads too.
