"""SGLang's parser modules load without its serving stack."""

from __future__ import annotations

import json
import subprocess
import sys


def test_parsers_import_without_sglang_init_or_triton() -> None:
    probe = (
        "import json, sys\n"
        "from t3rl_core.parsers.sglang_loader import load, reasoning_parser_names, tool_call_parser_names\n"
        "load()\n"
        "print(json.dumps({'file': getattr(sys.modules['sglang'], '__file__', None),"
        " 'triton': 'triton' in sys.modules, 'tools': tool_call_parser_names(),"
        " 'reasoning': reasoning_parser_names()}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["file"] is None  # the bare package, not sglang/__init__.py
    assert seen["triton"] is False
    assert {"qwen25", "hermes", "llama3", "deepseekv3", "glm45", "glm47"} <= set(seen["tools"])
    assert {"qwen3", "deepseek-r1", "glm45"} <= set(seen["reasoning"])


def test_parsers_load_without_torch_and_leave_no_stand_in() -> None:
    """SGLang's parsers import xgrammar's structural-tag models only; its package (torch, transformers'
    models) is not imported, and no bare `xgrammar` package stays behind for later imports."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from t3rl_core.parsers.sglang_loader import load\n"
        "load()\n"
        "print('torch' in sys.modules, 'xgrammar' in sys.modules, 'xgrammar.structural_tag' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False", "True"]
