"""The SGLang-side options t3rl lets through to slime, with their types (hand-curated, data only).

slime registers every SGLang `ServerArgs` field as `--sglang-<flag>` plus the router's `--router-*`
flags (slime notes, Appendix C); that set changes with every SGLang release and needs SGLang's
serving stack to enumerate, so `scripts/gen_slime_option_table.py` leaves it out. Only flags t3rl
users are expected to set are listed; add a row to allow another one. Types follow SGLang's
`ServerArgs` fields and slime's `sglang_utils/arguments.py` (slime 624b824a).
"""

from launch.plan.slime_option_table import Option


def _rows(nargs: int | str, kind: str | None, names: str) -> dict[str, Option]:
    return {name: Option("sglang", nargs, kind, None) for name in names.split()}  # type: ignore[arg-type]


SGLANG_OPTIONS: dict[str, Option] = {
    **_rows(
        0,
        None,
        """--sglang-disable-cuda-graph --sglang-disable-custom-all-reduce --sglang-disable-radix-cache
        --sglang-enable-deterministic-inference --sglang-enable-dp-attention --sglang-enable-fp32-moe-router
        --sglang-enable-metrics --sglang-enable-mixed-chunk --sglang-enable-torch-compile""",
    ),
    **_rows(
        1,
        "int",
        """--prefill-num-servers --router-balance-abs-threshold --sglang-chunked-prefill-size
        --sglang-context-length --sglang-cuda-graph-max-bs --sglang-decode-log-interval --sglang-dp-size
        --sglang-ep-size --sglang-max-running-requests --sglang-max-total-tokens --sglang-moe-dense-tp-size
        --sglang-page-size --sglang-pp-size --sglang-router-port --sglang-router-request-timeout-secs
        --sglang-server-concurrency --sglang-speculative-eagle-topk --sglang-speculative-num-draft-tokens
        --sglang-speculative-num-steps""",
    ),
    **_rows(
        1,
        "float",
        "--router-balance-rel-threshold --sglang-mem-fraction-static --sglang-watchdog-timeout",
    ),
    **_rows(
        1,
        "str",
        """--router-log-level --router-policy --sglang-attention-backend --sglang-config
        --sglang-decode-attention-backend --sglang-deepep-mode --sglang-kv-cache-dtype --sglang-log-level
        --sglang-moe-a2a-backend --sglang-moe-runner-backend --sglang-prefill-attention-backend
        --sglang-quantization --sglang-router-ip --sglang-schedule-policy --sglang-speculative-algorithm
        --sglang-speculative-draft-model-path""",
    ),
    **_rows("+", "int", "--sglang-cuda-graph-bs"),
}
