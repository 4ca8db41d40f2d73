"""The eval stage command.

    python -m t3rl_core.eval --runtime-config R --eval-config E --data FILE|DIR --out DIR
                             [--serve-checkpoint HF_DIR | --url URL [--server-pid PID]]
                             [--resume] [--no-progress]

R is the runtime YAML (key `t3rl`), E an EvalConfig YAML (optionally under a key `eval`). With engine
`sglang` and no `url`, `--serve-checkpoint` starts an SGLang server on that HF directory for the
duration of the eval (and always stops it), on eval.server.tp GPUs (unset: one); with a url the eval
uses that server. The pipeline's eval stage starts `python -m sglang.launch_server` itself (so plan.sh
shows it) and passes `--url … --server-pid $!`: the eval waits for the server's /health, or fails as
soon as it exits. `--data` is the split file, or the prepared data directory holding
`<eval.split>.jsonl`. Writes trajectories.jsonl, summary.json, report.md and the chart into --out.
Exits 1 when the engine does not answer its health check, or the eval is incomplete (summary.json
`reason` says why).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from t3rl_core.config import RuntimeConfig
from t3rl_core.data.rows import DataError
from t3rl_core.engines.base import EngineUnavailable
from t3rl_core.eval.evaluate import evaluate, load_eval_config
from t3rl_core.eval.record_lock import RecordsInUse
from t3rl_core.eval.server import wait_for_server
from t3rl_core.os_errors import stage_main
from t3rl_core.secret import SecretResolutionError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m t3rl_core.eval", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runtime-config", type=Path, required=True, help="runtime YAML (key t3rl)")
    parser.add_argument("--eval-config", type=Path, help="EvalConfig YAML; default: EvalConfig()")
    parser.add_argument("--data", type=Path, required=True, help="split JSONL, or the prepared data dir")
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument("--serve-checkpoint", type=Path, help="HF dir to serve (engine sglang, no url)")
    parser.add_argument("--url", help="the SGLang server to use (engine sglang); overrides eval.engine.url")
    parser.add_argument(
        "--server-pid",
        type=int,
        help="pid of the server at --url started just before (e.g. by the stage script): wait for its "
        "/health (eval.server.startup_timeout_s), failing at once if that process ends",
    )
    parser.add_argument("--resume", action="store_true", help="keep finished episodes of an interrupted run")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)

    config = load_eval_config(args.eval_config).with_server_key()
    if args.url is not None:
        if config.engine.name != "sglang":
            parser.error(f"--url needs engine sglang (the eval config's engine is {config.engine.name})")
        config = config.model_copy(update={"engine": config.engine.model_copy(update={"url": args.url})})
    if args.server_pid is not None and args.url is None:
        parser.error("--server-pid needs --url")
    try:
        if args.server_pid is not None:
            wait_for_server(args.url, config.server.startup_timeout_s, args.server_pid, config.server.api_key)
        summary = evaluate(
            RuntimeConfig.from_yaml(args.runtime_config),
            config,
            args.data,
            args.out,
            serve_checkpoint=args.serve_checkpoint,
            resume=args.resume,
            progress=not args.no_progress,
        )
    except DataError as error:
        # A bad dataset line is the input's fault, not a bug: one line naming it, no traceback.
        print(f"error: {error}", file=sys.stderr)
        return 2
    except (EngineUnavailable, SecretResolutionError, RecordsInUse) as error:
        print(f"eval failed: {error}", file=sys.stderr)
        return 1
    return 0 if summary["complete"] else 1


if __name__ == "__main__":
    stage_main(main)
