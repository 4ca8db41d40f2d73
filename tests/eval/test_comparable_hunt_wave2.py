"""Comparable results, hunt wave two (docs/explanation/comparable-results.md, "Hunt wave two").

Two results of one benchmark are compared across what the identity leaves out by design (the model and
engine, seed, samples, repeats, the t3rl commit): `t3rl runs diff` showed them `same` with nothing of
that, a run compared with itself looked like two runs agreeing, B − A was a bare number on 4 tasks, and
a summary holding NaN was shown as `nan` / `+nan` (and `t3rl runs --json` printed no JSON; sweep.md
raised on it). Each is closed where every comparison reads it: `compared.ACROSS` (shown where two
results differ), `results_compare.metric_value` / `launch.run.sweep.read_metric` (a finite number or
none, said why), `results_compare.interval` (the rate's Wilson interval over its block's tasks).
"""

from __future__ import annotations

import asyncio
import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from launch.cli.app import app
from launch.cli.results_compare import across
from launch.cli.runs import list_runs
from launch.run.sweep import IncompleteEval, UnreadableMetric, read_metric
from launch.run.sweep_compare import marks, objective_identity_differences
from t3rl_core.eval.compared import ACROSS, EVAL, NOT_COMPARED
from t3rl_core.eval.identity import NEWER_PART
from t3rl_core.eval.report import render_markdown
from t3rl_core.eval.runner import run_eval
from tests.eval.test_comparable_kinds import evaluate, rows
from tests.eval.test_identity_guard import IDENTITY, _run, _sweep
from tests.support.eval_runs import bfcl_runtime, reference_config

RUNNER = CliRunner()


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return evaluate(tmp_path_factory.mktemp("base"))


def _diff(a: Path, b: Path, *args: str) -> tuple[int, str]:
    done = RUNNER.invoke(app, ["runs", "diff", str(a), str(b), *args], env={"COLUMNS": "400"})
    return done.exit_code, " ".join(done.output.split())


def test_every_setting_results_are_compared_across_is_shown(base: dict, tmp_path: Path) -> None:
    """A real eval at another seed, samples and repeats: one benchmark, and each is named as what the two
    were compared across (the model, engine and commit by their summary keys)."""
    assert {"seed", "samples", "repeats"} <= set(ACROSS)
    for name in ("engine", "seed", "samples", "repeats"):
        assert EVAL[name].startswith(NOT_COMPARED), name  # left out of the identity, so shown instead
    other = evaluate(tmp_path / "other", seed=1, samples=2, repeats=2, pass_k=[1])
    assert {line.split(":")[0] for line in across(base, other)} == {"seed", "samples", "repeats"}
    served = copy.deepcopy(base) | {
        "model": {"engine": "sglang", "url": "http://a:1", "checkpoint": {"fingerprint": "f" * 64}}
    }
    served["attempts"]["commits"] = {"1": "1" * 40}
    elsewhere = copy.deepcopy(served)
    elsewhere["model"]["url"] = "http://b:2"  # the same checkpoint served elsewhere: the same model
    assert across(served, elsewhere) == []
    code, text = _diff(_run(tmp_path, "a", base), _run(tmp_path, "b", served))
    assert code == 0 and "same" in text
    assert "compared across model: checkpoint null vs" in text and "engine reference vs sglang" in text
    assert "compared across t3rl: " in text and "1111111111" in text
    older = {k: v for k, v in served.items() if k != "attempts"} | {"git": {"sha": "1" * 40, "dirty": False}}
    assert across(served, older) == []  # a summary written before commits were kept: its `git`


def test_a_run_compared_with_itself_is_named(base: dict, tmp_path: Path) -> None:
    a = _run(tmp_path, "a", base)
    code, text = _diff(a, a)
    assert code == 0 and "the same eval: B's summary is A's" in text
    code, text = _diff(a, _run(tmp_path, "b", copy.deepcopy(base) | {"seed": 3}))
    assert "the same eval" not in text


def test_a_difference_is_shown_with_n_and_both_intervals(base: dict, tmp_path: Path) -> None:
    """1.000 against 0.750 over 4 tasks is within both 95 % intervals; over 400 tasks it is not."""
    worse = copy.deepcopy(base)
    worse["overall"]["accuracy"] = 0.75
    code, text = _diff(_run(tmp_path, "a", base), _run(tmp_path, "b", worse))
    assert code == 0 and "│ 1.000 (n=4) │ 0.750 (n=4) │ -0.250 │" in text
    assert "│ 95 % [0.510, 1.000] │ 95 % [0.301, 0.954] │ within both intervals: not told apart │" in text
    many = [copy.deepcopy(s) for s in (base, worse)]
    for summary in many:
        summary["overall"]["tasks"] = 400
        # As a summary of 400 scored tasks records them: the n each rate averages over (metrics.rate_count).
        summary["overall"]["tasks_scored"] = dict.fromkeys(summary["overall"]["tasks_scored"], 400)
    code, text = _diff(_run(tmp_path, "c", many[0]), _run(tmp_path, "d", many[1]))
    assert "│ 1.000 (n=400) │ 0.750 (n=400) │ -0.250 │" in text and "not told apart" not in text
    assert "│ 95 % [0.990, 1.000] │ 95 % [0.705, 0.790] │" in text
    # A metric that is no rate (the mean reward) has no interval.
    code, text = _diff(_run(tmp_path, "e", base), _run(tmp_path, "f", worse), "--metric", "overall.reward")
    assert "95 %" not in text


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_number_that_is_no_finite_number_is_named_never_compared(
    bad: float, base: dict, tmp_path: Path
) -> None:
    broken = copy.deepcopy(base)
    broken["overall"]["accuracy"] = bad
    with pytest.raises(UnreadableMetric, match="not a finite number") as raised:
        read_metric(broken, "overall.accuracy")
    assert isinstance(raised.value, IncompleteEval) and isinstance(raised.value, ValueError)
    code, text = _diff(_run(tmp_path, "a", base), _run(tmp_path, "b", broken))
    assert code == 0 and "B: accuracy not shown: 'overall.accuracy' is" in text
    assert "│ eval │ 1.000 (n=4) │ – │ – │" in text  # no 'nan (n=4)', no '+nan' B − A
    console = Console(record=True, width=400)
    assert list_runs(tmp_path, console) == 0
    assert "accuracy not shown" in console.export_text()
    listed = RUNNER.invoke(app, ["runs", "--runs-dir", str(tmp_path), "--json"])
    evals = {run["run"]: run["evals"][0] for run in json.loads(listed.stdout)}  # valid JSON: no NaN
    assert evals["b/20260101-000000"]["value"] is None


