"""A stage never draws more prompts per rollout than its split holds, and never reads an empty split:
refused at pre-flight from the sizes each env declares (`EnvConfig.split_sizes()`), with a first fix
that validates."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_preflight import _errors, _invoke, sandbox  # noqa: F401  (sandbox is a fixture)

from t3rl_core import input_files
from t3rl_core.envs.retool.config import ReToolEnvConfig
from t3rl_core.input_files import count_rows
from tests.support.fix_applier import apply_first_fix

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
S1 = "+experiment=stage1_bfcl"
TAU2 = "+experiment=tau2_pipeline"
CUR = "stages.train.curriculum"

# (overrides, the key the first error names)
TOO_SMALL = {
    # (fewer ids than bfcl-eval ships is refused before the sizes: prepare_data would stop at id 40;
    # tests/launch/test_preflight_unlisted_kinds.py)
    "bfcl-train-ratio": ([S1, "env.data.train_ratio=0.1"], "env.data.train_ratio"),
    "bfcl-base-dropped": ([S1, "env.data.categories=[multi_turn_miss_func]"], "env.data.categories"),
    "bfcl-no-val": ([S1, "env.data.val_ratio=0"], "env.data.val_ratio"),
    "bfcl-batch": ([S1, "stages.train.curriculum.rollout_batch_size=128"], None),
    "bfcl-over-sampling": ([S1, "stages.train.curriculum.over_sampling_batch_size=101"], None),
    "tau2-one-domain-limit": ([TAU2, "env.domains=[airline]", "env.data.limit=5"], "env.data.limit"),
    # ToolRL's 80-row test parquet as the train split of 512-prompt batches: the user's override is blamed.
    "toolrl-small-file": (
        [
            "+experiment=toolrl_grpo",
            f"env.data.splits.toolrl_train={FIXTURES / 'toolrl/rlla_4k_test.parquet'}",
        ],
        "env.data.splits.toolrl_train",
    ),
    # The 14 built-in problems, 4 held out: 10 train rows for batches of 64 and 128 prompts.
    "retool-sample": (
        ["+experiment=retool", "env.data.source=null", "env.data.sft_source=null", "env.data.test_size=4"],
        "env.data.test_size",
    ),
}


@pytest.mark.parametrize("case", sorted(TOO_SMALL))
def test_a_split_smaller_than_the_batch_is_refused_and_the_fix_validates(case: str, sandbox: Path) -> None:  # noqa: F811
    overrides, key = TOO_SMALL[case]
    code, out = _invoke("validate", *overrides)
    assert code == 2, out
    errors = _errors(out)
    assert errors, out
    assert "rows" in errors[0]["message"], out
    assert errors[0]["key"] == (key or overrides[-1].split("=")[0]), out
    fixed = apply_first_fix(overrides, errors[0])
    assert fixed is not None, errors[0]
    code, after = _invoke("validate", *fixed)
    assert code == 0, f"after {fixed}:\n{after}"


def test_user_files_are_counted_by_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text('{"a": 1}\n\n{"a": 2}\n  \n{"a": 3}')  # blank lines are no rows; no final newline
    assert count_rows(jsonl) == 3
    table = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"a": list(range(17))}), table)
    assert count_rows(table) == 17
    assert count_rows(tmp_path / "missing.jsonl") is None
    assert count_rows(tmp_path) is None  # a directory
    monkeypatch.setattr(input_files, "COUNT_LIMIT_BYTES", 4)
    assert count_rows(jsonl) is None  # too large to count at pre-flight: unknown, not refused


def test_a_retool_problems_file_sizes_its_splits(tmp_path: Path) -> None:
    problems = tmp_path / "problems.jsonl"
    problems.write_text("".join(f'{{"prompt": "{i} + 1", "target": "{i + 1}"}}\n' for i in range(30)))
    env = ReToolEnvConfig(data={"source": str(problems), "test_size": 12})
    assert env.split_sizes() == {"retool_test": 12, "retool_train": 18}  # no SFT split without sft_source


@pytest.mark.parametrize(
    "overrides",
    [
        [S1, f"{CUR}.rollout_batch_size=100", f"{CUR}.global_batch_size=1600"],
        [TAU2, "env.domains=[airline]"],  # 30 train tasks, batches of 16
        [S1, "env.data.train_ratio=0.16"],  # 32 train ids: exactly one batch
    ],
    ids=["whole-split-batch", "tau2-airline", "bfcl-exact"],
)
def test_a_batch_the_split_holds_is_accepted(overrides: list[str], sandbox: Path) -> None:  # noqa: F811
    code, out = _invoke("validate", *overrides)
    assert code == 0, out
