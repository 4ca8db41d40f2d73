"""Comparable results, hunt wave seven (docs/explanation/comparable-results.md, "Hunt wave seven"): kinds
of results read or compared wrongly. Each test fails with its declaration turned off."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from launch.cli.results_compare import across
from launch.cli.runs import JSON_EVAL_KEYS, list_runs
from launch.run.sweep import UnreadableMetric, read_metric
from t3rl_core.engines.config import HFEngineConfig, ReferenceEngineConfig, SGLangEngineConfig
from t3rl_core.eval.compared import ENGINES
from t3rl_core.eval.identity import METRIC_DEFINITION, PARTS
from t3rl_core.eval.metrics import DEFINITION_VERSION, TASKS_SCORED, EpisodeScore, is_rate, summarize
from t3rl_core.eval.records import model_record

# ------------------------------------------------ t3rl runs --json: keys fixed, each number's identity


def _identity(scorer: str) -> dict[str, Any]:
    identity: dict[str, Any] = {part: {"of": part} for part in PARTS}
    identity["scorer"] = {"package": scorer, "version": "1.0"}
    return identity


def _run(root: Path, name: str, summary: dict[str, Any]) -> None:
    """A finished run of one eval stage `eval`, as `t3rl run` leaves it."""
    path = root / name / "20260101-000000"
    (path / "stages" / "eval").mkdir(parents=True)
    (path / "config.yaml").write_text(yaml.safe_dump({"name": name, "stages": {"eval": {}}}))
    (path / "stages" / "eval" / "summary.json").write_text(json.dumps(summary))
    state = {"version": 1, "stages": {"eval": {"status": "succeeded"}}}
    (path / "state.json").write_text(json.dumps(state))


def _listed(root: Path, metric: str, capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, Any]]:
    assert list_runs(root, metric=metric, as_json=True) == 0
    return {run["run"].split("/")[0]: run["evals"][0] for run in json.loads(capsys.readouterr().out)}


@pytest.mark.parametrize("key", JSON_EVAL_KEYS)
def test_a_metric_named_like_a_key_of_the_listing_keeps_its_value_and_the_rows(
    key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`t3rl runs --json` keyed each eval's number by the metric's name beside its own keys (`stage`,
    `tasks`, `other_benchmark`): `--metric tasks` over a summary holding a top-level `tasks` number (one
    written by another tool, or a newer t3rl) had the number written over by the count, `--metric stage`
    the stage's name by the number. Now the keys are declared (runs.JSON_EVAL_KEYS) and the metric's name
    is a value: every key of the listing, used as a metric name, keeps both."""
    _run(tmp_path, "a", {"overall": {"accuracy": 0.5, "tasks": 4}, key: 7})
    entry = _listed(tmp_path, key, capsys)["a"]
    assert list(entry) == list(JSON_EVAL_KEYS), entry
    assert entry["stage"] == "eval" and entry["metric"] == key and entry["value"] == 7, entry


def test_one_metric_name_from_two_scorers_says_which_scorer_measured_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs' `overall.accuracy`, one scored by bfcl-eval, one by t3rl's own checker, were two rows of
    the same key: a script pivoting on it set them side by side, the scorer said nowhere in the JSON.
    Now each number carries the identity the summary records (null for a summary older than
    identities), and `other_benchmark` names what differs from the listing's reference."""
    _run(tmp_path, "a", {"overall": {"accuracy": 0.5, "tasks": 4}, "identity": _identity("bfcl-eval")})
    _run(tmp_path, "b", {"overall": {"accuracy": 0.9, "tasks": 4}, "identity": _identity("t3rl")})
    _run(tmp_path, "c", {"overall": {"accuracy": 0.7, "tasks": 4}, "identity": _identity("bfcl-eval")})
    _run(tmp_path, "old", {"overall": {"accuracy": 0.6, "tasks": 4}})
    evals = _listed(tmp_path, "overall.accuracy", capsys)
    assert {name: e["identity"]["scorer"]["package"] for name, e in evals.items() if e["identity"]} == {
        "a": "bfcl-eval",
        "b": "t3rl",
        "c": "bfcl-eval",
    }
    assert evals["old"]["identity"] is None
    assert evals["a"]["other_benchmark"] == [] and evals["b"]["other_benchmark"][0].startswith("scorer:")


# ------------------------------------------------ a rate outside [0, 1]: another scale, not a rate of 7


def _summary() -> dict[str, Any]:
    scores = [EpisodeScore(f"t{i}", "c", i % 2 == 0, float(i), 0.5) for i in range(4) for _ in range(2)]
    return summarize(scores, ks=[1, 2])


def test_the_declared_rates_are_what_an_eval_counts_and_each_lies_in_0_1() -> None:
    """The declaration agrees with the eval: every rate a block counts tasks for (tasks_scored) is a
    rate by metrics.is_rate, and its value lies in [0, 1]; the block's other numbers are not rates."""
    block = _summary()["overall"]
    assert {name for name in block if is_rate(name)} == set(block[TASKS_SCORED])
    assert all(0 <= block[name] <= 1 for name in block[TASKS_SCORED])