def test_sweep_points_tied_or_nan_rank_without_raising(tmp_path: Path) -> None:
    sweep = _sweep(tmp_path, [(0.5, IDENTITY), (0.5, IDENTITY), (0.2, IDENTITY)])
    found = marks(sweep)
    assert found[0].startswith("best [") and found[1].startswith("overlaps best [")
    assert found[2].startswith("below best [")
    with_nan = _sweep(tmp_path / "nan", [(0.5, IDENTITY), (math.nan, IDENTITY)])
    assert set(marks(with_nan)) == {0}  # the NaN point is left unranked, not best by its position


def test_an_eval_resumed_under_another_commit_says_whose_episodes_it_holds(
    base: dict, tmp_path: Path
) -> None:
    """A resume keeps an earlier attempt's episodes when their settings are equal, whatever t3rl ran them,
    and the summary's `git` was the last attempt's alone: one eval of two commits read as one of HEAD."""
    out = tmp_path / "resumed"
    first = evaluate(out)
    head = first["attempts"]["commits"]["1"]
    assert head is not None and head.startswith(first["git"]["sha"])
    earlier = json.loads((out / "summary.json").read_text())
    earlier["attempts"]["commits"] = {"1": "0" * 40}  # as if attempt 1 had run at another commit
    (out / "summary.json").write_text(json.dumps(earlier))
    lines = (out / "trajectories.jsonl").read_text().splitlines(keepends=True)
    (out / "trajectories.jsonl").write_text("".join(lines[:-1]))  # its last episode runs again
    config = reference_config(concurrency=1)
    resumed = asyncio.run(run_eval(bfcl_runtime(), config, rows(), out, resume=True, show_progress=False))
    assert resumed["attempts"]["episodes_by_attempt"] == {"1": 3, "2": 1}
    assert resumed["attempts"]["commits"] == {"1": "0" * 40, "2": head}
    shown = [line for line in across(first, resumed) if line.startswith("t3rl:")]
    assert len(shown) == 1 and '["0000000000' in shown[0], shown
    report = render_markdown(resumed)
    assert f"| t3rl commit by attempt | `attempt 1: {'0' * 40}, attempt 2: {head}` |" in report
    assert "t3rl commit by attempt" not in render_markdown(first)  # one commit: nothing to say


def test_a_part_of_a_newer_t3rl_is_never_equal_to_any_comparer(tmp_path: Path) -> None:
    """sweep.md and a search's objective read identity.differences, which left out a part this t3rl does
    not know (only `t3rl runs` named it): two points measured by a newer t3rl's other setting ranked."""
    newer = [IDENTITY | {"future": {"cap": cap}} for cap in (1, 2)]
    found = marks(_sweep(tmp_path, [(0.5, newer[0]), (0.4, newer[0]), (0.9, newer[1])]))
    assert found[2].startswith("not ranked, another benchmark: future: cap 1 vs 2 (a part this t3rl does not")
    sweep_dir = tmp_path / "study"
    sweep_dir.mkdir()
    assert objective_identity_differences(sweep_dir, {"identity": newer[0]}) == []
    assert objective_identity_differences(sweep_dir, {"identity": newer[1]}) == [
        f"future: cap 1 vs 2 {NEWER_PART}"
    ]


def test_a_world_that_changes_the_rows_it_is_handed_leaves_the_eval_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row's samples and repeats share it: a world appending to its task's prompt had every later
    episode of that row play another task than the split's (and a resume refuse its records as another
    row's), and the eval said complete."""
    from t3rl_core.envs.bfcl.env import BFCLEnvFactory

    made = BFCLEnvFactory.__call__

    def appending(self: Any, task: Any, mode: Any) -> Any:
        task["prompt"].append({"role": "user", "content": "and one more thing"})
        return made(self, task, mode)

    monkeypatch.setattr(BFCLEnvFactory, "__call__", appending)
    shared = [copy.deepcopy(row) for row in rows()[:1]]
    config = reference_config(concurrency=1)  # one sample: the row as planned is read before it runs
    changed = asyncio.run(run_eval(bfcl_runtime(), config, shared, tmp_path, show_progress=False))
    assert changed["complete"] is False
    assert (
        "world bfcl_multi_turn changed 1 task row(s) it was handed (e.g. multi_turn_base_"
        in changed["reason"]
    )
    assert "copy.deepcopy(task)" in changed["reason"]
    monkeypatch.setattr(BFCLEnvFactory, "__call__", made)
    kept = asyncio.run(run_eval(bfcl_runtime(), config, rows()[:1], tmp_path / "kept", show_progress=False))
    assert kept["complete"] is True
