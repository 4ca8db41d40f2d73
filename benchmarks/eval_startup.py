"""`t3rl eval` start-up: seconds from launching the command to its first finished episode.

`t3rl eval --runtime-config R --data D --engine reference` (a tiny qwen3 tokenizer dir, a few BFCL test
rows) runs in a fresh process; the first line of its trajectories.jsonl marks the first finished
episode (one short BFCL episode, ~tens of ms, is included). Alternating with it, the same number of
`python -c "import hydra, omegaconf"` runs give the machine's pace (the cold-start benchmarks'
yardstick). Every process shares one bytecode cache (as an installed package has). The child's
modules are checked too: the reference engine must not import torch. Target: median <= 1.0 s.
The last line is the ratio to the bare import.

    .venv/bin/python benchmarks/eval_startup.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

T3RL = Path(sys.executable).with_name("t3rl")
BARE = [sys.executable, "-c", "import hydra, omegaconf"]
TARGET_S = 1.0
SETUP = """
import json, sys, yaml
from t3rl_core.chat import tiny
from t3rl_core.config import RuntimeConfig
from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.bfcl.data import build_rows
scratch = sys.argv[1]
tokenizer = tiny.build_tokenizer("qwen3", scratch + "/tokenizer")
rows = [r for r in build_rows(BFCLEnvConfig()) if r["metadata"]["split"] == "test"][:4]
open(scratch + "/test.jsonl", "w").write("".join(json.dumps(r) + "\\n" for r in rows))
runtime = RuntimeConfig.model_validate({
    "env": {"name": "bfcl_multi_turn"}, "reward": {"name": "progress"},
    "chat": {"tokenizer": str(tokenizer), "chat_template": "qwen3"},
    "parsers": {"tool_call_parser": "qwen25", "reasoning_parser": "qwen3"},
    "rollout": {"max_new_tokens": 32768},
})
open(scratch + "/runtime.yaml", "w").write(yaml.safe_dump(runtime.model_dump(mode="json")))
"""
# Printed by the child at exit: which heavy modules the eval imported.
PROBE = (
    "import atexit, sys\n"
    "heavy = lambda: sorted(m for m in ('torch', 'transformers') if m in sys.modules)\n"
    "atexit.register(lambda: print('HEAVY', heavy(), file=sys.stderr))"
)
CLI = "from launch.cli import main\nimport sys\nsys.argv[0] = 't3rl'\nmain()"


def to_first_episode(scratch: Path, run: int, env: dict[str, str]) -> tuple[float, str]:
    out = scratch / f"out{run}"
    argv = [
        sys.executable, "-c", f"{PROBE}\n{CLI}",
        "eval", "--runtime-config", str(scratch / "runtime.yaml"), "--data", str(scratch / "test.jsonl"),
        "--engine", "reference", "--out", str(out),
    ]  # fmt: skip
    started = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    trajectories, first = out / "trajectories.jsonl", None
    while first is None and child.poll() is None:
        if trajectories.exists() and trajectories.read_text().count("\n") >= 1:
            first = time.perf_counter() - started
        time.sleep(0.002)
    _, err = child.communicate()
    if child.returncode != 0 or first is None:
        raise SystemExit(f"t3rl eval failed ({child.returncode}):\n{err}")
    heavy = next((line for line in err.splitlines() if line.startswith("HEAVY")), "HEAVY ?")
    return first, heavy.removeprefix("HEAVY ")


def bare(env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(BARE, env=env, check=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        scratch = Path(name)
        env = {k: v for k, v in os.environ.items() if not k.startswith("T3RL_")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
        subprocess.run([sys.executable, "-c", SETUP, str(scratch)], env=env, check=True)
        to_first_episode(scratch, -1, env)  # discarded: writes bytecode, warms the page cache
        bare(env)
        evals, bares, heavy = [], [], ""
        for run in range(args.repeats):
            seconds, heavy = to_first_episode(scratch, run, env)
            evals.append(seconds)
            bares.append(bare(env))
    e, b = statistics.median(evals), statistics.median(bares)
    for label, median, runs in (
        ("t3rl eval, launch to first finished episode", e, evals),
        ("python -c 'import hydra, omegaconf'", b, bares),
    ):
        print(f"{label:44s} median {median:.3f} s (min {min(runs):.3f}, max {max(runs):.3f})")
    print(f"heavy modules the reference-engine eval imported: {heavy}")
    met = e <= TARGET_S and "torch" not in heavy
    print(f"target <= {TARGET_S} s without torch: {'met' if met else 'NOT met'}")
    print(f"ratio t3rl eval start-up / import hydra, omegaconf: {e / b:.2f}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