@pytest.mark.parametrize("value", [7.0, 50, -0.25, 1.0001])
def test_a_rate_outside_0_1_is_named_never_ranked(
    value: float, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A summary whose accuracy is 7.0 (hand-edited, another tool's, or a rate in percent: 50 for 0.5)
    was listed as `7.000 (n=4)`, put beside 0.500 by `runs diff` as +6.500 and ranked best by a sweep.
    Now every declared rate is read in [0, 1] by the one reader of a summary's number (read_metric),
    named when outside; a mean reward or a count outside [0, 1] is read as before."""
    summary = _summary()
    for name in [n for n in summary["overall"] if is_rate(n)]:
        edited = copy.deepcopy(summary)
        edited["overall"][name] = value
        with pytest.raises(UnreadableMetric, match=r"outside a rate's \[0, 1\]"):
            read_metric(edited, f"overall.{name}")
    edited = copy.deepcopy(summary)
    edited["overall"]["reward"] = value
    assert read_metric(edited, "overall.reward") == value
    assert read_metric(summary, "overall.tasks") == 4
    edited["overall"]["accuracy"] = value
    _run(tmp_path, "a", edited)
    assert _listed(tmp_path, "overall.accuracy", capsys)["a"]["value"] is None


# ------------------------------------------------ an engine setting that changes what answers, recorded


ENGINE_CONFIGS = {"sglang": SGLangEngineConfig, "hf": HFEngineConfig, "reference": ReferenceEngineConfig}
# Per engine field, another valid value (the default's neighbour).
OTHER = {
    "url": "http://127.0.0.1:31000",
    "api_key": "env:OTHER_KEY",
    "health_timeout_s": 20.0,
    "concurrency": 2,
    "timeout_s": 60.0,
    "max_attempts": 5,
    "backoff_s": 2.0,
    "model_path": "/models/other",
    "device": "cuda:1",
    "dtype": "bfloat16",
    "faults": {"malformed_json": 0.5},
    "seed": 7,
    "latency_s": 0.5,
}


def test_every_engine_setting_is_declared() -> None:
    """A new engine setting cannot be forgotten: every field of each built-in engine's config is
    declared in compared.ENGINES (recorded in the summary's model, or why not)."""
    assert set(ENGINE_CONFIGS) == set(ENGINES)
    for name, config in ENGINE_CONFIGS.items():
        assert set(config.model_fields) == set(ENGINES[name]), name


@pytest.mark.parametrize(
    ("engine", "field"),
    [(name, field) for name, fields in ENGINES.items() for field in fields if field != "name"],
)
def test_an_engine_setting_changes_the_model_record_exactly_when_declared_so(engine: str, field: str) -> None:
    """Two evals of the HF engine at float32 and bfloat16 (or on cpu and cuda), or of the reference
    policy with injected faults and without, recorded one model (its path, or 'scripted reference
    policy'): `t3rl runs diff` said nothing of it. Now each setting declared `model` is in the summary's
    model, so `runs diff` shows it as the model it compares across; a setting declared not compared
    changes nothing."""
    config = ENGINE_CONFIGS[engine]
    base = config()
    other = config.model_validate({field: OTHER[field]})
    served = {"served_model": "/models/m"}
    before, after = model_record(base, served, None), model_record(other, served, None)
    shown = across({"model": before}, {"model": after})  # what runs diff shows of the two
    if ENGINES[engine][field] == "model":
        assert len(shown) == 1 and shown[0].startswith("model:"), (field, shown)
    else:
        assert shown == [], (field, shown)


# ------------------------------------------------ a summary a newer t3rl wrote, read by this one


@pytest.mark.parametrize("written", [DEFINITION_VERSION + 1, DEFINITION_VERSION + 5])
def test_numbers_a_newer_t3rl_defined_are_named_never_read_by_this_ones_definitions(
    written: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two summaries a newer t3rl wrote under another metric definition (its `metric.version` raised:
    accuracy over episodes, say) were listed, diffed and ranked by this t3rl as its own numbers, their
    intervals and published verdicts by its own definitions (the identity differs only from this t3rl's
    own summaries). Now the one reader of a summary's number refuses a version past DEFINITION_VERSION,
    naming both; this version's, an older one's and a summary recording none read as before."""
    summary = _summary()
    summary["identity"] = {"metric": {"version": written}}
    with pytest.raises(UnreadableMetric, match=f"metric definition version {written}, a newer t3rl's"):
        read_metric(summary, "overall.accuracy")
    _run(tmp_path, "newer", summary)
    assert _listed(tmp_path, "overall.accuracy", capsys)["newer"]["value"] is None
    for readable in (DEFINITION_VERSION, DEFINITION_VERSION - 1, None, "2"):
        summary["identity"] = {"metric": {"version": readable}}
        assert read_metric(summary, "overall.accuracy") == summary["overall"]["accuracy"]
    assert METRIC_DEFINITION["version"] == DEFINITION_VERSION  # what an eval records is what it reads
