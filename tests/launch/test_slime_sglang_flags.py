"""slime registers every SGLang server flag as --sglang-<flag> except those it sets itself: the pass-through
table follows SGLang's generated option table (types and choices included) instead of a hand list."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_preflight import _errors, _invoke, sandbox  # noqa: F401  (sandbox is a fixture)

from launch.config.sglang_server_option_table import OPTIONS as SERVER_OPTIONS
from launch.plan.option_types import value_problem
from launch.plan.slime_options import known_options
from launch.plan.slime_sglang_options import SGLANG_OPTIONS
from tests.support.fix_applier import apply_first_fix

# slime's skipped_args (slime/backends/sglang_utils/arguments.py at 624b824a), as SGLang spells them.
SET_BY_SLIME = {
    *("--model-path", "--model", "--trust-remote-code", "--random-seed", "--enable-memory-saver"),
    *("--tp-size", "--tensor-parallel-size", "--port", "--nnodes", "--node-rank", "--dist-init-addr"),
    *("--nccl-init-addr", "--gpu-id-step", "--base-gpu-id", "--nccl-port", "--skip-server-warmup"),
    "--enable-return-routed-experts",
}


def test_every_server_flag_slime_does_not_set_passes_through() -> None:
    known = known_options()
    for flag, (nargs, kind, choices) in SERVER_OPTIONS.items():
        prefixed = f"--sglang-{flag[2:]}"
        if flag in SET_BY_SLIME:
            assert prefixed not in known, prefixed  # slime sets these itself and does not register them
        elif flag != "--config":  # slime's own --sglang-config (a YAML of server groups) takes its place
            assert (known[prefixed].nargs, known[prefixed].type, known[prefixed].choices) == (
                nargs,
                kind,
                choices,
            )


def test_values_are_read_as_sglang_reads_them() -> None:
    length = SGLANG_OPTIONS["--sglang-context-length"]
    assert value_problem(length.type, length.choices, "32k") is None  # SGLang's human-readable int
    assert value_problem(length.type, length.choices, "lots") is not None
    backend = SGLANG_OPTIONS["--sglang-attention-backend"]
    assert backend.choices and value_problem(backend.type, backend.choices, "no-such-backend") is not None


@pytest.mark.parametrize("extra", ["[--no-such-flag]", "[--sglang-tp-size,'2',--sglang-page-size,'16']"])
def test_an_unknown_pass_through_flag_is_blamed_on_extra_args_and_dropped(extra: str, sandbox: Path) -> None:  # noqa: F811
    """Every stage that parses the model's flags (the torch_dist conversion first) blames the key."""
    overrides = ["+experiment=stage1_bfcl", f"model.architecture.extra_args={extra}"]
    code, out = _invoke("validate", *overrides)
    assert code == 2, out
    (error,) = _errors(out)
    assert error["key"] == "model.architecture.extra_args", out
    code, after = _invoke("validate", *apply_first_fix(overrides, error))
    assert code == 0, after
