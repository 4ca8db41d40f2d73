"""Tool-call parsers t3rl adds to SGLang's parser table, for native formats no SGLang parser reads.

Name → `module:factory` of an SGLang detector class. `t3rl_core.parsers.sglang_loader` registers them
when it loads SGLang's parsers, so t3rl's action parser, `t3rl check-template` and the validator take
them like SGLang's own. An SGLang server never knows them: t3rl parses the text of `/generate` itself,
and the eval server is started without `--tool-call-parser` for these names.
"""

from __future__ import annotations

OWN_TOOL_CALL_PARSERS: dict[str, str] = {
    "glm4_0414": "t3rl_core.parsers.glm4_0414:detector_class",
}
