"""The SGLang-side options slime accepts: every SGLang server flag as `--sglang-<flag>`, plus the router's
and slime's own SGLang options (data only).

slime registers every SGLang `ServerArgs` flag as `--sglang-<flag>` except the ones it sets itself
(`skipped_args` in slime's `sglang_utils/arguments.py`, slime 624b824a), so the `--sglang-*` table is
derived from SGLang's own option table (launch/config/sglang_server_option_table.py, generated from the
installed SGLang). The router's `--router-*` flags and slime's additions need SGLang's router to
enumerate: the ones t3rl users are expected to set are listed by hand below.
"""

from launch.config.sglang_server_option_table import OPTIONS as SERVER_OPTIONS
from launch.plan.slime_option_table import Option

# The ServerArgs fields slime does not register (its skipped_args), by every flag SGLang spells them with.
_SET_BY_SLIME = frozenset(
    [
        "--model-path",
        "--model",
        "--config",
        "--trust-remote-code",
        "--random-seed",
        "--enable-memory-saver",
        "--tp-size",
        "--tensor-parallel-size",
        "--port",
        "--nnodes",
        "--node-rank",
        "--dist-init-addr",
        "--nccl-init-addr",
        "--gpu-id-step",
        "--base-gpu-id",
        "--nccl-port",
        "--skip-server-warmup",
        "--enable-return-routed-experts",
    ]
)


def _rows(nargs: int | str, kind: str | None, names: str) -> dict[str, Option]:
    return {name: Option("sglang", nargs, kind, None) for name in names.split()}  # type: ignore[arg-type]


# The hand-listed rows first: a flag SGLang's table also has takes SGLang's own type and choices.
# These are slime's own, the router's, and flags of slime's pinned SGLang that 0.5.23 renamed.
SGLANG_OPTIONS: dict[str, Option] = {
    **_rows(0, None, "--sglang-enable-fp32-moe-router"),
    **_rows(
        1,
        "int",
        """--prefill-num-servers --router-balance-abs-threshold --sglang-cuda-graph-max-bs
        --sglang-router-port --sglang-router-request-timeout-secs --sglang-server-concurrency""",
    ),
    **_rows(1, "float", "--router-balance-rel-threshold"),
    **_rows(1, "str", "--router-log-level --router-policy --sglang-config --sglang-router-ip"),
    **_rows("+", "int", "--sglang-cuda-graph-bs"),
    **{
        f"--sglang-{flag[2:]}": Option("sglang", nargs, kind, choices)  # type: ignore[arg-type]
        for flag, (nargs, kind, choices) in SERVER_OPTIONS.items()
        if flag not in _SET_BY_SLIME
    },
}
