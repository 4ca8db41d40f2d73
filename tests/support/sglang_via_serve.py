"""A fake `python -m sglang.launch_server`: takes SGLang's flags and serves the model with t3rl's own
SGLang-protocol server (t3rl_core.engines.serve) on CPU, so the eval stage's server path runs for real."""

from __future__ import annotations

import argparse
import os

from t3rl_core.engines.serve import main as serve
from tests.support.tiny_stack import ONE_THREAD


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-path", required=True)
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--tool-call-parser")
    parser.add_argument("--reasoning-parser")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args, _ = parser.parse_known_args()
    os.environ.update(ONE_THREAD)  # read when torch loads, with the model at the first request
    serve(["--model", args.model_path, "--host", args.host, "--port", str(args.port)])


if __name__ == "__main__":
    main()
