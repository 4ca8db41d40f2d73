"""Comparing eval results the way a newcomer does (`t3rl runs`, `t3rl runs diff`), on real CPU evals of the
scripted reference policy: a result that cannot be compared is said so, never silently put side by side.

Kinds: a summary written before t3rl recorded a benchmark identity next to a recorded one; a summary.json
that cannot be read or is of no format t3rl knows; an eval stage only one run has; pass@k asked of an eval
that measured a smaller k; and the note on an eval record's missing provenance. Each failed before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from launch.cli.app import app
from launch.cli.runs import list_runs
from launch.run.record_files import EVAL_RECORD
from tests.eval.test_comparable_kinds import evaluate

RUNNER = CliRunner()
WHEN = "20260101-000000"


def _run(root: Path, name: str, summary: dict[str, Any] | str, *, stage: str = "eval") -> Path:
    """A pipeline run dir whose eval stage wrote `summary` (a dict as JSON, a str as it is)."""
    path = root / name / WHEN
    (path / "stages" / stage).mkdir(parents=True)
    config = {"name": name, "stages": {stage: {"kind": "eval"}}}
    (path / "config.yaml").write_text(yaml.safe_dump(config))
    text = summary if isinstance(summary, str) else json.dumps(summary)
    (path / "stages" / stage / "summary.json").write_text(text)
    return path


def _older(summary: dict[str, Any]) -> dict[str, Any]:
    """The same summary as t3rl wrote it before it recorded identities."""
    return {key: value for key, value in summary.items() if key != "identity"}


def _diff(*argv: str) -> Any:
    return RUNNER.invoke(app, ["runs", "diff", *argv], env={"COLUMNS": "400"})


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def greedy(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return evaluate(tmp_path_factory.mktemp("greedy"))


@pytest.fixture(scope="module")
def three_samples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return evaluate(tmp_path_factory.mktemp("k3"), samples=3, pass_k=[1, 3], temperature=1.0)


@pytest.fixture(scope="module")
def one_sample(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return evaluate(tmp_path_factory.mktemp("k1"), samples=1, temperature=1.0)


def test_runs_diff_refuses_a_summary_without_identity_next_to_one_with_it(
    greedy: dict, tmp_path: Path
) -> None:
    """Before: the older summary's number was put beside the new one, marked only `not recorded`."""
    refused = _diff(str(_run(tmp_path, "new", greedy)), str(_run(tmp_path, "old", _older(greedy))))
    text = _flat(refused.output)
    assert refused.exit_code == 1, refused.output
    assert "identity: not recorded in one of the summaries" in text, text
    assert "rerun the older one with this t3rl" in text, text
    shown = _diff(str(tmp_path / "new" / WHEN), str(tmp_path / "old" / WHEN), "--mixed-identity")
    assert shown.exit_code == 0 and "differs (shown by --mixed-identity)" in _flat(shown.output)


def test_runs_diff_of_two_summaries_without_identity_says_comparability_is_unknown(
    greedy: dict, tmp_path: Path
) -> None:
    older = _older(greedy)
    done = _diff(str(_run(tmp_path, "a", older)), str(_run(tmp_path, "b", older)))
    text = _flat(done.output)
    assert done.exit_code == 0, done.output
    assert "neither summary records what its eval measured" in text, text


def test_runs_does_not_rank_a_summary_without_identity_beside_recorded_ones(
    greedy: dict, tmp_path: Path
) -> None:
    """Before: the older run's number stood unmarked in the same column as the others'."""
    for name in ("one", "two"):
        _run(tmp_path, name, greedy)
    _run(tmp_path, "old", _older(greedy))
    console = Console(record=True, width=400)
    assert list_runs(tmp_path, console, mixed=False) == 0
    rows = {line.split("│")[1].strip(): line for line in console.export_text().splitlines() if "│" in line}
    assert "eval not ranked: identity: not recorded" in rows[f"old/{WHEN}"], rows
    assert "eval 1.000" in rows[f"one/{WHEN}"], rows


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("{not json", "is not valid JSON"),
        (json.dumps({"accuracy": 0.5, "n": 8}), "has no 'overall' block"),
    ],
    ids=["torn", "unknown format"],
)
def test_runs_diff_says_when_one_summary_cannot_be_read(
    greedy: dict, tmp_path: Path, content: str, why: str
) -> None:
    """Before: the stage was left out of the comparison without a word (exit 0)."""
    a, b = _run(tmp_path, "good", greedy), _run(tmp_path, "bad", content)
    done = _diff(str(a), str(b))
    text = _flat(done.output)
    assert done.exit_code == 1, done.output
    assert f"eval: not compared: B's {b / 'stages' / 'eval' / 'summary.json'} {why}" in text, text


