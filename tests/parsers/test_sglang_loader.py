"""SGLang's parser modules load without its serving stack."""

from __future__ import annotations

import json
import subprocess
import sys


def test_parsers_load_without_sglang_init_triton_or_torch_and_leave_no_stand_in() -> None:
    """SGLang's parsers load from the bare package (not sglang/__init__.py, which starts a serving
    stack), without triton; they import xgrammar's structural-tag models only: its package (torch,
    transformers' models) is not imported, and no bare `xgrammar` package stays behind for later
    imports. (One fresh process for both: each of the two tests before started one to load().)"""
    probe = (
        "import json, sys\n"
        "from t3rl_core.parsers.sglang_loader import load, reasoning_parser_names, tool_call_parser_names\n"
        "load()\n"
        "print(json.dumps({'file': getattr(sys.modules['sglang'], '__file__', None),"
        " 'triton': 'triton' in sys.modules, 'tools': tool_call_parser_names(),"
        " 'reasoning': reasoning_parser_names(), 'torch': 'torch' in sys.modules,"
        " 'xgrammar': 'xgrammar' in sys.modules,"
        " 'structural_tag': 'xgrammar.structural_tag' in sys.modules}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["file"] is None  # the bare package, not sglang/__init__.py
    assert seen["triton"] is False
    assert {"qwen25", "hermes", "llama3", "deepseekv3", "glm45", "glm47"} <= set(seen["tools"])
    assert {"qwen3", "deepseek-r1", "glm45"} <= set(seen["reasoning"])
    assert (seen["torch"], seen["xgrammar"], seen["structural_tag"]) == (False, False, True)


# Parses a few outputs with every family's parsers; prints the actions as JSON (after a first line
# naming the heavy packages loaded), so that two processes can be compared.
PARSE_PROBE = """
import json, sys
PRELOAD
from t3rl_core.config import ParsersConfig
from t3rl_core.parsers.tool_calls import ToolCallActionParser
tools = [{"type": "function", "function": {"name": "cd", "parameters": {"type": "object",
          "properties": {"folder": {"type": "string"}}, "required": ["folder"]}}}]
texts = [
    '<think>go</think>\\n<tool_call>\\n{"name": "cd", "arguments": {"folder": "a"}}\\n</tool_call>',
    '<think>x</think>\\n<tool_call>\\n{"name": "rm", "arguments": {}}\\n</tool_call>',
    '<think>x</think>\\n<tool_call>\\n{"name": "cd", "arguments": {"folder": \\n</tool_call>',
    '<think>done</think>\\nThe folder is a.',
    'no reasoning block at all',
]
out = {}
for tool_parser, reasoning in (("qwen25", "qwen3"), ("hermes", "deepseek-r1"), ("llama3", None)):
    config = ParsersConfig(tool_call_parser=tool_parser, reasoning_parser=reasoning)
    parser = ToolCallActionParser(config, tools)
    out[tool_parser] = [repr(parser.parse(text)) for text in texts]
print([m for m in ("transformers", "openai", "sglang.utils") if m in sys.modules])
print(json.dumps(out))
"""


def _parse_in_fresh_process(preload: str) -> tuple[str, dict[str, list[str]]]:
    code = PARSE_PROBE.replace("PRELOAD", preload)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600
    )
    loaded, actions = done.stdout.strip().splitlines()[-2:]
    return loaded, json.loads(actions)


def test_the_stand_ins_parse_exactly_as_the_real_packages_do() -> None:
    """With transformers, openai and sglang.utils imported first (as in a slime rollout worker) no
    stand-in is used; without, they are: the actions must be the same."""
    light_loaded, light = _parse_in_fresh_process("")
    full_loaded, full = _parse_in_fresh_process(
        "import transformers, openai\n"
        "from t3rl_core.parsers.sglang_loader import _register_bare_package\n"
        "_register_bare_package()\n"  # sglang's own __init__ starts a server stack: as load() does
        "import sglang.utils"
    )
    assert light_loaded == "[]"  # no stand-in left behind, and the real packages were not imported
    assert full_loaded == "['transformers', 'openai', 'sglang.utils']"
    assert light == full
    assert "ToolCallAction" in light["qwen25"][0] and "InvalidAction" in light["qwen25"][1]


def test_after_the_parsers_load_the_real_packages_import_whole() -> None:
    """The bare openai packages are gone once the parsers are loaded: `import openai` runs the real
    package, whose types are the very classes SGLang's protocol models were built with; the
    forwarded `convert_json_schema_to_str` reaches the real sglang.utils; pydantic builds models
    defined afterwards at class creation again."""
    code = (
        "import json\n"
        "from t3rl_core.parsers.sglang_loader import load\n"
        "load()\n"
        "from sglang.srt.entrypoints.openai import protocol\n"
        "import openai, openai.types.responses as responses, sglang.utils\n"
        "from pydantic import BaseModel\n"
        "class Later(BaseModel):\n"
        "    x: int\n"
        "print(json.dumps({'client': hasattr(openai, 'OpenAI'), 'file': openai.__file__,\n"
        " 'later_built': Later.__pydantic_complete__,\n"
        " 'same': protocol.ResponseReasoningItem is responses.ResponseReasoningItem,\n"
        " 'schema': protocol.convert_json_schema_to_str({'type': 'object'}),\n"
        " 'real': sglang.utils.convert_json_schema_to_str({'type': 'object'})}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["client"] and seen["file"].endswith("openai/__init__.py") and seen["same"]
    assert seen["schema"] == seen["real"] == '{"type": "object"}'
    assert seen["later_built"]  # models defined after the parsers loaded build as usual
