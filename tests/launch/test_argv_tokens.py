"""The one reader of which pass-through flags are on (Megatron's rules and slime's constraints share it)."""

from __future__ import annotations

from launch.config.argv_tokens import flags_on


def test_a_flag_given_a_numeric_zero_is_off_whatever_its_spelling() -> None:
    argv = ["--sequence-parallel", "--lr-warmup-iters", "0", "--min-lr=0.0", "--clip-grad", "0e0", "-x", "-1"]
    assert flags_on(argv) == {"--sequence-parallel": [], "-x": ["-1"]}


def test_values_are_kept_with_either_spelling() -> None:
    argv = ["--spec", "local", "--decoder-first-pipeline-num-layers=3", "--seq-length", "4096", "extra"]
    assert flags_on(argv) == {
        "--spec": ["local"],
        "--decoder-first-pipeline-num-layers": ["3"],
        "--seq-length": ["4096", "extra"],
    }