def test_runs_diff_names_an_eval_stage_only_one_run_has(greedy: dict, tmp_path: Path) -> None:
    a, b = _run(tmp_path, "a", greedy), _run(tmp_path, "b", greedy, stage="eval_tiny")
    text = _flat(_diff(str(a), str(b)).output)
    assert "eval: only A has this eval stage's result" in text, text
    assert "eval_tiny: only B has this eval stage's result" in text, text


def test_runs_diff_compares_the_metric_asked_and_flags_a_k_one_side_did_not_measure(
    three_samples: dict, one_sample: dict, tmp_path: Path
) -> None:
    """pass@3 of an eval of 3 samples per task against one of 1 sample: before, `runs diff` had no
    --metric (only accuracy), and `t3rl runs` showed the missing pass@3 as a bare '–'."""
    a, b = _run(tmp_path, "k3", three_samples), _run(tmp_path, "k1", one_sample)
    done = _diff(str(a), str(b), "--metric", "overall.pass@3")
    text = _flat(done.output)
    assert done.exit_code == 0, done.output
    assert "eval results (overall.pass@3)" in text, text
    measured = "pass@3 not measured: the eval measured k = 1 with 1 sample(s) per task (eval.samples >= 3"
    assert f"B: {measured}" in text, text
    console = Console(record=True, width=400)
    assert list_runs(tmp_path, console, mixed=False, metric="overall.pass@3") == 0
    listed = _flat(console.export_text())
    assert f"eval {measured}" in listed, listed


def test_the_note_on_no_provenance_does_not_call_an_eval_record_old(greedy: dict, tmp_path: Path) -> None:
    """`t3rl eval` records keep no provenance.json: the note said such a run 'predates it'."""
    runs = []
    for name, temperature in (("a", 0.0), ("b", 0.5)):
        out = tmp_path / name
        out.mkdir()
        (out / "config.yaml").write_text(yaml.safe_dump({"eval": {"temperature": temperature}}))
        (out / "manifest.json").write_text(json.dumps({"record": EVAL_RECORD}))
        (out / "summary.json").write_text(json.dumps(greedy))
        runs.append(str(out))
    text = _flat(_diff(*runs).output)
    assert "predates" not in text, text
    assert "a `t3rl eval` record keeps no provenance.json" in text, text


def _newer(summary: dict[str, Any], min_p: float) -> dict[str, Any]:
    """The summary as a newer t3rl could write it: its identity with a part this one does not know."""
    return summary | {"identity": summary["identity"] | {"sampler": {"min_p": min_p}}}


def test_a_part_of_a_newer_record_this_t3rl_does_not_know_is_compared_too(
    greedy: dict, tmp_path: Path
) -> None:
    """Before: only the parts this t3rl knows were compared, so two results of a newer record that
    differed in a new part were put side by side as `same`."""
    a, b = _run(tmp_path, "a", _newer(greedy, 0.0)), _run(tmp_path, "b", _newer(greedy, 0.1))
    refused = _diff(str(a), str(b))
    text = _flat(refused.output)
    assert refused.exit_code == 1, refused.output
    assert "sampler: min_p 0.0 vs 0.1 (a part this t3rl does not know: written by a newer t3rl)" in text, text
    assert "compare them with the t3rl that wrote them" in text, text
    console = Console(record=True, width=400)
    _run(tmp_path, "c", _newer(greedy, 0.0))
    assert list_runs(tmp_path, console, mixed=False) == 0
    assert "eval not ranked: sampler: min_p 0.0 vs 0.1" in _flat(console.export_text())
    same = _diff(str(a), str(tmp_path / "c" / WHEN))
    assert same.exit_code == 0 and "│ same" in same.output, same.output


