"""A corrupt dataset is a clear error naming the file and line, never a traceback (issue 8 §2)."""

from __future__ import annotations

import io
import json
import sys

import pytest
from pipeline_helpers import run, stage

from launch.config.schema import LocalExecutorConfig
from launch.plan.build import Plan
from launch.plan.stages import Stage
from launch.run.executors.local import LocalExecutor
from launch.run.pipeline import PipelineError, run_pipeline
from launch.run.rundir import RunDir
from t3rl_core.data.rows import DataError, read_rows
from t3rl_core.eval.__main__ import main as eval_main
from tests.support.tiny_stack import write_runtime_yaml

GOOD = json.dumps({"prompt": [{"role": "user", "content": "hi"}], "metadata": {"index": 0}})
CASES = {
    "garbage": (f"{GOOD}\nthis is not json\n", 2, "not JSON: Expecting value (column 1)"),
    "truncated": (f"{GOOD}\n{GOOD[:20]}", 2, "not JSON: Expecting value (column 21)"),
    "not an object": (f"{GOOD}\n\n[1, 2]\n", 3, "a row must be a JSON object, got list"),
    "other format": (
        f'{GOOD}\n{{"question": "q", "answer": 1}}\n',
        2,
        "no 'prompt' (keys: answer, question)",
    ),
    "empty prompt": ('{"prompt": []}\n', 1, "'prompt' must be a non-empty list of messages"),
    "bad message": ('{"prompt": ["hi"]}\n', 1, "prompt[0] is not a message"),
    "bad metadata": ('{"prompt": [{"role": "user"}], "metadata": 3}\n', 1, "'metadata' must be an object"),
}


@pytest.mark.parametrize("case", CASES)
def test_read_rows_names_the_file_the_line_and_the_problem(tmp_path, case):
    text, line, problem = CASES[case]
    path = tmp_path / "split.jsonl"
    path.write_text(text)
    with pytest.raises(DataError) as caught:
        read_rows(path)
    assert str(caught.value).startswith(f"{path}:{line}: {problem}")


def test_bytes_that_are_not_utf8_name_their_line(tmp_path):
    path = tmp_path / "split.jsonl"
    path.write_bytes(GOOD.encode() + b"\n" + b'{"prompt": "\xff\xfe"}\n')
    with pytest.raises(DataError, match=rf"^{path}:2: not UTF-8 text"):
        read_rows(path)


def test_the_eval_command_prints_one_line_and_exits_2(tmp_path, capsys):
    data = tmp_path / "bfcl_test.jsonl"
    data.write_text(CASES["garbage"][0])
    runtime = write_runtime_yaml(tmp_path / "runtime.yaml", tmp_path / "no-model")
    code = eval_main(["--runtime-config", str(runtime), "--data", str(data), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert err == f"error: {data}:2: not JSON: Expecting value (column 1)\n"
    assert not (tmp_path / "out" / "summary.json").exists()


def test_an_eval_stage_on_a_corrupt_split_fails_with_that_line_in_its_log(tmp_path):
    run_dir, marks = tmp_path / "run", tmp_path / "marks"
    run_dir.mkdir()
    marks.mkdir()
    data = run_dir / "stages" / "data" / "bfcl_test.jsonl"
    runtime = write_runtime_yaml(tmp_path / "runtime.yaml", tmp_path / "no-model")
    # A data stage that "succeeds" with a bad row (e.g. a user's own env), then the real eval command.
    write = f"mkdir -p {data.parent} && printf '%s\\nnot json\\n' '{GOOD}' > {data}"
    evaluate = (sys.executable, "-m", "t3rl_core.eval", "--runtime-config", str(runtime), "--data", str(data),
                "--out", str(run_dir / "stages" / "eval"), "--no-progress")  # fmt: skip
    plan = Plan(
        "test",
        run_dir,
        (stage("data", marks, write, verify=(str(data),)), Stage("eval", "eval", (evaluate,))),
    )
    executor = LocalExecutor(LocalExecutorConfig(), out=io.StringIO())
    result = run_pipeline(plan, RunDir(run_dir), executor)
    assert result.status == "failed" and result.failed_stage == "eval"
    log = (run_dir / "stages" / "eval" / "log.txt").read_text()
    assert f"error: {data}:2: not JSON: Expecting value (column 1)" in log
    assert "Traceback" not in log


def test_only_refuses_to_read_an_earlier_output_damaged_since_it_finished(tmp_path):
    run_dir, marks = tmp_path / "run", tmp_path / "marks"
    run_dir.mkdir()
    marks.mkdir()
    data = run_dir / "stages" / "data" / "train.jsonl"
    plan = Plan(
        "test",
        run_dir,
        (
            stage("data", marks, f"mkdir -p {data.parent} && echo '{GOOD}' > {data}", verify=(str(data),)),
            stage("eval", marks, reads=("data",)),
        ),
    )
    assert run(plan, run_dir).status == "succeeded"
    data.write_text("garbage\n")
    with pytest.raises(PipelineError, match=r"data: output damaged: stages/data/train.jsonl changed"):
        run(plan, run_dir, only="eval")


def test_a_users_own_retool_source_with_a_bad_line_is_named_when_data_is_prepared(tmp_path):
    from t3rl_core.envs.retool.config import ReToolDataConfig
    from t3rl_core.envs.retool.data import read_problems

    source = tmp_path / "problems.jsonl"
    source.write_text('{"problem": "1+1", "answer": "2"}\n{"problem": "2+2", "answer": \n')
    with pytest.raises(DataError, match=rf"^{source}:2: not JSON"):
        read_problems(ReToolDataConfig(source=str(source)))