def test_the_same_categories_in_another_order_are_the_same_selection(tmp_path: Path) -> None:
    """`eval.categories=[multi_turn_base,multi_turn_miss_func]` against the same two reversed: before,
    refused as another benchmark (`selection: categories […] vs […]`)."""
    runs = []
    for name, order in (("ab", ["multi_turn_base", "multi_turn_miss_func"]), ("ba", None)):
        summary = evaluate(
            tmp_path / f"{name}_eval", categories=order or ["multi_turn_miss_func", "multi_turn_base"]
        )
        runs.append(str(_run(tmp_path, name, summary)))
    done = _diff(*runs)
    assert done.exit_code == 0 and "│ same" in done.output, done.output


def test_evals_of_two_splits_are_refused_naming_the_splits(greedy: dict, tmp_path: Path) -> None:
    """`t3rl eval --split bfcl_val` against the default split: before, "data: bfcl_test c50eca… vs null;
    bfcl_val null vs d683f3…"."""
    other = greedy | {"identity": greedy["identity"] | {"data": {"bfcl_val": "d" * 64}}}
    (split,) = greedy["identity"]["data"]
    refused = _diff(str(_run(tmp_path, "a", greedy)), str(_run(tmp_path, "b", other)))
    text = _flat(refused.output)
    assert refused.exit_code == 1, refused.output
    assert f"data: another split: {split} vs bfcl_val" in text, text
    assert "rerun one on the other's split file" in text, text


def _two_evals(root: Path, name: str, reference: dict[str, Any], tiny: dict[str, Any]) -> None:
    """A run of the quickstart's shape: a reference-policy eval and a tiny model's, measured differently."""
    path = root / name / WHEN
    stages = {"eval_reference": reference, "eval_tiny": tiny}
    config = {"name": name, "stages": {stage: {"kind": "eval"} for stage in stages}}
    for stage, summary in stages.items():
        (path / "stages" / stage).mkdir(parents=True)
        (path / "stages" / stage / "summary.json").write_text(json.dumps(summary))
    (path / "config.yaml").write_text(yaml.safe_dump(config))


def test_runs_ranks_each_eval_stage_against_the_same_stage_of_other_runs(
    greedy: dict, tmp_path: Path
) -> None:
    """After the quickstart, `t3rl runs` hid the tiny model's score (`eval_tiny not ranked: selection …;
    budget …`): its two evals measure differently by design, and were ranked against one reference."""
    tiny = evaluate(tmp_path / "tiny_eval", max_new_tokens=16, max_num_steps=2)
    _two_evals(tmp_path, "first", greedy, tiny)
    _two_evals(tmp_path, "second", greedy, tiny)
    _two_evals(tmp_path, "other", greedy, evaluate(tmp_path / "other_eval", max_new_tokens=32))
    console = Console(record=True, width=400)
    assert list_runs(tmp_path, console, mixed=False) == 0
    text = console.export_text()
    assert text.count("eval_reference 1.000") == 3, text
    assert text.count("eval_tiny 1.000") + text.count("eval_tiny 0.") == 2, text
    assert "eval_tiny not ranked: budget: max_new_tokens 16 vs 32" in _flat(text), text
    assert "1 result(s) measured another benchmark" in text, text


def test_a_k_not_asked_of_an_eval_with_enough_samples_names_the_list_of_k(
    three_samples: dict, tmp_path: Path
) -> None:
    """`--k 5` reports pass@1 and pass@5: its pass@3 is missing for want of the k, not of samples."""
    five = evaluate(tmp_path / "k5_eval", samples=5, pass_k=[1, 5], temperature=1.0)
    console = Console(record=True, width=400)
    _run(tmp_path / "runs", "k5", five)
    _run(tmp_path / "runs", "k3", three_samples)
    assert list_runs(tmp_path / "runs", console, mixed=False, metric="overall.pass@3") == 0
    text = _flat(console.export_text())
    assert (
        "pass@3 not measured: the eval measured k = 1, 5 with 5 sample(s) per task (eval.pass_k with 3"
        in text
    )
